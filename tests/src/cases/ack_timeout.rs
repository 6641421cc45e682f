//! The ack timeout: what brings a message back when no outcome comes, when its clock
//! starts, and what happens without one; a slow handler beside the others.

use super::*;

/// No outcome (panic) → the ack timeout brings it back.
pub async fn ack_timeout_redelivers_after_no_outcome(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::new([Step::Panic], ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    let calls = app.until_calls("shared", 2, SOON).await;
    assert_eq!(
        calls.len(),
        2,
        "{:?}",
        calls
            .iter()
            .map(|c| (c.at(), c.redelivery_count(), c.completion()))
            .collect::<Vec<_>>()
    );
    assert_eq!(calls[0].outcome(), None);
    assert!(calls[1].at() - calls[0].at() > ACK_TIMEOUT);
    if env.exact() {
        assert_eq!(calls[0].completion(), Completion::Panicked);
        assert_eq!(calls[0].at(), Duration::ZERO);
        assert_eq!(
            calls[1].at(),
            ACK_TIMEOUT + TICK,
            "on the first tick after the timeout"
        );
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1]);
    }
    app.pass(QUIET).await;
    let calls = app.calls_of("shared");
    assert_eq!(
        calls.len(),
        2,
        "{:?}",
        calls
            .iter()
            .map(|c| (c.at(), c.redelivery_count(), c.completion()))
            .collect::<Vec<_>>()
    );
    app.stop().await;
}

/// Without an ack timeout any delay is accepted: `retry_after` twice as long as the ack
/// timeout of the other subscriptions (which they would refuse) brings the message back after
/// that delay. A refused delay would leave it unacknowledged, and without an ack timeout it
/// would never come back.
pub async fn retry_after_without_ack_timeout_accepts_a_longer_delay(env: Env) {
    let delay = ACK_TIMEOUT * 2;
    let app = env
        .start(
            app(|b| {
                b.include(no_timeout);
            }),
            Script::new(
                [ret(HandlerOutcome::retry_after(delay))],
                ret(HandlerOutcome::ack()),
            ),
        )
        .await;
    app.publish("jobs-nt", job(1), vec![], None).await;
    if env.exact() {
        app.pass(delay - Duration::from_nanos(1)).await;
        assert_eq!(app.calls_of("no_timeout").len(), 1, "not before the delay");
    }
    let calls = app.until_calls("no_timeout", 2, delay + SOON).await;
    assert_eq!(calls.len(), 2, "back after the delay");
    env.assert_gap(&calls[0], &calls[1], delay);
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("no_timeout").len(), 2);
    if let Some(backlog) = app.backlog("jobs-nt", "no-timeout").await {
        assert_eq!(backlog, 0, "acknowledged on the second call");
    }
    app.stop().await;
}

/// No outcome without an ack timeout: the message stays unacknowledged and does not come back
/// while the consumer is connected (in process: for a whole virtual day).
pub async fn no_outcome_without_ack_timeout_stays_unacknowledged(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(no_timeout);
            }),
            Script::new([Step::Panic], ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-nt", job(1), vec![], None).await;
    let calls = app.until_calls("no_timeout", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), None);
    app.pass(if env.exact() {
        Duration::from_secs(24 * 3600)
    } else {
        QUIET
    })
    .await;
    assert_eq!(app.calls_of("no_timeout").len(), 1, "it came back");
    if let Some(backlog) = app.backlog("jobs-nt", "no-timeout").await {
        assert_eq!(backlog, 1, "left unacknowledged");
    }
    app.stop().await;
}

/// One slow handler does not hold up the others of its subscription (Shared, four at once):
/// while the first job waits, the next two are handled and acknowledged.
pub async fn a_slow_handler_does_not_block_the_others(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let gate = script.with_gate();
    let app = env
        .start(
            app(|b| {
                b.include(gated);
            }),
            script,
        )
        .await;
    for id in 1..=3 {
        app.publish_unsettled("jobs-gate", job(id), vec![], None)
            .await;
    }
    let two_done = || app.calls_of("gated").len() >= 2;
    assert!(
        app.wait_for(SOON, &two_done).await,
        "jobs 2 and 3 not done while job 1 waits: {:?}",
        app.calls_of("gated")
    );
    let mut done: Vec<u64> = app
        .calls_of("gated")
        .iter()
        .map(|c| c.payload::<Job>().expect("a job").id)
        .collect();
    if !env.exact() {
        // Two handlers side by side may finish in either order.
        done.sort();
    }
    assert_eq!(done, [2, 3], "job 1 is still held");
    gate.send(()).expect("job 1 still waits at its gate");
    let calls = app.until_calls("gated", 3, SOON).await;
    assert_eq!(calls.len(), 3);
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("gated").len(), 3);
    if let Some(backlog) = app.backlog("jobs-gate", "gate").await {
        assert_eq!(backlog, 0, "all acknowledged");
    }
    app.stop().await;
}

/// A message's ack timeout starts when a handler takes it, not while it waits for a handler
/// (as with the Java client, whose timer starts at `receive`): with one handler at a time held
/// on job 1 for twice the ack timeout, job 2 waits received and is handled once, when the
/// handler is free, and never comes back; job 1, whose timeout ran out while its handler held
/// it, is redelivered as Pulsar does. The two jobs are published one by one, each its own
/// entry: in one batch, job 1's timeout would bring back the whole entry, job 2 with it.
pub async fn the_ack_timeout_starts_when_a_handler_takes_the_message(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let gate = script.with_gate();
    let app = env
        .start(
            app(|b| {
                b.include(held_one_at_a_time);
            }),
            script.clone(),
        )
        .await;
    for id in 1..=2 {
        app.publish_unsettled("jobs-held", job(id), vec![], None)
            .await;
    }
    let held = || script.gate_taken();
    assert!(
        app.wait_for(SOON, &held).await,
        "job 1 never reached its handler"
    );
    let hold = 2 * ACK_TIMEOUT;
    app.pass_while_held(hold).await;
    assert!(
        app.calls_of("held_one_at_a_time").is_empty(),
        "a call ended while job 1 held the only handler: {:?}",
        app.calls_of("held_one_at_a_time")
    );
    gate.send(()).expect("job 1 still waits at its gate");
    app.until_calls("held_one_at_a_time", 3, SOON).await;
    app.pass(QUIET).await;
    // (job id, redelivery count, when the handler was called), in the order the calls ended.
    let seen: Vec<(u64, u32, Duration)> = app
        .calls_of("held_one_at_a_time")
        .iter()
        .map(|c| {
            (
                c.payload::<Job>().expect("a job").id,
                c.redelivery_count(),
                c.at(),
            )
        })
        .collect();
    let of_job = |id: u64| -> Vec<u32> {
        seen.iter()
            .filter(|(job, ..)| *job == id)
            .map(|&(_, count, _)| count)
            .collect()
    };
    assert_eq!(
        of_job(2),
        [0],
        "job 2 must be handled once, not redelivered: its ack timeout must not run while it \
         waits for the handler ({seen:?})"
    );
    assert_eq!(
        of_job(1).len(),
        2,
        "job 1's ack timeout ran out while its handler held it: redelivered once ({seen:?})"
    );
    if env.exact() {
        assert_eq!(
            seen,
            [(1, 0, Duration::ZERO), (2, 0, hold), (1, 1, hold)],
            "job 2 and job 1's redelivery handled when the handler is free"
        );
    }
    if let Some(backlog) = app.backlog("jobs-held", "held").await {
        assert_eq!(backlog, 0, "all acknowledged");
    }
    app.stop().await;
}
