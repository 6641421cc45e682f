//! Every completion row and every retry and dead-letter rule of the guide, on the in-process
//! Pulsar with a stopped clock, each scenario run on tokio, async-std and smol.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use ruststream::completion::Completion;
use ruststream::runtime::Spawn;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::{TestApp, TestPublishError};
use ruststream_tests::scenario::*;

/// pulsar-rs checks ack timeouts on a 500 ms ticker started with the consumer, so a delivery
/// received at t with timeout d comes back on the first tick strictly after t + d.
const TICK: Duration = Duration::from_millis(500);

fn n(v: u32) -> NonZeroU32 {
    NonZeroU32::new(v).unwrap()
}

async fn start<A: ruststream::App<State = Plan>>(
    spawn: Arc<dyn Spawn>,
    app: A,
    script: Arc<Script>,
) -> TestApp {
    TestApp::with_state(app, Plan::new(script))
        .on(spawn)
        .await
        .expect("the scripted app starts")
}

fn ats(tb: &TestApp, handler: &str) -> Vec<Duration> {
    tb.calls_of(handler).iter().map(|c| c.at()).collect()
}

fn counts(tb: &TestApp, handler: &str) -> Vec<u32> {
    tb.calls_of(handler)
        .iter()
        .map(|c| c.redelivery_count())
        .collect()
}

// ---- Completion table ------------------------------------------------------------------

