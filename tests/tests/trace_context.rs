//! W3C trace context from publish to consume (`ruststream-pulsar`'s `otel` feature): a handler
//! of service A publishes inside its delivery span; the delivery span of the handler of
//! service B that consumes the message has A's span as its parent, in A's trace. Checked with
//! an in-memory span exporter, in process and on pulsar-lite started here on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use ruststream::runtime::Runtime;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::{LiveApp, TestApp};
use ruststream_test_brokers::LiveBroker;
use ruststream_tests::scenario::{app, forwarder, outbox, ret, Job, Plan, Script};
use tracing_subscriber::layer::SubscriberExt;

/// The delivery span of `handler` among `spans`.
fn delivery<'a>(spans: &'a [SpanData], handler: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| {
            s.name == "delivery"
                && s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "handler" && kv.value.as_str() == handler)
        })
        .unwrap_or_else(|| panic!("no delivery span of `{handler}` in {spans:#?}"))
}

fn assert_continued(spans: &[SpanData]) {
    let a = delivery(spans, "forwarder");
    let b = delivery(spans, "outbox");
    assert_eq!(
        b.span_context.trace_id(),
        a.span_context.trace_id(),
        "B's delivery is in A's trace"
    );
    assert_eq!(
        b.parent_span_id,
        a.span_context.span_id(),
        "B's delivery span is a child of A's"
    );
}

#[test]
fn a_consumer_delivery_span_continues_the_publishers_trace() {
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
    let mount = |b: &mut ruststream_pulsar::PulsarBroker<Plan>| {
        b.include(forwarder);
        b.include(outbox);
    };

    // In process.
    rt.block_on(async {
        let tb = TestApp::with_state(
            app(mount),
            Plan::new(Script::always(ret(HandlerOutcome::ack()))),
        )
        .await
        .expect("starts");
        tb.publish_to("jobs-fwd", &Job { id: 1 }).await.unwrap();
        assert_eq!(tb.calls_of("outbox").len(), 1);
        tb.stop().await;
    });
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().unwrap();
    assert_continued(&spans);
    exporter.reset();

    // On a real broker.
    let broker = LiveBroker::pulsar_lite_blocking().unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        let runtime: Arc<dyn Runtime> = Arc::new(ruststream_tokio::TokioRuntime::new(
            tokio::runtime::Handle::current(),
        ));
        let live = LiveApp::with_state(
            app(mount),
            Plan::new(Script::always(ret(HandlerOutcome::ack()))),
            runtime,
        )
        .url(broker.url())
        .namespace("public/trace-context")
        .await
        .expect("connects");
        live.publish_raw("jobs-fwd", b"{\"id\":2}".to_vec(), vec![], None)
            .await
            .unwrap();
        assert!(
            live.wait_until(Duration::from_secs(20), |l| !l
                .calls_of("outbox")
                .is_empty())
                .await,
            "the forwarded message arrived"
        );
        let traceparent = live.calls_of("outbox")[0]
            .property("traceparent")
            .map(str::to_owned);
        live.stop().await;
        let traceparent = traceparent.expect("the forwarded message carries traceparent");
        assert!(traceparent.starts_with("00-"), "{traceparent}");
    });
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().unwrap();
    assert_continued(&spans);
}
