//! W3C trace context between two services (`rstream-pulsar`'s `otel` feature).
//!
//! Service A (`forwarder`) is asked to work inside a span of its caller and, from its handler,
//! publishes to service B (`outbox`), a separate app with its own connection and consumer. B's
//! delivery span must be a child of A's delivery span, in the trace A's caller started. Checked
//! with an in-memory span exporter, in process (two apps on one in-process Pulsar) and on
//! pulsar-lite started here on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use ruststream::message::Message;
use ruststream::runtime::Runtime;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::{LiveApp, TestApp};
use ruststream_test_brokers::LiveBroker;
use ruststream_tests::scenario::{app, forwarder, outbox, ret, Plan, Script};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// The finished span named `name` whose `handler` attribute is `handler` (any, if `None`).
fn span<'a>(spans: &'a [SpanData], name: &str, handler: Option<&str>) -> &'a SpanData {
    spans
        .iter()
        .find(|s| {
            s.name == name
                && handler.is_none_or(|h| {
                    s.attributes
                        .iter()
                        .any(|kv| kv.key.as_str() == "handler" && kv.value.as_str() == h)
                })
        })
        .unwrap_or_else(|| panic!("no span `{name}` of {handler:?} in {spans:#?}"))
}

/// B's delivery is a child of A's, and both are in `trace` (when given), A's delivery being
/// a child of `parent` (when given).
fn assert_b_continues_a(spans: &[SpanData], trace: Option<TraceId>, parent: Option<SpanId>) {
    let a = span(spans, "delivery", Some("forwarder"));
    let b = span(spans, "delivery", Some("outbox"));
    assert_eq!(
        b.span_context.trace_id(),
        a.span_context.trace_id(),
        "B's delivery is in A's trace"
    );
    assert_eq!(
        b.parent_span_id,
        a.span_context.span_id(),
        "B's delivery span is a child of A's delivery span"
    );
    if let Some(trace) = trace {
        assert_eq!(
            a.span_context.trace_id(),
            trace,
            "A continued its caller's trace"
        );
    }
    if let Some(parent) = parent {
        assert_eq!(
            a.parent_span_id, parent,
            "A's delivery is a child of its caller's span"
        );
    }
}

fn plan() -> Plan {
    Plan::new(Script::always(ret(HandlerOutcome::ack())))
}

#[test]
fn the_delivery_span_of_service_b_continues_the_trace_of_service_a() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("ruststream-tests")));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber here");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let service_a = || {
        app(|b| {
            b.include(forwarder);
        })
    };
    let service_b = || {
        app(|b| {
            b.include(outbox);
        })
    };

    // In process: two apps on one in-process Pulsar. The test's own publish carries no trace
    // context, so A's delivery starts the trace.
    rt.block_on(async {
        let a = TestApp::with_state(service_a(), plan())
            .await
            .expect("A starts");
        let b = TestApp::with_state(service_b(), plan())
            .alongside(&a)
            .await
            .expect("B starts");
        a.publish(Message::json("jobs-fwd", &ruststream_tests::scenario::Job { id: 1 }).unwrap())
            .await
            .unwrap();
        b.settle().await.unwrap();
        assert_eq!(a.calls_of("forwarder").len(), 1);
        assert_eq!(b.calls_of("outbox").len(), 1);
        assert!(
            b.calls_of("outbox")[0]
                .property("traceparent")
                .is_some_and(|t| t.starts_with("00-")),
            "what A published carries traceparent"
        );
        b.stop().await;
        a.stop().await;
    });
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().unwrap();
    assert_b_continues_a(&spans, None, None);
    exporter.reset();

    // On a real broker: two apps, each with its own client, connection and consumer. A is
    // asked to work inside a `checkout` span of its caller, published with A's publisher.
    let broker = LiveBroker::pulsar_lite_blocking().unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        let runtime: Arc<dyn Runtime> = Arc::new(ruststream_tokio::TokioRuntime::new(
            tokio::runtime::Handle::current(),
        ));
        let a = LiveApp::with_state(service_a(), plan(), runtime.clone())
            .url(broker.url())
            .namespace("public/trace-context")
            .await
            .expect("A connects");
        let b = LiveApp::with_state(service_b(), plan(), runtime)
            .url(broker.url())
            .namespace("public/trace-context")
            .await
            .expect("B connects");
        a.publish(Message::new("jobs-fwd", b"{\"id\":2}".to_vec()))
            .instrument(tracing::info_span!("checkout"))
            .await
            .expect("published");
        assert!(
            b.wait_until(Duration::from_secs(20), |l| !l
                .calls_of("outbox")
                .is_empty())
                .await,
            "B received what A forwarded"
        );
        let traceparent = b.calls_of("outbox")[0]
            .property("traceparent")
            .map(str::to_owned);
        b.stop().await;
        a.stop().await;
        let traceparent = traceparent.expect("what A published carries traceparent");
        assert!(traceparent.starts_with("00-"), "{traceparent}");
    });
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().unwrap();
    let checkout = span(&spans, "checkout", None);
    assert_b_continues_a(
        &spans,
        Some(checkout.span_context.trace_id()),
        Some(checkout.span_context.span_id()),
    );
}
