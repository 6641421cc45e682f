//! The acknowledgements settled in one burst of events leave as one consumer call (one broker
//! command), counted by `ruststream_settlement_commands_total`; each message still counts in
//! `ruststream_settlement_calls_total`. A binary of its own: a recorder is installed once per
//! process.

use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use ruststream::message::Message;
use ruststream::HandlerOutcome;
use ruststream_pulsar::metric;
use ruststream_pulsar::testing::TestApp;
use ruststream_tests::scenario::{app, shared, Plan, Script};

/// The counters so far: the debugging recorder's snapshot takes what counters gained since
/// the last one, so the totals are kept here.
#[derive(Default)]
struct Totals(Vec<(metrics_util::CompositeKey, u64)>);

impl Totals {
    /// Add what the counters gained since the last snapshot.
    fn update(&mut self, snapshotter: &Snapshotter) {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            if let (MetricKind::Counter, DebugValue::Counter(n)) = (key.kind(), value) {
                match self.0.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, total)) => *total += n,
                    None => self.0.push((key, n)),
                }
            }
        }
    }

    /// The sum of counter `name` over the series with all of `labels`.
    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.0
            .iter()
            .filter(|(key, _)| key.key().name() == name)
            .filter(|(key, _)| {
                labels.iter().all(|(k, v)| {
                    key.key()
                        .labels()
                        .any(|label| label.key() == *k && label.value() == *v)
                })
            })
            .map(|(_, n)| n)
            .sum()
    }
}

/// One thread: the twelve messages are all stored before the driver runs again, so they are
/// one burst, whatever the machine's speed.
#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_acknowledgements_is_one_command_and_a_lone_one_is_sent_at_once() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this test binary");
    // Job 1 is retried on its first two deliveries; every other delivery is acknowledged.
    let script = Script::by_job(|id, attempt| {
        if id == 1 && attempt < 2 {
            HandlerOutcome::retry()
        } else {
            HandlerOutcome::ack()
        }
    });
    let tb = TestApp::with_state(
        app(|b| {
            b.include(shared);
        }),
        Plan::new(script),
    )
    .on(Arc::new(ruststream_tokio::TokioRuntime::current()))
    .await
    .unwrap();
    let h = ("handler", "shared");
    let mut totals = Totals::default();
    let acked = |totals: &Totals| {
        (
            totals.counter(metric::CALLS, &[h, ("call", "ack"), ("result", "ok")]),
            totals.counter(metric::COMMANDS, &[h, ("call", "ack")]),
        )
    };

    // A lone message, its acknowledgement alone and at once: no time passes.
    tb.publish(Message::json("jobs", &serde_json::json!({ "id": 100 })).unwrap())
        .await
        .unwrap();
    totals.update(&snapshotter);
    assert_eq!(acked(&totals), (1, 1));

    // Twelve stored before the driver runs: the eleven acknowledgements leave as one command,
    // job 1's negative acknowledgement as another. Job 1 comes back at once, alone: its
    // retry and then its acknowledgement leave alone, as nothing else is ready then.
    for id in 1..=12 {
        tb.pulsar()
            .publish(Message::json("jobs", &serde_json::json!({ "id": id })).unwrap())
            .unwrap();
    }
    tb.settle().await.unwrap();
    totals.update(&snapshotter);
    assert_eq!(acked(&totals), (1 + 11 + 1, 1 + 1 + 1));
    assert_eq!(
        totals.counter(metric::CALLS, &[h, ("call", "nack"), ("result", "ok")]),
        2
    );
    assert_eq!(totals.counter(metric::COMMANDS, &[h, ("call", "nack")]), 2);
    // Every message was acknowledged exactly once at the broker.
    let backlog = tb.pulsar().backlog("jobs", "shared").unwrap();
    assert_eq!(backlog, Some(0));
    tb.stop().await;
}