/// ack() → acknowledged, never comes back.
async fn ack_acknowledges(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    tb.advance(ACK_TIMEOUT * 10).await.unwrap();
    assert_eq!(ats(&tb, "shared"), [Duration::ZERO]);
    assert_eq!(tb.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    tb.stop().await;
}

/// drop() → acknowledged: removed, and not dead-lettered even with a dead-letter topic.
async fn drop_acknowledges_and_goes_nowhere(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::drop()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared).max_attempts(n(3)).dead_letter("jobs-dlq");
            b.include(dead_letters);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    tb.advance(ACK_TIMEOUT * 10).await.unwrap();
    assert_eq!(ats(&tb, "shared"), [Duration::ZERO]);
    assert_eq!(tb.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    assert!(tb.topic("jobs-dlq").is_empty());
    assert!(tb.calls_of("dead_letters").is_empty());
    tb.stop().await;
}

/// retry() → redelivered at once, count + 1.
async fn retry_redelivers_at_once(spawn: Arc<dyn Spawn>) {
    let script = Script::new(
        [ret(HandlerOutcome::retry()), ret(HandlerOutcome::retry())],
        ret(HandlerOutcome::ack()),
    );
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    assert_eq!(ats(&tb, "shared"), [Duration::ZERO; 3]);
    assert_eq!(counts(&tb, "shared"), [0, 1, 2]);
    tb.advance(ACK_TIMEOUT * 10).await.unwrap();
    assert_eq!(tb.calls_of("shared").len(), 3);
    assert_eq!(tb.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    tb.stop().await;
}

/// retry_after(d) → redelivered after exactly d, count + 1.
async fn retry_after_waits_exactly(spawn: Arc<dyn Spawn>) {
    let delay = DELAY;
    let script = Script::new(
        [ret(HandlerOutcome::retry_after(delay))],
        ret(HandlerOutcome::ack()),
    );
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    tb.advance(delay - Duration::from_nanos(1)).await.unwrap();
    assert_eq!(tb.calls_of("shared").len(), 1, "not a nanosecond early");
    tb.advance(Duration::from_nanos(1)).await.unwrap();
    assert_eq!(ats(&tb, "shared"), [Duration::ZERO, delay]);
    assert_eq!(counts(&tb, "shared"), [0, 1]);
    tb.stop().await;
}

/// retry_after(d) with d ≥ ack_timeout → refused, left unsettled, back after the ack timeout.
async fn retry_after_not_shorter_than_ack_timeout_is_refused(spawn: Arc<dyn Spawn>) {
    let script = Script::new(
        [ret(HandlerOutcome::retry_after(ACK_TIMEOUT))],
        ret(HandlerOutcome::ack()),
    );
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    tb.advance(ACK_TIMEOUT).await.unwrap();
    assert_eq!(
        tb.calls_of("shared").len(),
        1,
        "no nack was sent for the refused delay"
    );
    tb.advance(TICK).await.unwrap();
    assert_eq!(
        ats(&tb, "shared"),
        [Duration::ZERO, ACK_TIMEOUT + TICK],
        "the client's ack timeout brought it back"
    );
    assert_eq!(counts(&tb, "shared"), [0, 1]);
    tb.stop().await;
}

/// Without an ack timeout any delay is accepted.
async fn without_ack_timeout_any_delay_is_accepted(spawn: Arc<dyn Spawn>) {
    let delay = Duration::from_secs(3600);
    let script = Script::new(
        [ret(HandlerOutcome::retry_after(delay))],
        ret(HandlerOutcome::ack()),
    );
    let tb = start(
        spawn,
        app(|b| {
            b.include(no_timeout);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs-nt", &Job { id: 1 }).await.unwrap();
    tb.advance(delay).await.unwrap();
    assert_eq!(ats(&tb, "no_timeout"), [Duration::ZERO, delay]);
    tb.stop().await;
}

/// No outcome (a panic) → nothing; the ack timeout brings it back, count + 1.
async fn panic_is_no_outcome(spawn: Arc<dyn Spawn>) {
    let script = Script::new([Step::Panic], ret(HandlerOutcome::ack()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    let calls = tb.calls_of("shared");
    assert_eq!(calls[0].completion(), Completion::Panicked);
    assert_eq!(calls[0].outcome(), None);
    tb.advance(ACK_TIMEOUT).await.unwrap();
    assert_eq!(tb.calls_of("shared").len(), 1);
    tb.advance(TICK).await.unwrap();
    assert_eq!(ats(&tb, "shared"), [Duration::ZERO, ACK_TIMEOUT + TICK]);
    assert_eq!(counts(&tb, "shared"), [0, 1]);
    tb.stop().await;
}

/// No outcome without an ack timeout → the message stays unacknowledged, it does not come back
/// while the consumer is connected.
async fn no_outcome_without_ack_timeout_stays_unacknowledged(spawn: Arc<dyn Spawn>) {
    let script = Script::new([Step::Panic], ret(HandlerOutcome::ack()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(no_timeout);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs-nt", &Job { id: 1 }).await.unwrap();
    tb.advance(Duration::from_secs(24 * 3600)).await.unwrap();
    assert_eq!(tb.calls_of("no_timeout").len(), 1);
    assert_eq!(
        tb.pulsar().backlog("jobs-nt", "no-timeout").unwrap(),
        Some(1)
    );
    tb.stop().await;
}

// ---- Retries and the dead-letter topic -------------------------------------------------

/// max_attempts(3) + retry → three deliveries, then the dead-letter topic with the payload,
/// the properties and the key kept, plus REAL_TOPIC and ORIGIN_MESSAGE_ID; its reader sees it.
async fn retries_end_on_the_dead_letter_topic(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::retry()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared).max_attempts(n(3)).dead_letter("jobs-dlq");
            b.include(dead_letters);
        }),
        script,
    )
    .await;
    let payload = serde_json::to_vec(&Job { id: 9 }).unwrap();
    let id = tb
        .publish_raw(
            "jobs",
            payload.clone(),
            vec![("trace".into(), "abc".into())],
            Some("k9".into()),
        )
        .await
        .unwrap();
    assert_eq!(
        counts(&tb, "shared"),
        [0, 1, 2],
        "exactly max_attempts deliveries"
    );
    let dlq = tb.topic("jobs-dlq");
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].payload, payload);
    assert_eq!(dlq[0].key.as_deref(), Some("k9"));
    assert_eq!(dlq[0].property("trace"), Some("abc"));
    assert_eq!(
        dlq[0].property("REAL_TOPIC"),
        Some("persistent://public/default/jobs")
    );
    assert_eq!(dlq[0].property("ORIGIN_MESSAGE_ID"), Some(id.as_str()));
    assert_eq!(dlq[0].properties.len(), 3, "nothing else added");
    let reads = tb.calls_of("dead_letters");
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].property("trace"), Some("abc"));
    assert_eq!(
        tb.pulsar().backlog("jobs", "shared").unwrap(),
        Some(0),
        "original acked"
    );
    tb.advance(ACK_TIMEOUT * 10).await.unwrap();
    assert_eq!(tb.calls_of("shared").len(), 3);
    tb.stop().await;
}

/// retry_after counts as a redelivery too.
async fn retry_after_counts_towards_the_limit(spawn: Arc<dyn Spawn>) {
    let delay = DELAY;
    let script = Script::always(ret(HandlerOutcome::retry_after(delay)));
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared).max_attempts(n(3)).dead_letter("jobs-dlq");
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    tb.advance(delay * 10).await.unwrap();
    assert_eq!(ats(&tb, "shared"), [Duration::ZERO, delay, delay * 2]);
    let dlq = tb.topic("jobs-dlq");
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].published_at.elapsed_since_origin(), delay * 3);
    tb.stop().await;
}

