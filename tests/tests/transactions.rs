//! Transactional registrations on the in-process Pulsar, on the virtual clock: a handler's
//! publishes become visible exactly when its message is acknowledged (commit), never when it
//! ends otherwise (abort: retry, retry_after, panic), never when the broker times the
//! transaction out, and never when the service dies mid-transaction. Run on tokio, async-std
//! and smol.

use std::sync::Arc;
use std::time::Duration;

use ruststream::message::Message;
use ruststream::runtime::Spawn;
use ruststream::transaction::TransactionPolicy;
use ruststream::HandlerOutcome;
use ruststream::{ManualClock, Timer};
use ruststream_pulsar::testing::TestApp;
use ruststream_tests::scenario::*;

/// The transaction timeout of these tests.
const TXN_TIMEOUT: Duration = Duration::from_secs(5);

/// A job for `tx-in`.
fn job(id: u64) -> Message {
    Message::new("tx-in", format!("{{\"id\":{id}}}").into_bytes())
}

/// The job ids `tx_reader` saw, in order: what was committed to `tx-out`.
fn committed(app: &TestApp) -> Vec<u64> {
    (app.calls_of("tx_reader").iter())
        .map(|c| c.payload::<Job>().expect("a job").id)
        .collect()
}

async fn start(script: Arc<Script>, spawn: Arc<dyn Spawn>) -> TestApp {
    TestApp::with_state(
        app(|b| {
            b.include(tx_forwarder)
                .transactional_with(TransactionPolicy::new().timeout(TXN_TIMEOUT));
            b.include(tx_reader);
        }),
        Plan::new(script),
    )
    .on(spawn)
    .await
    .expect("the app starts")
}

/// `ack` commits: each job's copy is seen once, and the input is acknowledged.
async fn an_ack_commits_the_publishes_with_the_acknowledgement(spawn: Arc<dyn Spawn>) {
    let app = start(Script::always(ret(HandlerOutcome::ack())), spawn).await;
    for id in 1..=3 {
        app.publish(job(id)).await.expect("published");
    }
    app.settle().await.unwrap();
    assert_eq!(committed(&app), [1, 2, 3]);
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    assert_eq!(
        app.pulsar().backlog("tx-out", "tx-reader").unwrap(),
        Some(0)
    );
    app.stop().await;
}

/// `retry` aborts: the first attempt's copy is never seen; the second attempt's is, once.
async fn a_retried_handler_s_publishes_are_never_seen(spawn: Arc<dyn Spawn>) {
    let script = Script::by_job(|_, attempt| match attempt {
        0 => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    });
    let app = start(script, spawn).await;
    app.publish(job(7)).await.expect("published");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(60)).await.unwrap();
    let calls = app.calls_of("tx_forwarder");
    assert_eq!(calls.len(), 2, "retried once: {calls:?}");
    assert_eq!(committed(&app), [7], "exactly once");
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    app.stop().await;
}

/// A handler that publishes and then waits with `retry_after` twice publishes exactly once in
/// the end, at the time it finally acknowledges.
async fn a_retry_after_publishes_once_when_it_finally_acks(spawn: Arc<dyn Spawn>) {
    let script = Script::by_job(|_, attempt| match attempt {
        0 | 1 => HandlerOutcome::retry_after(DELAY),
        _ => HandlerOutcome::ack(),
    });
    let app = start(script, spawn).await;
    app.publish(job(3)).await.expect("published");
    app.settle().await.unwrap();
    assert_eq!(committed(&app), Vec::<u64>::new(), "nothing while it waits");
    app.advance(DELAY).await.unwrap();
    assert_eq!(
        committed(&app),
        Vec::<u64>::new(),
        "nothing after the first wait"
    );
    app.advance(DELAY).await.unwrap();
    assert_eq!(committed(&app), [3], "once, at the acknowledgement");
    let calls = app.calls_of("tx_forwarder");
    assert_eq!(calls.len(), 3);
    let out = app.calls_of("tx_reader");
    assert_eq!(
        out[0].at(),
        calls[2].at(),
        "seen as the third attempt acknowledges"
    );
    app.advance(Duration::from_secs(60)).await.unwrap();
    assert_eq!(committed(&app), [3], "and never again");
    app.stop().await;
}

/// A panic aborts: its copy is never seen; the next attempt's is.
async fn a_panicking_handler_s_publishes_are_never_seen(spawn: Arc<dyn Spawn>) {
    let script = Script::new([Step::Panic], ret(HandlerOutcome::ack()));
    let app = start(script, spawn).await;
    app.publish(job(5)).await.expect("published");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(60)).await.unwrap();
    assert_eq!(
        app.calls_of("tx_forwarder").len(),
        2,
        "panicked, then acknowledged"
    );
    assert_eq!(committed(&app), [5], "exactly once");
    app.stop().await;
}

/// Let the app's tasks run until what fired has been seen, time standing still (a held
/// handler keeps `settle` from returning).
async fn turns(clock: &ManualClock) {
    for _ in 0..100_000 {
        if clock.unobserved() == 0 {
            break;
        }
        ruststream::runtime::yield_now().await;
    }
    for _ in 0..1_000 {
        ruststream::runtime::yield_now().await;
    }
}

