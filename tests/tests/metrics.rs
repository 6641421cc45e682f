//! The counters a service can export, read through a debugging recorder.

use ruststream::message::Message;
use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use ruststream::HandlerOutcome;
use ruststream_pulsar::metric;
use ruststream_pulsar::testing::TestApp;
use ruststream_tests::scenario::{app, no_timeout, ret, shared, Plan, Script, Step};

fn counter(
    snapshot: &[(metrics_util::CompositeKey, DebugValue)],
    name: &str,
    labels: &[(&str, &str)],
) -> u64 {
    snapshot
        .iter()
        .filter(|(key, _)| key.kind() == MetricKind::Counter && key.key().name() == name)
        .filter(|(key, _)| {
            labels.iter().all(|(k, v)| {
                key.key()
                    .labels()
                    .any(|label| label.key() == *k && label.value() == *v)
            })
        })
        .map(|(_, value)| match value {
            DebugValue::Counter(n) => *n,
            _ => 0,
        })
        .sum()
}

/// Every metric recorded so far, by key.
fn taken(
    snapshotter: &metrics_util::debugging::Snapshotter,
) -> Vec<(metrics_util::CompositeKey, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (key, value))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_and_calls_are_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");

    let script = Script::new(
        [ret(HandlerOutcome::retry()), Step::Panic],
        ret(HandlerOutcome::ack()),
    );
    let tb = TestApp::with_state(
        app(|b| {
            b.include(shared);
        }),
        Plan::new(script),
    )
    .on(Arc::new(ruststream_tokio::TokioRuntime::current()))
    .await
    .unwrap();
    tb.publish(Message::json("jobs", &serde_json::json!({ "id": 1 })).unwrap())
        .await
        .unwrap();
    tb.advance(ruststream_tests::scenario::ACK_TIMEOUT * 2)
        .await
        .unwrap();
    tb.stop().await;

    let snapshot = taken(&snapshotter);
    let h = ("handler", "shared");
    assert_eq!(counter(&snapshot, metric::DELIVERIES, &[h]), 3);
    assert_eq!(
        counter(&snapshot, metric::OUTCOMES, &[h, ("outcome", "retry")]),
        1
    );
    assert_eq!(
        counter(&snapshot, metric::OUTCOMES, &[h, ("outcome", "panicked")]),
        1
    );
    assert_eq!(
        counter(&snapshot, metric::OUTCOMES, &[h, ("outcome", "ack")]),
        1
    );
    assert_eq!(
        counter(
            &snapshot,
            metric::CALLS,
            &[h, ("call", "nack"), ("result", "ok")]
        ),
        1
    );
    assert_eq!(
        counter(
            &snapshot,
            metric::CALLS,
            &[h, ("call", "ack"), ("result", "ok")]
        ),
        1
    );
    // One duration per handler call (the panic included), on the virtual clock: no time
    // passes inside these handlers.
    let durations: Vec<f64> = snapshot
        .iter()
        .filter(|(key, _)| {
            key.kind() == MetricKind::Histogram && key.key().name() == metric::DURATION
        })
        .flat_map(|(_, value)| match value {
            DebugValue::Histogram(samples) => samples.iter().map(|s| s.into_inner()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(durations, [0.0, 0.0, 0.0]);
    // Nothing is running once the app has stopped.
    let in_flight: Vec<f64> = snapshot
        .iter()
        .filter(|(key, _)| key.kind() == MetricKind::Gauge && key.key().name() == metric::IN_FLIGHT)
        .filter_map(|(_, value)| match value {
            DebugValue::Gauge(v) => Some(v.into_inner()),
            _ => None,
        })
        .collect();
    assert_eq!(in_flight, [0.0]);

    // A message the client cannot read, on a subscription without a dead-letter topic: counted
    // as unreadable, and as a rejected delivery.
    let tb = TestApp::with_state(
        app(|b| {
            b.include(no_timeout);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(Arc::new(ruststream_tokio::TokioRuntime::current()))
    .await
    .unwrap();
    tb.pulsar()
        .publish_unreadable(Message::new("jobs-nt", b"\xff".to_vec()), "corrupt")
        .unwrap();
    tb.settle().await.unwrap();
    tb.stop().await;
    let snapshot = taken(&snapshotter);
    let h = ("handler", "no_timeout");
    assert_eq!(counter(&snapshot, metric::UNREADABLE, &[h]), 1);
    assert_eq!(
        counter(&snapshot, metric::OUTCOMES, &[h, ("outcome", "rejected")]),
        1
    );
}