/// An expired ack timeout counts as a redelivery too.
async fn ack_timeouts_count_towards_the_limit(spawn: Arc<dyn Spawn>) {
    let script = Script::always(Step::Panic);
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared).max_attempts(n(3)).dead_letter("jobs-dlq");
        }),
        script,
    )
    .await;
    tb.publish_to("jobs", &Job { id: 1 }).await.unwrap();
    tb.advance(ACK_TIMEOUT * 10).await.unwrap();
    let at = ats(&tb, "shared");
    assert_eq!(at.len(), 3);
    assert!(at
        .windows(2)
        .all(|w| w[1] - w[0] > ACK_TIMEOUT && w[1] - w[0] <= ACK_TIMEOUT + TICK));
    assert_eq!(counts(&tb, "shared"), [0, 1, 2]);
    assert_eq!(tb.topic("jobs-dlq").len(), 1);
    tb.stop().await;
}

/// A payload that does not decode goes to the declared dead-letter topic at once, with no
/// ack timeout needed and no hot loop: no retry can make it decode.
async fn undecodable_payload_ends_on_the_dead_letter_topic(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared).max_attempts(n(2)).dead_letter("jobs-dlq");
        }),
        script,
    )
    .await;
    tb.publish_raw("jobs", b"not json".to_vec(), vec![], None)
        .await
        .unwrap();
    let calls = tb.calls_of("shared");
    assert_eq!(calls.len(), 1, "no hot loop");
    assert_eq!(calls[0].completion(), Completion::DeadLettered);
    let error = calls[0].error().unwrap();
    assert!(
        error.starts_with(
            "handler `shared`: the payload is not a JSON `ruststream_tests::scenario::Job`"
        ),
        "{error}"
    );
    let dlq = tb.topic("jobs-dlq");
    assert_eq!(dlq.len(), 1, "on the dead-letter topic at once, at t=0");
    assert_eq!(dlq[0].payload, b"not json");
    assert_eq!(
        dlq[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id())
    );
    tb.advance(ACK_TIMEOUT * 5).await.unwrap();
    assert_eq!(tb.calls_of("shared").len(), 1, "acknowledged: never back");
    assert_eq!(tb.topic("jobs-dlq").len(), 1);
    tb.stop().await;
}