/// Let `d` pass while a handler is held: the clock moves from deadline to deadline, and at
/// each the app's tasks take their turns, without waiting for the handler in flight.
async fn pass_while_held(app: &TestApp, d: Duration) {
    let clock = app.clock();
    let target = clock.now().saturating_add(d);
    loop {
        turns(clock).await;
        match clock.next_deadline().filter(|at| *at <= target) {
            Some(at) => clock.advance_to(at),
            None => break,
        }
    }
    clock.advance_to(target);
    turns(clock).await;
}

/// Let the app's tasks run, time standing still, until job 1 waits at its gate (at most 10 s
/// of wall time: the tasks of the other tests share the executors).
async fn until_job_one_is_held(script: &Script) {
    let started = std::time::Instant::now();
    while !script.gate_taken() && started.elapsed() < Duration::from_secs(10) {
        ruststream::runtime::yield_now().await;
    }
    assert!(script.gate_taken(), "job 1 never reached its gate");
}

/// A handler that runs past the transaction timeout cannot commit: the broker aborted its
/// transaction, its copy is never seen, and the message comes back and is forwarded once.
async fn a_transaction_that_times_out_is_never_seen(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let gate = script.with_gate();
    let app = start(script.clone(), spawn).await;
    app.pulsar().publish(job(1)).expect("published");
    until_job_one_is_held(&script).await;
    pass_while_held(&app, TXN_TIMEOUT + Duration::from_secs(1)).await;
    assert_eq!(committed(&app), Vec::<u64>::new());
    gate.send(()).expect("job 1 still waits");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(60)).await.unwrap();
    let calls = app.calls_of("tx_forwarder");
    assert_eq!(
        calls.len(),
        2,
        "its commit failed, so it came back: {calls:?}"
    );
    assert_eq!(committed(&app), [1], "exactly once");
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    app.stop().await;
}

/// The forwarding service, as another instance beside `other`.
async fn start_beside(script: Arc<Script>, other: &TestApp, spawn: Arc<dyn Spawn>) -> TestApp {
    TestApp::with_state(
        app(|b| {
            b.include(tx_forwarder)
                .transactional_with(TransactionPolicy::new().timeout(TXN_TIMEOUT));
        }),
        Plan::new(script),
    )
    .alongside(other)
    .on(spawn)
    .await
    .expect("the instance starts")
}

/// A service killed mid-transaction, after it published: what it published is never seen,
/// and consumers of the output wait until the broker aborts the open transaction at its
/// timeout; the instance started after it forwards the job once.
async fn a_crash_mid_transaction_publishes_nothing(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let _gate = script.with_gate();
    // The reader of `tx-out` outlives both instances of the forwarder.
    let reader = TestApp::with_state(
        app(|b| {
            b.include(tx_reader);
        }),
        Plan::new(script.clone()),
    )
    .on(spawn.clone())
    .await
    .expect("the reader starts");
    let first = start_beside(script.clone(), &reader, spawn.clone()).await;
    reader.pulsar().publish(job(1)).expect("published");
    until_job_one_is_held(&script).await;
    first.kill().await.unwrap();
    let second = start_beside(script.clone(), &reader, spawn).await;
    reader.settle().await.unwrap();
    assert_eq!(
        second.calls_of("tx_forwarder").len(),
        1,
        "the second instance handled job 1"
    );
    assert_eq!(
        committed(&reader),
        Vec::<u64>::new(),
        "the dead instance's open transaction holds the output back"
    );
    reader
        .advance(TXN_TIMEOUT + Duration::from_secs(1))
        .await
        .unwrap();
    let seen = committed(&reader);
    assert_eq!(seen, [1], "forwarded exactly once: {seen:?}");
    assert_eq!(reader.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    second.stop().await;
    reader.stop().await;
}

/// Out of attempts, the dead-letter copy commits with the acknowledgement; what the handler
/// published on its attempts is never seen.
async fn a_dead_letter_copy_commits_with_the_acknowledgement(spawn: Arc<dyn Spawn>) {
    let app = TestApp::with_state(
        app(|b| {
            b.include(tx_forwarder)
                .max_attempts(std::num::NonZeroU32::new(2).expect("not zero"))
                .dead_letter("tx-dlq")
                .transactional();
            b.include(tx_reader);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::retry()))),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    app.publish(job(9)).await.expect("published");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(60)).await.unwrap();
    assert_eq!(app.calls_of("tx_forwarder").len(), 2, "two attempts");
    assert_eq!(
        committed(&app),
        Vec::<u64>::new(),
        "no attempt's publish seen"
    );
    let dead = app.topic("tx-dlq");
    assert_eq!(dead.len(), 1, "one copy: {dead:?}");
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    app.stop().await;
}

