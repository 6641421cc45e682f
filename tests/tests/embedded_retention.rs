//! The retention `run --embedded` runs on (`Retention::until_acknowledged`): a message is freed
//! once its subscription acknowledged it, and nothing a handler sees changes. Negatively
//! acknowledged, `retry_after` and dead-lettered messages come back whole; a `TestApp` keeps
//! every message by default, as tests read topics back.

use ruststream::message::Message;
use ruststream::{nonzero, HandlerOutcome};
use ruststream_pulsar::testing::TestApp;
use ruststream_pulsar::Retention;
use ruststream_tests::scenario::{app, dead_letters, shared, Job, Plan, Script, DELAY};

/// How many jobs each test publishes: more than a topic trims in one go (64 entries), so that
/// the freed records leave too.
const JOBS: u64 = 200;

/// Job ids by their fate: `% 4 == 1` retried once at once, `% 4 == 2` waits `DELAY` once, `% 4
/// == 3` always retried (dead-lettered at the third delivery), the others acknowledged.
fn script() -> std::sync::Arc<Script> {
    Script::by_job(|id, attempt| match (id % 4, attempt) {
        (1, 0) => HandlerOutcome::retry(),
        (2, 0) => HandlerOutcome::retry_after(DELAY),
        (3, _) => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    })
}

/// Start the scripted app with `retention`, publish the jobs and run until nothing is left.
async fn run(retention: Option<Retention>) -> TestApp {
    let builder = TestApp::with_state(
        app(|b| {
            b.include(shared)
                .max_attempts(nonzero!(3u32))
                .dead_letter("jobs-dlq");
            b.include(dead_letters);
        }),
        Plan::new(script()),
    );
    let builder = match retention {
        Some(retention) => builder.retention(retention),
        None => builder,
    };
    let tb = builder.await.expect("the app starts");
    for id in 0..JOBS {
        tb.pulsar()
            .publish(Message::json("jobs", &Job { id }).expect("encodes"))
            .expect("published");
    }
    tb.settle().await.expect("settles");
    tb.advance(DELAY).await.expect("the waits fire");
    tb
}

/// What every test checks the handlers saw, whatever the retention: each job with its payload
/// on every delivery, as often as the script says.
fn check_calls(tb: &TestApp) {
    let calls = tb.calls_of("shared");
    let mut deliveries = vec![0u32; JOBS as usize];
    for call in &calls {
        let job: Job = call.payload().expect("every delivery carries its job");
        deliveries[job.id as usize] += 1;
    }
    for (id, count) in deliveries.iter().enumerate() {
        let expected = match id % 4 {
            0 => 1,
            1 | 2 => 2,
            _ => 3,
        };
        assert_eq!(*count, expected, "deliveries of job {id}");
    }
    let dead: Vec<Job> = tb
        .calls_of("dead_letters")
        .iter()
        .map(|c| c.payload().expect("the dead-letter copy carries its job"))
        .collect();
    assert_eq!(dead.len() as u64, JOBS / 4);
    assert!(dead.iter().all(|job| job.id % 4 == 3), "{dead:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn until_acknowledged_frees_every_settled_message_and_redeliveries_come_back_whole() {
    let tb = run(Some(Retention::until_acknowledged())).await;
    check_calls(&tb);
    assert_eq!(tb.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    // Every job was acknowledged (or dead-lettered, which acknowledges it): all of them are
    // freed, and most records are gone (the last few leave with the next ones, as a topic
    // drops its freed records 64 or more at a time).
    let jobs = tb.topic("jobs");
    assert!(jobs.len() < 64, "{} of {JOBS} records kept", jobs.len());
    assert!(jobs.iter().all(|m| m.payload.is_empty()), "{jobs:?}");
    // The copies were acknowledged by their reader: freed too.
    let dlq = tb.topic("jobs-dlq");
    assert!(
        dlq.iter()
            .all(|m| m.payload.is_empty() && m.properties.is_empty()),
        "{dlq:?}"
    );
    tb.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_test_app_keeps_every_message_by_default() {
    let tb = run(None).await;
    check_calls(&tb);
    let jobs = tb.topic("jobs");
    assert_eq!(jobs.len() as u64, JOBS);
    for (id, message) in (0..).zip(&jobs) {
        assert_eq!(message.decode::<Job>().expect("kept whole"), Job { id });
    }
    let dlq = tb.topic("jobs-dlq");
    assert_eq!(dlq.len() as u64, JOBS / 4);
    assert!(dlq.iter().all(|m| m.decode::<Job>().is_ok()));
    tb.stop().await;
}