/// The same without an ack timeout: the declared dead-letter topic is reached at once all the
/// same (before, such a message sat unacknowledged until a restart).
async fn undecodable_payload_without_ack_timeout_reaches_the_dead_letter_topic(
    spawn: Arc<dyn Spawn>,
) {
    let tb = start(
        spawn,
        app(|b| {
            b.include(no_timeout)
                .max_attempts(n(3))
                .dead_letter("jobs-nt-dlq");
        }),
        Script::always(ret(HandlerOutcome::ack())),
    )
    .await;
    tb.publish_raw("jobs-nt", b"{\"id\":".to_vec(), vec![], None)
        .await
        .unwrap();
    assert_eq!(tb.calls_of("no_timeout").len(), 1, "no hot loop");
    assert_eq!(
        tb.calls_of("no_timeout")[0].completion(),
        Completion::DeadLettered
    );
    assert_eq!(tb.topic("jobs-nt-dlq").len(), 1, "at once, at t=0");
    assert_eq!(
        tb.pulsar().backlog("jobs-nt", "no-timeout").unwrap(),
        Some(0)
    );
    tb.advance(Duration::from_secs(3600)).await.unwrap();
    assert_eq!(tb.calls_of("no_timeout").len(), 1);
    tb.stop().await;
}

/// Without a dead-letter topic an undecodable payload is left unacknowledged: it comes back
/// after the ack timeout, once per timeout, never in a hot loop.
async fn undecodable_payload_without_dead_letter_comes_back_after_the_ack_timeout(
    spawn: Arc<dyn Spawn>,
) {
    let tb = start(
        spawn,
        app(|b| {
            b.include(shared);
        }),
        Script::always(ret(HandlerOutcome::ack())),
    )
    .await;
    tb.publish_raw("jobs", b"not json".to_vec(), vec![], None)
        .await
        .unwrap();
    assert_eq!(tb.calls_of("shared").len(), 1);
    assert_eq!(tb.calls_of("shared")[0].completion(), Completion::Rejected);
    tb.advance(ACK_TIMEOUT + TICK).await.unwrap();
    assert_eq!(tb.calls_of("shared").len(), 2, "back after the ack timeout");
    tb.stop().await;
}

/// A bare topic name mounts on the broker's default subscription (Shared) and accepts the
/// same declaration.
async fn bare_topic_uses_the_default_subscription(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::retry()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(bare)
                .max_attempts(n(2))
                .dead_letter("jobs-bare-dlq");
        }),
        script,
    )
    .await;
    tb.publish_to("persistent://public/default/jobs-bare", &Job { id: 1 })
        .await
        .unwrap();
    assert_eq!(counts(&tb, "bare"), [0, 1]);
    assert_eq!(
        tb.calls_of("bare")[0].topic(),
        "persistent://public/default/jobs-bare"
    );
    assert_eq!(tb.topic("jobs-bare-dlq").len(), 1);
    assert_eq!(
        tb.pulsar()
            .backlog("jobs-bare", ruststream_pulsar::DEFAULT_SUBSCRIPTION)
            .unwrap(),
        Some(0)
    );
    tb.stop().await;
}

// ---- Subscription types ------------------------------------------------------------------