/// `retry_later`: the copy to the retry topic commits with the acknowledgement, and the
/// attempt's own publish is aborted; the attempt from the retry topic forwards the job once.
async fn a_retry_later_copy_commits_with_the_acknowledgement(spawn: Arc<dyn Spawn>) {
    let script = Script::by_job(|_, attempt| match attempt {
        0 => HandlerOutcome::retry_later(DELAY),
        _ => HandlerOutcome::ack(),
    });
    let app = TestApp::with_state(
        app(|b| {
            b.include(tx_forwarder)
                .retry_topic("tx-in-retry")
                .transactional();
            b.include(tx_reader);
        }),
        Plan::new(script),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    app.publish(job(4)).await.expect("published");
    app.settle().await.unwrap();
    assert_eq!(committed(&app), Vec::<u64>::new(), "nothing while it waits");
    assert_eq!(app.topic("tx-in-retry").len(), 1, "the copy, committed");
    app.advance(Duration::from_secs(60)).await.unwrap();
    assert_eq!(app.calls_of("tx_forwarder").len(), 2);
    assert_eq!(committed(&app), [4], "exactly once");
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    assert_eq!(app.pulsar().backlog("tx-in-retry", "tx").unwrap(), Some(0));
    app.stop().await;
}

/// The forwarder with up to `deliveries` deliveries in one transaction, for up to `wait`.
async fn start_grouped(
    script: Arc<Script>,
    deliveries: u32,
    wait: Duration,
    spawn: Arc<dyn Spawn>,
) -> TestApp {
    let policy = TransactionPolicy::new().timeout(TXN_TIMEOUT).group(
        std::num::NonZeroU32::new(deliveries).expect("not zero"),
        wait,
    );
    TestApp::with_state(
        app(|b| {
            b.include(tx_forwarder).transactional_with(policy);
            b.include(tx_reader);
        }),
        Plan::new(script),
    )
    .on(spawn)
    .await
    .expect("the app starts")
}

/// Grouped: the deliveries that start within the group's wait share one transaction, which
/// commits once its wait has passed (it is not full), all their copies at once.
async fn a_group_commits_its_deliveries_together(spawn: Arc<dyn Spawn>) {
    let wait = Duration::from_secs(1);
    let app = start_grouped(Script::always(ret(HandlerOutcome::ack())), 10, wait, spawn).await;
    app.publish(job(1)).await.expect("published");
    app.publish(job(2)).await.expect("published");
    assert_eq!(
        committed(&app),
        Vec::<u64>::new(),
        "nothing before the group commits"
    );
    app.advance(wait).await.unwrap();
    let mut seen = committed(&app);
    seen.sort_unstable();
    assert_eq!(seen, [1, 2], "both, at once");
    for call in app.calls_of("tx_reader") {
        assert_eq!(call.at(), wait, "committed at the group's wait");
    }
    app.advance(Duration::from_secs(60)).await.unwrap();
    assert_eq!(app.calls_of("tx_forwarder").len(), 2, "none came back");
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    app.stop().await;
}

/// Grouped: one delivery that does not acknowledge aborts its group: every message of it comes
/// back, those that acknowledged too, and in the end each is forwarded once. (In process a
/// handler ends as it starts: job 1 acknowledges in the group, job 2's retry aborts it, and
/// job 3, started after, opens a transaction of its own.)
async fn a_retry_in_a_group_brings_the_whole_group_back(spawn: Arc<dyn Spawn>) {
    let script = Script::by_job(|id, attempt| match (id, attempt) {
        (2, 0) => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    });
    let wait = Duration::from_secs(1);
    let app = start_grouped(script, 3, wait, spawn).await;
    app.pulsar().publish(job(1)).expect("published");
    app.pulsar().publish(job(2)).expect("published");
    app.pulsar().publish(job(3)).expect("published");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(60)).await.unwrap();
    let mut seen = committed(&app);
    seen.sort_unstable();
    assert_eq!(seen, [1, 2, 3], "each once in the end");
    let calls = app.calls_of("tx_forwarder");
    let times = |id: u64| {
        (calls.iter())
            .filter(|c| c.payload::<Job>().expect("a job").id == id)
            .count()
    };
    assert_eq!(
        (times(1), times(2), times(3)),
        (2, 2, 1),
        "job 1, acknowledged in the aborted group, came back with job 2: {calls:?}"
    );
    assert_eq!(app.pulsar().backlog("tx-in", "tx").unwrap(), Some(0));
    app.stop().await;
}

ruststream_tests::on_every_runtime!(
    a_group_commits_its_deliveries_together,
    a_retry_in_a_group_brings_the_whole_group_back,
    a_dead_letter_copy_commits_with_the_acknowledgement,
    a_retry_later_copy_commits_with_the_acknowledgement,
    an_ack_commits_the_publishes_with_the_acknowledgement,
    a_retried_handler_s_publishes_are_never_seen,
    a_retry_after_publishes_once_when_it_finally_acks,
    a_panicking_handler_s_publishes_are_never_seen,
    a_transaction_that_times_out_is_never_seen,
    a_crash_mid_transaction_publishes_nothing,
);
