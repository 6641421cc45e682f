//! The built-ins are layers: a service replaces the metrics layer with its own and drops the
//! tracing one, and what they did stops while the rest goes on. (Its own test binary: it
//! installs the process-wide metrics recorder and tracing subscriber.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use ruststream::message::Message;
use ruststream::middleware::{Delivery, End, Flow, Layer};
use ruststream::HandlerOutcome;
use ruststream_pulsar::layers::{Metrics, Tracing};
use ruststream_pulsar::metric;
use ruststream_pulsar::testing::TestApp;
use ruststream_pulsar::PulsarBroker;
use ruststream_tests::captured_log::CapturedLog;
use ruststream_tests::scenario::*;

/// A service's own metrics: deliveries and how they ended, counted its way.
#[derive(Clone, Default)]
struct Counting {
    deliveries: Arc<AtomicU64>,
    completed: Arc<AtomicU64>,
}

impl Layer for Counting {
    fn before(&self, _: &mut Delivery<'_>) -> Flow {
        self.deliveries.fetch_add(1, Ordering::Relaxed);
        Flow::Next
    }

    fn completed(&self, _: &Delivery<'_>, _: &End<'_>) {
        self.completed.fetch_add(1, Ordering::Relaxed);
    }
}

/// The counters recorded since the last call (a snapshot takes what it reads), summed over
/// their labels, by name.
fn counters(snapshotter: &Snapshotter) -> std::collections::HashMap<String, u64> {
    let mut sums = std::collections::HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if let (MetricKind::Counter, DebugValue::Counter(n)) = (key.kind(), value) {
            *sums.entry(key.key().name().to_owned()).or_default() += n;
        }
    }
    sums
}

/// Runs `shared` over one job that is retried once, then acknowledged: two deliveries.
async fn two_deliveries(broker: impl FnOnce(PulsarBroker<Plan>) -> PulsarBroker<Plan>) {
    let script = Script::new([ret(HandlerOutcome::retry())], ret(HandlerOutcome::ack()));
    let tb = TestApp::with_state(
        layered_app(
            |app| app,
            broker,
            |b| {
                b.include(shared);
            },
        ),
        Plan::new(script),
    )
    .await
    .unwrap();
    tb.publish(Message::json("jobs", &Job { id: 1 }).unwrap())
        .await
        .unwrap();
    assert_eq!(
        tb.calls_of("shared").len(),
        2,
        "retried once, then acknowledged"
    );
    tb.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_layer_is_replaced_and_the_tracing_one_dropped() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this binary");
    let captured = CapturedLog::default();
    captured.install("ruststream_driver=debug,ruststream_pulsar=debug");

    // The built-ins as they come: the deliveries counted, each call in its span, logged.
    two_deliveries(|broker| broker).await;
    let counted = counters(&snapshotter);
    assert_eq!(counted.get(metric::DELIVERIES), Some(&2), "{counted:?}");
    assert_eq!(counted.get(metric::OUTCOMES), Some(&2), "{counted:?}");
    let log = captured.take();
    assert!(log.contains("delivery{handler=\"shared\""), "{log}");
    assert!(log.contains("handled"), "{log}");

    // The metrics layer replaced by the service's own, the tracing one dropped.
    let own = Counting::default();
    let layer = own.clone();
    two_deliveries(|broker| {
        broker.builtins(|builtins| builtins.without::<Tracing>().replace::<Metrics>(layer))
    })
    .await;
    assert_eq!(
        own.deliveries.load(Ordering::Relaxed),
        2,
        "the own layer counts"
    );
    assert_eq!(own.completed.load(Ordering::Relaxed), 2);
    let counted = counters(&snapshotter);
    let of = |name: &str| counted.get(name).copied().unwrap_or(0);
    assert_eq!(
        of(metric::DELIVERIES),
        0,
        "the replaced layer counts no more: {counted:?}"
    );
    assert_eq!(of(metric::OUTCOMES), 0, "{counted:?}");
    assert_eq!(
        of(metric::CALLS),
        2,
        "the driver's own counters go on (one nack, one ack): {counted:?}"
    );
    let log = captured.take();
    assert!(
        !log.contains("delivery{"),
        "no delivery span without the layer:\n{log}"
    );
    assert!(
        !log.contains("handled"),
        "no line of the dropped layer:\n{log}"
    );
    assert!(
        log.contains("settled"),
        "the driver's own lines go on:\n{log}"
    );
}