/// Exclusive keeps no count: a retry rewinds and the message comes back with count 0.
async fn exclusive_rewinds_with_count_zero(spawn: Arc<dyn Spawn>) {
    let script = Script::new(
        [ret(HandlerOutcome::retry()), ret(HandlerOutcome::retry())],
        ret(HandlerOutcome::ack()),
    );
    let tb = start(
        spawn,
        app(|b| {
            b.include(exclusive);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs-ex", &Job { id: 1 }).await.unwrap();
    assert_eq!(counts(&tb, "exclusive"), [0, 0, 0]);
    tb.advance(ACK_TIMEOUT * 3).await.unwrap();
    assert_eq!(tb.calls_of("exclusive").len(), 3);
    tb.stop().await;
}

/// A handler that always retries on Exclusive is redelivered at the same virtual instant
/// forever: the step gives up past its bound with an error naming the subscription and the
/// message, instead of looping without end.
async fn always_retry_on_exclusive_fails_the_step_instead_of_hanging(spawn: Arc<dyn Spawn>) {
    let tb = TestApp::with_state(
        app(|b| {
            b.include(exclusive);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::retry()))),
    )
    .on(spawn)
    .max_calls_per_instant(500)
    .await
    .expect("the scripted app starts");
    let error = tb
        .publish_to("jobs-ex", &Job { id: 1 })
        .await
        .expect_err("no progress at t=0");
    let message = error.to_string();
    assert!(message.starts_with("no progress at t=0ns: "), "{message}");
    assert!(
        message.contains("`exclusive` on subscription `exclusive` with message 1:0:-1"),
        "{message}"
    );
    let TestPublishError::NoProgress(stuck) = error else {
        panic!("the step fails with NoProgress: {error:?}")
    };
    // The step gives up once past the bound. How far past depends on how many handler calls
    // the runtime's other worker threads made before the step noticed, so only the lower
    // side is exact.
    assert!(stuck.calls > 500, "gave up before the bound: {stuck:?}");
    assert_eq!(tb.now(), Duration::ZERO);
    // `advance` says the same instead of looping.
    let again = tb
        .advance(Duration::from_secs(1))
        .await
        .expect_err("still stuck");
    assert_eq!(again.subscription, "exclusive");
    assert_eq!(again.message_id, "1:0:-1");
    tb.stop().await;
}

/// Failover keeps no count either.
async fn failover_rewinds_with_count_zero(spawn: Arc<dyn Spawn>) {
    let script = Script::new([ret(HandlerOutcome::retry())], ret(HandlerOutcome::ack()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(failover);
        }),
        script,
    )
    .await;
    tb.publish_to("jobs-fo", &Job { id: 1 }).await.unwrap();
    assert_eq!(counts(&tb, "failover"), [0, 0]);
    tb.stop().await;
}

/// KeyShared: the deliveries of one key are handled in publish order.
async fn key_shared_keeps_per_key_order(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let tb = start(
        spawn,
        app(|b| {
            b.include(key_shared);
        }),
        script,
    )
    .await;
    for (id, key) in [(1, "a"), (2, "b"), (3, "a"), (4, "a"), (5, "b")] {
        let payload = serde_json::to_vec(&Job { id }).unwrap();
        tb.pulsar()
            .publish("jobs-ks", payload, vec![], Some(key.into()))
            .unwrap();
    }
    tb.settle().await.unwrap();
    let order = |key: &str| -> Vec<u64> {
        tb.calls_of("key_shared")
            .iter()
            .filter(|c| {
                let id = c.payload::<Job>().unwrap().id;
                (key == "a") == [1, 3, 4].contains(&id)
            })
            .map(|c| c.payload::<Job>().unwrap().id)
            .collect()
    };
    assert_eq!(order("a"), [1, 3, 4]);
    assert_eq!(order("b"), [2, 5]);
    tb.stop().await;
}

/// One slow handler does not block the others of its subscription.
async fn a_slow_handler_does_not_block_the_others(spawn: Arc<dyn Spawn>) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let gate = script.with_gate();
    let tb = start(
        spawn,
        app(|b| {
            b.include(gated);
        }),
        script,
    )
    .await;
    for id in 1..=3 {
        tb.pulsar()
            .publish(
                "jobs-gate",
                serde_json::to_vec(&Job { id }).unwrap(),
                vec![],
                None,
            )
            .unwrap();
    }
    // Jobs 2 and 3 complete while job 1 waits at its gate.
    let mut spins = 0;
    while tb.calls_of("gated").len() < 2 {
        spins += 1;
        assert!(spins < 1_000_000, "jobs 2 and 3 never completed");
        ruststream::runtime::yield_now().await;
    }
    let done: Vec<u64> = tb
        .calls_of("gated")
        .iter()
        .map(|c| c.payload::<Job>().unwrap().id)
        .collect();
    assert_eq!(done, [2, 3]);
    gate.send(()).unwrap();
    tb.settle().await.unwrap();
    assert_eq!(tb.calls_of("gated").len(), 3);
    assert_eq!(tb.pulsar().backlog("jobs-gate", "gate").unwrap(), Some(0));
    tb.stop().await;
}

// ---- Registration ------------------------------------------------------------------------

