//! Orders, traced: each order's delivery, the message it publishes, and that message's delivery
//! appear as one trace in any OpenTelemetry collector (Jaeger, Tempo, the OpenTelemetry
//! Collector), exported over OTLP/HTTP.
//!
//! ```text
//! OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces \
//!     cargo run -p otlp -- --embedded --publish orders=examples/otlp/orders.jsonl
//! ```
//!
//! The endpoint, headers and timeout come from the standard `OTEL_EXPORTER_OTLP_*` variables
//! (default `http://localhost:4318/v1/traces`); the service name from `OTEL_SERVICE_NAME`,
//! else `orders`. Spans are sent in batches from the SDK's own thread, and the last batch is
//! flushed when the service stops.

use std::io::IsTerminal;
use std::process::ExitCode;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// An order as the shop publishes it.
#[derive(Debug, Deserialize)]
struct Order {
    id: u64,
}

/// What accepting an order publishes, for shipping.
#[derive(Debug, Serialize, Deserialize, Outgoing)]
#[outgoing(name = "orders-accepted")]
struct Accepted {
    order: u64,
}

/// Accepts an order and hands it to shipping; the published message carries this delivery's
/// trace (`traceparent`).
#[subscriber(PulsarSubscription::new("orders", "accept"))]
async fn accept(order: &Order, publisher: Publisher) -> HandlerOutcome {
    match publisher.publish(&Accepted { order: order.id }).await {
        Ok(_) => HandlerOutcome::ack(),
        Err(e) if e.is_retryable() => HandlerOutcome::retry(),
        Err(e) => {
            tracing::error!(error = %e, order = order.id, "cannot hand the order to shipping");
            HandlerOutcome::drop()
        }
    }
}

/// Ships an accepted order: its delivery span is a child of `accept`'s.
#[subscriber(PulsarSubscription::new("orders-accepted", "ship"))]
async fn ship(accepted: &Accepted) -> HandlerOutcome {
    tracing::info!(order = accepted.order, "shipped");
    HandlerOutcome::ack()
}

fn app() -> impl App<State = ()> {
    RustStream::new(AppInfo::new("orders", env!("CARGO_PKG_VERSION"))).with_broker(
        PulsarBroker::new("pulsar://127.0.0.1:6650"),
        |b| {
            b.include(accept);
            b.include(ship);
        },
    )
}

/// The OTLP pipeline: spans batched to the collector, tagged with the service's name.
fn tracer_provider() -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()?;
    let name = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "orders".to_owned());
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(name).build())
        .build())
}

fn main() -> ExitCode {
    let provider = match tracer_provider() {
        Ok(provider) => provider,
        Err(e) => {
            eprintln!("error: cannot set up the OTLP exporter: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Installed before the runner starts, so the runner keeps it: log lines to stderr under
    // `RUST_LOG` (default `info`), and every span to the collector.
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_filter(
                    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
                ),
        )
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("orders"))
                // Every span, including each message's `delivery` span (at DEBUG, so that logging
                // at INFO creates none); events at INFO and above.
                .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                    meta.is_span() || *meta.level() <= tracing::Level::INFO
                })),
        )
        .init();
    let code = ruststream_runner::on_runtime::tokio(app);
    if let Err(e) = provider.shutdown() {
        eprintln!("error: the last spans may not have reached the collector: {e}");
    }
    code
}