/// Invalid registrations stop the app at startup with the core's texts.
async fn invalid_registrations_fail_at_startup(spawn: Arc<dyn Spawn>) {
    async fn start_error<A: ruststream::App<State = Plan>>(
        spawn: Arc<dyn Spawn>,
        app: A,
    ) -> String {
        TestApp::with_state(app, Plan::new(Script::always(ret(HandlerOutcome::ack()))))
            .on(spawn)
            .await
            .expect_err("an invalid registration must not start")
            .to_string()
    }
    let limit_only = start_error(
        spawn.clone(),
        app(|b| {
            b.include(shared).max_attempts(n(5));
        }),
    )
    .await;
    assert_eq!(
        limit_only,
        "the service cannot start: 1 invalid pulsar registration\n  - subscription `shared` \
         declares max_attempts(5) but no dead-letter topic, so a message out of attempts would \
         have nowhere to go: add `.dead_letter(\"<topic>\")` after `.max_attempts(..)`, or \
         remove `.max_attempts(..)`"
    );
    let topic_only = start_error(
        spawn.clone(),
        app(|b| {
            b.include(shared).dead_letter("jobs-dlq");
        }),
    )
    .await;
    assert!(
        topic_only.ends_with(
            "subscription `shared` declares dead_letter(\"jobs-dlq\") but no attempt limit, so \
             nothing would ever be sent there: add `.max_attempts(nonzero!(N))` before \
             `.dead_letter(..)`, or remove `.dead_letter(..)`"
        ),
        "{topic_only}"
    );
    let exclusive_limit = start_error(
        spawn.clone(),
        app(|b| {
            b.include(exclusive).max_attempts(n(5)).dead_letter("x");
        }),
    )
    .await;
    assert!(
        exclusive_limit.ends_with(
            "subscription `exclusive` is Exclusive and declares max_attempts(5), which would \
             never be reached: Exclusive subscriptions keep no redelivery count (only Shared \
             and KeyShared count redeliveries); make the subscription Shared or KeyShared, or \
             remove `.max_attempts(..)` and `.dead_letter(..)`"
        ),
        "{exclusive_limit}"
    );
    let failover_limit = start_error(
        spawn.clone(),
        app(|b| {
            b.include(failover).max_attempts(n(5)).dead_letter("x");
        }),
    )
    .await;
    assert!(failover_limit.contains("is Failover"), "{failover_limit}");
    let both = start_error(
        spawn.clone(),
        app(|b| {
            b.include(shared).max_attempts(n(5));
            b.include(exclusive).dead_letter("x");
        }),
    )
    .await;
    assert!(
        both.starts_with("the service cannot start: 2 invalid pulsar registrations"),
        "{both}"
    );
    let bad_topic = start_error(
        spawn.clone(),
        app(|b| {
            b.include(shared)
                .max_attempts(n(2))
                .dead_letter("persistent://bad");
        }),
    )
    .await;
    assert!(bad_topic.contains("persistent://bad"), "{bad_topic}");
}

ruststream_tests::on_every_runtime!(
    ack_acknowledges,
    drop_acknowledges_and_goes_nowhere,
    retry_redelivers_at_once,
    retry_after_waits_exactly,
    retry_after_not_shorter_than_ack_timeout_is_refused,
    without_ack_timeout_any_delay_is_accepted,
    panic_is_no_outcome,
    no_outcome_without_ack_timeout_stays_unacknowledged,
    retries_end_on_the_dead_letter_topic,
    retry_after_counts_towards_the_limit,
    ack_timeouts_count_towards_the_limit,
    undecodable_payload_ends_on_the_dead_letter_topic,
    undecodable_payload_without_dead_letter_comes_back_after_the_ack_timeout,
    undecodable_payload_without_ack_timeout_reaches_the_dead_letter_topic,
    bare_topic_uses_the_default_subscription,
    exclusive_rewinds_with_count_zero,
    failover_rewinds_with_count_zero,
    always_retry_on_exclusive_fails_the_step_instead_of_hanging,
    key_shared_keeps_per_key_order,
    a_slow_handler_does_not_block_the_others,
    invalid_registrations_fail_at_startup,
);
