//! The behaviour cases written once and run in process and on real brokers.
//!
//! Each case is `async fn(Env)`; [`ALL`] lists them with the brokers they hold on. pulsar-lite
//! 0.2.0 has two gaps of its own (measured against the release, the same with the C++
//! client): it ignores a redelivery request on Exclusive and Failover, and redelivers a nacked
//! KeyShared message only once; the cases that need those run on Apache Pulsar and in process
//! only.
#![allow(missing_docs)]

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ruststream::completion::Completion;
use ruststream::message::Message;
use ruststream::HandlerOutcome;
use ruststream::MessageId;

use crate::harness::{Env, Running};
use crate::scenario::*;

/// Time for things that should happen at once (a real broker needs a moment).
const SOON: Duration = Duration::from_secs(10);
/// Longer than the ack timeout plus pulsar-rs's 500 ms redelivery tick, with margin: after
/// this, a message that was going to come back has come back.
const QUIET: Duration = Duration::from_secs(5);
/// pulsar-rs checks ack timeouts on a 500 ms ticker started with the consumer, so a delivery
/// received at t with timeout d comes back on the first tick strictly after t + d.
const TICK: Duration = Duration::from_millis(500);

fn n(v: u32) -> NonZeroU32 {
    NonZeroU32::new(v).expect("not zero")
}

fn job(id: u64) -> Vec<u8> {
    format!("{{\"id\":{id}}}").into_bytes()
}

/// Which real brokers a case holds on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Brokers {
    /// pulsar-lite and Apache Pulsar.
    Both,
    /// Apache Pulsar only (a pulsar-lite gap).
    ApacheOnly,
}

/// A case.
pub type Case = fn(Env) -> Pin<Box<dyn Future<Output = ()> + Send>>;

macro_rules! cases {
    ($($name:ident: $brokers:expr),* $(,)?) => {
        /// Every case, its name and the brokers it runs on.
        pub const ALL: &[(&str, Brokers, Case)] = &[
            $((stringify!($name), $brokers, |env| Box::pin($name(env)))),*
        ];
    };
}

cases!(
    ack: Brokers::Both,
    drop_goes_nowhere: Brokers::Both,
    retry: Brokers::Both,
    retry_after: Brokers::Both,
    an_error_returned_is_retried: Brokers::Both,
    retry_after_refused_against_ack_timeout: Brokers::Both,
    ack_timeout_redelivers_after_no_outcome: Brokers::Both,
    max_attempts_then_dead_letter: Brokers::Both,
    retry_after_counts_towards_the_limit: Brokers::Both,
    ack_timeouts_count_towards_the_limit: Brokers::Both,
    retry_after_without_ack_timeout_accepts_a_longer_delay: Brokers::Both,
    no_outcome_without_ack_timeout_stays_unacknowledged: Brokers::Both,
    undecodable_payload_dead_lettered_at_once: Brokers::Both,
    undecodable_payload_dead_lettered_without_ack_timeout: Brokers::Both,
    undecodable_payload_without_dead_letter_comes_back_after_the_ack_timeout: Brokers::Both,
    unreadable_message_dead_lettered_with_its_bytes: Brokers::ApacheOnly,
    unreadable_message_without_dead_letter_comes_back_after_the_ack_timeout: Brokers::ApacheOnly,
    a_slow_handler_does_not_block_the_others: Brokers::Both,
    the_ack_timeout_starts_when_a_handler_takes_the_message: Brokers::Both,
    bare_topic_on_the_default_subscription: Brokers::Both,
    key_shared_keeps_per_key_order: Brokers::Both,
    handler_publishes_through_the_broker: Brokers::Both,
    a_failed_send_brings_the_delivery_back: Brokers::Both,
    message_parts_reach_the_handler: Brokers::Both,
    raw_payload_reaches_the_handler_undecoded: Brokers::Both,
    msgpack_payload_round_trips: Brokers::Both,
    delayed_delivery_and_event_time: Brokers::ApacheOnly,
    exclusive_redelivers_by_rewinding: Brokers::ApacheOnly,
    failover_redelivers_by_rewinding: Brokers::ApacheOnly,
    batch_siblings_retry: Brokers::ApacheOnly,
    batch_siblings_retry_after: Brokers::ApacheOnly,
    batch_dead_letters_only_the_exhausted_message: Brokers::ApacheOnly,
    partitioned_shared_loses_nothing: Brokers::ApacheOnly,
    partitioned_key_shared_loses_nothing: Brokers::ApacheOnly,
    partitioned_failover_loses_nothing: Brokers::ApacheOnly,
    partitioned_dead_letter_names_the_partition: Brokers::ApacheOnly,
    keyed_publishes_keep_a_key_on_one_partition: Brokers::ApacheOnly,
    several_topics_one_handler: Brokers::Both,
    pattern_picks_up_topics_created_later: Brokers::ApacheOnly,
    initial_position_earliest_and_latest: Brokers::Both,
    failover_runs_one_message_at_a_time: Brokers::Both,
    failover_key_ordered_keeps_each_key_in_order: Brokers::Both,
    dead_letter_now_with_its_reason: Brokers::Both,
    dead_letter_now_leaves_batch_siblings: Brokers::ApacheOnly,
    dead_letter_without_a_topic_is_refused_and_comes_back: Brokers::Both,
    retry_later_comes_back_from_the_retry_topic: Brokers::ApacheOnly,
    attempts_count_every_way_back: Brokers::ApacheOnly,
    retry_later_without_a_topic_is_refused_and_comes_back: Brokers::Both,
    backoff_waits_by_attempt: Brokers::Both,
    backoff_later_waits_by_attempt_on_the_retry_topic: Brokers::ApacheOnly,
    ordered_retries_keep_each_key_in_publish_order: Brokers::ApacheOnly,
    failover_retry_later_waits_and_counts: Brokers::ApacheOnly,
);

/// ack → acknowledged, never comes back.
pub async fn ack(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    let calls = app.until_calls("shared", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    if env.exact() {
        assert_eq!(calls[0].at(), Duration::ZERO, "handled at once");
    }
    app.pass(QUIET).await;
    assert_eq!(
        app.calls_of("shared").len(),
        1,
        "an acknowledged message came back"
    );
    if let Some(backlog) = app.backlog("jobs", "shared").await {
        assert_eq!(backlog, 0, "acknowledged");
    }
    app.stop().await;
}

/// drop → acknowledged, and not dead-lettered although a dead-letter topic is declared.
pub async fn drop_goes_nowhere(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared).max_attempts(n(2)).dead_letter("jobs-dlq");
                b.include(dead_letters);
            }),
            Script::always(ret(HandlerOutcome::drop())),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    assert_eq!(app.until_calls("shared", 1, SOON).await.len(), 1);
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("shared").len(), 1);
    assert!(
        app.calls_of("dead_letters").is_empty(),
        "a dropped message was dead-lettered"
    );
    if let Some(backlog) = app.backlog("jobs", "shared").await {
        assert_eq!(backlog, 0, "a dropped message is acknowledged");
    }
    if let Some(tb) = app.in_process() {
        assert!(
            tb.topic("jobs-dlq").is_empty(),
            "{:?}",
            tb.topic("jobs-dlq")
        );
    }
    app.stop().await;
}

/// retry → redelivered at once, as often as asked.
pub async fn retry(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::new(
                [ret(HandlerOutcome::retry()), ret(HandlerOutcome::retry())],
                ret(HandlerOutcome::ack()),
            ),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    let calls = app.until_calls("shared", 3, SOON).await;
    assert_eq!(calls.len(), 3);
    if env.exact() {
        assert!(calls.iter().all(|c| c.at() == calls[0].at()), "all at once");
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1, 2]);
    } else {
        // Sooner than the ack timeout: it was the nack, not the client's timer.
        assert!(calls[2].at() - calls[0].at() < ACK_TIMEOUT);
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("shared").len(), 3);
    if let Some(backlog) = app.backlog("jobs", "shared").await {
        assert_eq!(backlog, 0, "acknowledged on the third call");
    }
    app.stop().await;
}

/// A handler's `Err` (a boxed error, what `?` makes) → retry, the error kept with the call.
pub async fn an_error_returned_is_retried(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(fallible);
            }),
            Script::new(
                [fail("the card service is down")],
                ret(HandlerOutcome::ack()),
            ),
        )
        .await;
    app.publish("jobs-fallible", job(1), vec![], None).await;
    let calls = app.until_calls("fallible", 2, SOON).await;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::retry()));
    assert_eq!(calls[0].error(), Some("the card service is down"));
    assert_eq!(calls[1].outcome(), Some(HandlerOutcome::ack()));
    assert_eq!(calls[1].error(), None);
    assert_eq!(calls[1].redelivery_count(), 1, "redelivered by the nack");
    if env.exact() {
        assert_eq!(calls[1].at(), calls[0].at(), "redelivered at once");
    } else {
        // Sooner than the ack timeout: it was the nack, not the client's timer.
        assert!(calls[1].at() - calls[0].at() < ACK_TIMEOUT);
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("fallible").len(), 2);
    if let Some(backlog) = app.backlog("jobs-fallible", "fallible").await {
        assert_eq!(backlog, 0, "acknowledged on the second call");
    }
    app.stop().await;
}

/// retry_after(d) → redelivered after d.
pub async fn retry_after(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::new(
                [ret(HandlerOutcome::retry_after(DELAY))],
                ret(HandlerOutcome::ack()),
            ),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    if env.exact() {
        app.pass(DELAY - Duration::from_nanos(1)).await;
        assert_eq!(app.calls_of("shared").len(), 1, "not a nanosecond early");
        app.pass(Duration::from_nanos(1)).await;
        assert_eq!(app.calls_of("shared").len(), 2, "back at the delay");
    }
    let calls = app.until_calls("shared", 2, SOON).await;
    assert_eq!(calls.len(), 2);
    env.assert_gap(&calls[0], &calls[1], DELAY);
    if env.exact() {
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1]);
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("shared").len(), 2);
    app.stop().await;
}

/// retry_after(d) with d ≥ ack_timeout → refused, no nack; the ack timeout brings it back.
pub async fn retry_after_refused_against_ack_timeout(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::new(
                [ret(HandlerOutcome::retry_after(ACK_TIMEOUT))],
                ret(HandlerOutcome::ack()),
            ),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    let calls = app.until_calls("shared", 2, SOON).await;
    assert_eq!(calls.len(), 2);
    // The client's 500 ms redelivery tick decides the exact moment.
    let gap = calls[1].at() - calls[0].at();
    assert!(
        gap > ACK_TIMEOUT,
        "came back after {gap:?}: before the ack timeout"
    );
    if env.exact() {
        assert_eq!(gap, ACK_TIMEOUT + TICK);
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1]);
    }
    app.stop().await;
}

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

/// max_attempts(3) → three deliveries, then the dead-letter topic with the payload,
/// properties and key kept, plus REAL_TOPIC and ORIGIN_MESSAGE_ID; the original acknowledged.
pub async fn max_attempts_then_dead_letter(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared).max_attempts(n(3)).dead_letter("jobs-dlq");
                b.include(dead_letters);
            }),
            Script::always(ret(HandlerOutcome::retry())),
        )
        .await;
    app.publish(
        "jobs",
        job(7),
        vec![("trace".into(), "abc".into())],
        Some("k7".into()),
    )
    .await;
    let dead = app.until_calls("dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1, "one message on the dead-letter topic");
    let calls = app.calls_of("shared");
    assert_eq!(calls.len(), 3, "exactly max_attempts deliveries");
    if env.exact() {
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1, 2]);
    }
    assert_eq!(dead[0].payload_bytes(), calls[0].payload_bytes());
    assert_eq!(dead[0].property("trace"), Some("abc"));
    let real_topic = dead[0].property("REAL_TOPIC").expect("REAL_TOPIC");
    assert_eq!(real_topic, calls[0].topic());
    assert!(real_topic.starts_with("persistent://") && real_topic.ends_with("/jobs"));
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    if let Some(tb) = app.in_process() {
        let dlq = tb.topic("jobs-dlq");
        assert_eq!(dlq.len(), 1);
        assert_eq!(dlq[0].key.as_deref(), Some("k7"), "the key kept");
        assert_eq!(
            dlq[0].property("REAL_TOPIC"),
            Some("persistent://public/default/jobs")
        );
        assert_eq!(
            dlq[0].property("DEAD_LETTER_REASON"),
            Some("out-of-attempts")
        );
        assert_eq!(dlq[0].properties.len(), 4, "nothing else added: {dlq:?}");
    }
    if let Some(backlog) = app.backlog("jobs", "shared").await {
        assert_eq!(backlog, 0, "the original acknowledged");
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("shared").len(), 3);
    assert_eq!(app.calls_of("dead_letters").len(), 1);
    app.stop().await;
}

/// retry_after counts as a redelivery: the message goes to the dead-letter topic when it
/// comes back after the last wait.
pub async fn retry_after_counts_towards_the_limit(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared).max_attempts(n(2)).dead_letter("jobs-dlq");
                b.include(dead_letters);
            }),
            Script::always(ret(HandlerOutcome::retry_after(DELAY))),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    let dead = app.until_calls("dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1);
    let calls = app.calls_of("shared");
    assert_eq!(calls.len(), 2);
    env.assert_gap(&calls[0], &calls[1], DELAY);
    if env.exact() {
        assert_eq!(calls[0].at(), Duration::ZERO);
        assert_eq!(dead[0].at(), DELAY * 2, "dead-lettered when it came back");
    }
    if let Some(tb) = app.in_process() {
        let dlq = tb.topic("jobs-dlq");
        assert_eq!(dlq.len(), 1);
        assert_eq!(dlq[0].published_at.elapsed_since_origin(), DELAY * 2);
    }
    app.stop().await;
}

/// An expired ack timeout counts as a redelivery too: a handler that never gives an outcome
/// sees the message max_attempts times, each an ack timeout (and the client's tick) after the
/// last, then it goes to the dead-letter topic.
pub async fn ack_timeouts_count_towards_the_limit(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared).max_attempts(n(3)).dead_letter("jobs-dlq");
                b.include(dead_letters);
            }),
            Script::always(Step::Panic),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    // Three ack timeouts, each ended by the client's next tick.
    let dead = app
        .until_calls("dead_letters", 1, (ACK_TIMEOUT + TICK) * 3 + SOON)
        .await;
    assert_eq!(
        dead.len(),
        1,
        "on the dead-letter topic after the third timeout"
    );
    let calls = app.calls_of("shared");
    assert_eq!(calls.len(), 3, "exactly max_attempts deliveries");
    assert!(calls.iter().all(|c| c.outcome().is_none()), "no outcome");
    for pair in calls.windows(2) {
        let gap = pair[1].at() - pair[0].at();
        assert!(
            gap > ACK_TIMEOUT,
            "back after {gap:?}, before the ack timeout"
        );
        if env.exact() {
            assert!(
                gap <= ACK_TIMEOUT + TICK,
                "back after {gap:?}, later than the first tick after the ack timeout"
            );
        }
    }
    if env.exact() {
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1, 2]);
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("shared").len(), 3);
    assert_eq!(app.calls_of("dead_letters").len(), 1);
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

/// A payload that does not decode goes to the declared dead-letter topic at once, the call
/// says why, and it never comes back: no retry can make it decode, so there is no hot loop
/// and no wait for an ack timeout.
async fn undecodable_dead_lettered(
    env: Env,
    mount: fn(&mut ruststream_pulsar::PulsarBroker<Plan>),
    (handler, topic, subscription): (&'static str, &'static str, &'static str),
    reader: &'static str,
    payload: &'static [u8],
) {
    let app = env
        .start(app(mount), Script::always(ret(HandlerOutcome::ack())))
        .await;
    app.publish(topic, payload.to_vec(), vec![], None).await;
    let dead = app.until_calls(reader, 1, SOON).await;
    assert_eq!(dead.len(), 1, "on the dead-letter topic");
    let calls = app.calls_of(handler);
    assert_eq!(calls.len(), 1, "no hot loop");
    assert_eq!(calls[0].completion(), Completion::DeadLettered);
    let error = calls[0].error().expect("the call says why");
    let expected =
        format!("handler `{handler}`: the payload is not a JSON `ruststream_tests::scenario::Job`");
    assert!(error.starts_with(&expected), "{error}");
    assert_eq!(dead[0].payload_bytes(), payload);
    assert_eq!(dead[0].property("DEAD_LETTER_REASON"), Some("undecodable"));
    let why = dead[0]
        .property("DEAD_LETTER_ERROR")
        .expect("the error kept");
    assert!(why.contains("is not a JSON"), "{why}");
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    if env.exact() {
        assert_eq!(dead[0].at(), Duration::ZERO, "at once");
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of(handler).len(), 1, "acknowledged: never back");
    assert_eq!(app.calls_of(reader).len(), 1);
    if let Some(backlog) = app.backlog(topic, subscription).await {
        assert_eq!(backlog, 0, "the original acknowledged");
    }
    app.stop().await;
}

/// An undecodable payload on a subscription with an ack timeout and a dead-letter topic.
pub async fn undecodable_payload_dead_lettered_at_once(env: Env) {
    undecodable_dead_lettered(
        env,
        |b| {
            b.include(shared).max_attempts(n(2)).dead_letter("jobs-dlq");
            b.include(raw_dead_letters);
        },
        ("shared", "jobs", "shared"),
        "raw_dead_letters",
        b"not json",
    )
    .await;
}

/// The same without an ack timeout: the declared dead-letter topic is reached at once all the
/// same (it does not sit unacknowledged until a restart).
pub async fn undecodable_payload_dead_lettered_without_ack_timeout(env: Env) {
    undecodable_dead_lettered(
        env,
        |b| {
            // A topic alone: no attempt limit is needed for what cannot decode.
            b.include(no_timeout).dead_letter("jobs-nt-dlq");
            b.include(raw_no_timeout_dead_letters);
        },
        ("no_timeout", "jobs-nt", "no-timeout"),
        "raw_no_timeout_dead_letters",
        b"{\"id\":",
    )
    .await;
}

/// Without a dead-letter topic an undecodable payload is left unacknowledged: it comes back
/// after the ack timeout, once per timeout, never in a hot loop.
pub async fn undecodable_payload_without_dead_letter_comes_back_after_the_ack_timeout(env: Env) {
    left_for_the_ack_timeout(env, false, "the payload is not a JSON").await;
}

/// A delivery the handler could not start on (`unreadable`: the client could not read it; or
/// its payload does not decode), on a subscription without a dead-letter topic: rejected, each
/// call saying why (`error` in its text), and back after each ack timeout, never in a hot loop.
async fn left_for_the_ack_timeout(env: Env, unreadable: bool, error: &str) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    if unreadable {
        app.publish_unreadable("jobs", job(1)).await;
    } else {
        app.publish("jobs", b"not json".to_vec(), vec![], None)
            .await;
    }
    let calls = if env.exact() {
        // Exactly one timeout and its tick: it comes back again after each one.
        app.pass(ACK_TIMEOUT + TICK).await;
        let calls = app.calls_of("shared");
        assert_eq!(calls.len(), 2, "back once after the ack timeout");
        calls
    } else {
        app.until_calls("shared", 2, ACK_TIMEOUT + SOON).await
    };
    assert!(
        calls.len() >= 2,
        "not back after the ack timeout: {calls:?}"
    );
    for call in &calls {
        assert_eq!(call.completion(), Completion::Rejected, "{calls:?}");
        let said = call.error().expect("the call says why");
        assert!(said.contains(error), "{said}");
    }
    let gap = calls[1].at() - calls[0].at();
    assert!(
        gap > ACK_TIMEOUT,
        "back after {gap:?}, before the ack timeout"
    );
    if env.exact() {
        assert_eq!(gap, ACK_TIMEOUT + TICK);
    }
    app.stop().await;
}

/// A message the client cannot read (live: Snappy as pulsar-rs 6.9.1 frames it) never reaches
/// the handler: it goes to the declared dead-letter topic at once with its bytes as stored and
/// the reason, and the original is acknowledged.
pub async fn unreadable_message_dead_lettered_with_its_bytes(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared).max_attempts(n(2)).dead_letter("jobs-dlq");
                b.include(raw_dead_letters);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    let stored = app.publish_unreadable("jobs", job(1)).await;
    let dead = app.until_calls("raw_dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1, "on the dead-letter topic");
    let calls = app.calls_of("shared");
    assert_eq!(calls.len(), 1, "no hot loop");
    assert_eq!(calls[0].completion(), Completion::DeadLettered);
    let error = calls[0].error().expect("the call says why");
    assert!(
        error.starts_with("handler `shared`: the message cannot be read ("),
        "{error}"
    );
    assert_eq!(dead[0].payload_bytes(), stored, "the bytes as stored");
    assert_eq!(dead[0].property("DEAD_LETTER_REASON"), Some("undecodable"));
    let why = dead[0]
        .property("DEAD_LETTER_ERROR")
        .expect("the error kept");
    assert!(why.contains("the message cannot be read"), "{why}");
    if !env.exact() {
        // What the client said: it found no Snappy block where the frame header is.
        assert!(why.to_lowercase().contains("snappy"), "{why}");
    }
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("shared").len(), 1, "acknowledged: never back");
    if let Some(backlog) = app.backlog("jobs", "shared").await {
        assert_eq!(backlog, 0, "the original acknowledged");
    }
    app.stop().await;
}

/// Without a dead-letter topic a message the client cannot read is left unacknowledged and
/// comes back after each ack timeout (the broker's redelivery), its call saying why; the
/// handler never runs on it.
pub async fn unreadable_message_without_dead_letter_comes_back_after_the_ack_timeout(env: Env) {
    left_for_the_ack_timeout(env, true, "handler `shared`: the message cannot be read (").await;
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

/// A bare topic name mounts on the broker's default subscription and accepts the same
/// declaration.
pub async fn bare_topic_on_the_default_subscription(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(bare)
                    .max_attempts(n(2))
                    .dead_letter("jobs-bare-dlq");
                b.include(bare_dead_letters);
            }),
            Script::always(ret(HandlerOutcome::retry())),
        )
        .await;
    app.publish("jobs-bare", job(1), vec![], None).await;
    let dead = app.until_calls("bare_dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1);
    let calls = app.calls_of("bare");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[0].topic().ends_with("/jobs-bare"),
        "{}",
        calls[0].topic()
    );
    if env.exact() {
        // Shared, so the broker counts the redelivery.
        let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
        assert_eq!(counts, [0, 1]);
    }
    if env.exact() {
        assert_eq!(calls[0].topic(), "persistent://public/default/jobs-bare");
    }
    if let Some(backlog) = app
        .backlog("jobs-bare", ruststream_pulsar::DEFAULT_SUBSCRIPTION)
        .await
    {
        assert_eq!(backlog, 0, "the original acknowledged");
    }
    app.stop().await;
}

/// KeyShared keeps the order of each key: five messages of two keys, all published before the
/// handlers run.
pub async fn key_shared_keeps_per_key_order(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(key_shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    for (id, key) in [(1, "a"), (2, "b"), (3, "a"), (4, "a"), (5, "b")] {
        app.publish_unsettled("jobs-ks", job(id), vec![], Some(key.into()))
            .await;
    }
    let calls = app.until_calls("key_shared", 5, SOON).await;
    assert_eq!(calls.len(), 5);
    let ids = |wanted: &[u64]| -> Vec<u64> {
        calls
            .iter()
            .map(|c| c.payload::<Job>().expect("a job").id)
            .filter(|id| wanted.contains(id))
            .collect()
    };
    assert_eq!(ids(&[1, 3, 4]), [1, 3, 4], "key a out of order");
    assert_eq!(ids(&[2, 5]), [2, 5], "key b out of order");
    app.stop().await;
}

/// Exclusive keeps no count: a retry rewinds the cursor and the message comes again.
pub async fn exclusive_redelivers_by_rewinding(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(exclusive);
            }),
            Script::new([ret(HandlerOutcome::retry())], ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-ex", job(1), vec![], None).await;
    let calls = app.until_calls("exclusive", 2, SOON).await;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].payload_bytes(), calls[0].payload_bytes());
    assert_eq!(calls[1].redelivery_count(), 0);
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("exclusive").len(), 2);
    app.stop().await;
}

/// Failover keeps no count either.
pub async fn failover_redelivers_by_rewinding(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(failover);
            }),
            Script::new([ret(HandlerOutcome::retry())], ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-fo", job(1), vec![], None).await;
    let calls = app.until_calls("failover", 2, SOON).await;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].redelivery_count(), 0);
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("failover").len(), 2);
    app.stop().await;
}

/// A handler publishes with its `Publisher` parameter, through the broker it runs on.
pub async fn handler_publishes_through_the_broker(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(forwarder);
                b.include(outbox);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-fwd", job(42), vec![], None).await;
    let out = app.until_calls("outbox", 1, SOON).await;
    assert_eq!(out.len(), 1, "the forwarded message arrived");
    assert_eq!(
        out[0].payload::<Forwarded>().expect("a Forwarded"),
        Forwarded { id: 42 }
    );
    assert!(out[0].topic().ends_with("/jobs-out"));
    assert_eq!(
        app.calls_of("forwarder")[0].outcome(),
        Some(HandlerOutcome::ack())
    );
    app.stop().await;
}

/// A handler that sends without waiting and acknowledges at once: each delivery is
/// acknowledged once what it sent is confirmed; the one whose send failed (to a name that is
/// not a topic, the error ignored by the handler) is not, and comes back as `retry()` does,
/// counted.
pub async fn a_failed_send_brings_the_delivery_back(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(sender);
                b.include(outbox);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-send", job(1), vec![], None).await;
    app.publish("jobs-send", job(2), vec![], None).await;
    let out = app.until_calls("outbox", 2, SOON).await;
    let mut ids: Vec<u64> = out
        .iter()
        .map(|c| c.payload::<Forwarded>().expect("a Forwarded").id)
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [1, 2],
        "each job forwarded once, job 1 on its second delivery"
    );
    let calls = app.calls_of("sender");
    let of = |id: u64| -> Vec<u32> {
        calls
            .iter()
            .filter(|c| c.payload::<Job>().ok().map(|j| j.id) == Some(id))
            .map(|c| c.redelivery_count())
            .collect()
    };
    assert_eq!(of(1), [0, 1], "job 1 back once, counted: {calls:?}");
    assert_eq!(of(2), [0], "job 2 acknowledged: {calls:?}");
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("sender").len(), 3, "none back again");
    assert_eq!(app.calls_of("outbox").len(), 2);
    if let Some(backlog) = app.backlog("jobs-send", "sender").await {
        assert_eq!(backlog, 0, "both acknowledged");
    }
    app.stop().await;
}

/// A handler's message parameters: properties, key, id, redelivery count, publish and event
/// time, topic. Retried once, so the second delivery shows the same id with count 1.
pub async fn message_parts_reach_the_handler(env: Env) {
    let script = Script::new([ret(HandlerOutcome::retry())], ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(inspect);
            }),
            script.clone(),
        )
        .await;
    let properties = vec![
        ("tenant".to_owned(), "acme".to_owned()),
        ("trace".to_owned(), "t-7".to_owned()),
    ];
    app.publish("jobs-parts", job(7), properties, Some("card-7".into()))
        .await;
    let calls = app.until_calls("inspect", 2, SOON).await;
    assert_eq!(calls.len(), 2, "delivered, retried, delivered again");
    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    for (n, (seen, call)) in seen.iter().zip(&calls).enumerate() {
        let mut properties = seen.properties.clone();
        properties.sort();
        assert_eq!(
            properties,
            [
                ("tenant".to_owned(), "acme".to_owned()),
                ("trace".to_owned(), "t-7".to_owned())
            ]
        );
        assert_eq!(seen.key.as_deref(), Some("card-7"));
        assert_eq!(
            seen.message_id,
            call.message_id().to_string(),
            "the broker's id, as recorded"
        );
        assert_eq!(seen.redelivery_count, Some(n as u32), "delivery {n}");
        assert!(seen.topic.ends_with("/jobs-parts"), "{}", seen.topic);
        assert_eq!(seen.event_time, None, "published without one");
        assert_eq!(seen.payload, b"7");
    }
    assert_eq!(
        seen[0].message_id, seen[1].message_id,
        "same message, same id"
    );
    assert_eq!(seen[0].publish_time, seen[1].publish_time, "stored once");
    if !env.exact() {
        // A real broker stamps the Unix time: after 2020-01-01.
        assert!(seen[0].publish_time > Duration::from_secs(1_577_836_800));
    }
    app.stop().await;
}

/// A `&[u8]` payload parameter receives the bytes as published, even when they are not JSON.
pub async fn raw_payload_reaches_the_handler_undecoded(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(raw_reader);
            }),
            script.clone(),
        )
        .await;
    let bytes = vec![0xff, 0x00, b'n', b'o', b't', b' ', b'j', b's', b'o', b'n'];
    app.publish("jobs-raw", bytes.clone(), vec![], None).await;
    let calls = app.until_calls("raw_reader", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::ack()));
    assert_eq!(script.seen()[0].payload, bytes);
    app.stop().await;
}

/// A type published in MessagePack (`#[outgoing(codec = "msgpack")]`) is decoded by a
/// `&MsgPack<T>` payload parameter.
pub async fn msgpack_payload_round_trips(env: Env) {
    use ruststream::Outgoing;
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(packed_reader);
            }),
            script.clone(),
        )
        .await;
    let bytes = PackedJob { id: 9 }.encode().expect("encodes");
    assert_eq!(bytes[0], 0x81, "MessagePack (a one-entry map), not JSON");
    app.publish(PackedJob::TOPIC, bytes, vec![], None).await;
    let calls = app.until_calls("packed_reader", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::ack()));
    assert_eq!(script.seen()[0].payload, b"9");
    app.stop().await;
}

/// Publishing with options: a message delivered after a delay (Shared) carries the event time
/// it was given. In process the delivery comes exactly at the delay, on the virtual clock.
/// pulsar-lite 0.2.0 delivers delayed messages at once (measured: all three runtimes), so the
/// case holds on Apache Pulsar and in process.
pub async fn delayed_delivery_and_event_time(env: Env) {
    let delay = Duration::from_secs(3);
    let event_time = Duration::from_secs(1_700_000_000);
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(inspect);
            }),
            script.clone(),
        )
        .await;
    let record = Message::new("jobs-parts", job(5))
        .property("tenant", "acme")
        .event_time(event_time)
        .deliver_after(delay);
    app.publish_message(record).await;
    app.pass(Duration::from_secs(1)).await;
    assert!(
        app.calls_of("inspect").is_empty(),
        "delivered before its delay"
    );
    let calls = app.until_calls("inspect", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    if env.exact() {
        assert_eq!(calls[0].at(), delay, "exactly at the delay");
    }
    let seen = script.seen();
    assert_eq!(seen[0].event_time, Some(event_time));
    assert!(seen[0]
        .properties
        .contains(&("tenant".to_owned(), "acme".to_owned())));
    app.stop().await;
}

/// The ids of a batch publish all name one entry, each with its index: the producer really
/// batched.
fn assert_one_entry(ids: &[MessageId]) {
    let entry = |id: &MessageId| id.parts()[..3].to_vec();
    assert_eq!(
        ids[0].parts().len(),
        4,
        "a batched id has an index: {}",
        ids[0]
    );
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(entry(id), entry(&ids[0]), "{ids:?}");
        assert_eq!(id.parts().get(3), Some(&(i as i64)), "index {i} in {id}");
    }
}

/// How many times the handler saw each job id, by id.
fn calls_per_job(
    calls: &[ruststream_pulsar::testing::Call],
) -> std::collections::BTreeMap<u64, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for call in calls {
        let job: Job = serde_json::from_slice(call.payload_bytes()).expect("a job");
        *seen.entry(job.id).or_default() += 1;
    }
    seen
}

/// Messages of the batch cases, published in batches of [`BATCH_SIZE`] (one entry each).
const BATCH: u64 = 100;
const BATCH_SIZE: u64 = 10;

/// Batching producers' entries where odd ids are retried once (with `first`) and even ids
/// acked: every id ends acknowledged, and no acknowledged sibling is handed over again.
async fn batch_siblings_retried_once(env: Env, first: HandlerOutcome) {
    let app = env
        .start(
            app(|b| {
                b.include(batched);
            }),
            Script::by_job(move |id, attempt| {
                if id % 2 == 1 && attempt == 0 {
                    first
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    let mut ids = Vec::new();
    for first_id in (0..BATCH).step_by(BATCH_SIZE as usize) {
        let entry = app
            .publish_batch(
                (first_id..first_id + BATCH_SIZE)
                    .map(|id| Message::new("jobs-batch", job(id)))
                    .collect(),
            )
            .await;
        assert_one_entry(&entry);
        ids.extend(entry);
    }
    let expected = (BATCH + BATCH / 2) as usize;
    app.until_calls("batched", expected, SOON).await;
    app.pass(QUIET).await;
    let calls = app.calls_of("batched");
    let seen = calls_per_job(&calls);
    let want: std::collections::BTreeMap<u64, usize> =
        (0..BATCH).map(|id| (id, 1 + (id % 2) as usize)).collect();
    assert_eq!(seen, want, "odd ids twice, even ids once, none lost");
    // Each delivery names its place in the entry.
    for call in &calls {
        assert!(
            ids.iter().any(|id| *id == call.message_id()),
            "{}",
            call.message_id()
        );
    }
    // Live, "acknowledged" is what the quiet period showed: an entry left unacknowledged
    // would have come back after the 3 s ack timeout and changed the counts above.
    if let Some(backlog) = app.backlog("jobs-batch", "batched").await {
        assert_eq!(backlog, 0, "every entry acknowledged");
    }
    app.stop().await;
}

/// `retry()` on odd ids of the batches.
pub async fn batch_siblings_retry(env: Env) {
    batch_siblings_retried_once(env, HandlerOutcome::retry()).await;
}

/// `retry_after(2 s)` on odd ids of the batches.
pub async fn batch_siblings_retry_after(env: Env) {
    batch_siblings_retried_once(env, HandlerOutcome::retry_after(Duration::from_secs(2))).await;
}

/// A message of a batch that runs out of attempts reaches the dead-letter topic alone, with
/// its index in `ORIGIN_MESSAGE_ID`; its acknowledged siblings never do.
pub async fn batch_dead_letters_only_the_exhausted_message(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(batched)
                    .max_attempts(n(3))
                    .dead_letter("jobs-batch-dlq");
                b.include(batch_dead_letters);
            }),
            Script::by_job(|id, _| {
                if id == 1 {
                    HandlerOutcome::retry()
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    let ids = app
        .publish_batch(
            (0..4)
                .map(|id| Message::new("jobs-batch", job(id)))
                .collect(),
        )
        .await;
    assert_one_entry(&ids);
    let dead = app.until_calls("batch_dead_letters", 1, SOON).await;
    app.pass(QUIET).await;
    let dead_now = app.calls_of("batch_dead_letters");
    assert_eq!(dead_now.len(), 1, "only the exhausted message: {dead:?}");
    let job1: Job = serde_json::from_slice(dead_now[0].payload_bytes()).unwrap();
    assert_eq!(job1.id, 1);
    assert_eq!(
        dead_now[0].property("ORIGIN_MESSAGE_ID"),
        Some(ids[1].to_string().as_str())
    );
    let real_topic = dead_now[0].property("REAL_TOPIC").expect("REAL_TOPIC");
    assert!(real_topic.starts_with("persistent://") && real_topic.ends_with("/jobs-batch"));
    let seen = calls_per_job(&app.calls_of("batched"));
    assert_eq!(
        seen,
        [(0, 1), (1, 3), (2, 1), (3, 1)].into_iter().collect(),
        "exactly max_attempts for the failing one, once for the others"
    );
    // Live, "acknowledged" is what the quiet period showed: an entry left unacknowledged
    // would have come back after the 3 s ack timeout and changed the counts above.
    if let Some(backlog) = app.backlog("jobs-batch", "batched").await {
        assert_eq!(backlog, 0, "every entry acknowledged");
    }
    app.stop().await;
}

/// Messages of the partitioned cases, in batches of [`BATCH_SIZE`].
const PARTITIONED: u64 = 100;

/// The names of a partitioned topic's partitions.
fn partitions_of(topic: &str) -> Vec<String> {
    (0..PARTITIONS)
        .map(|i| format!("{topic}-partition-{i}"))
        .collect()
}

/// The partition a call's message came from, by its topic.
fn partition_of(call: &ruststream_pulsar::testing::Call) -> u32 {
    let (_, index) = call
        .topic()
        .rsplit_once("-partition-")
        .unwrap_or_else(|| panic!("{} is not a partition", call.topic()));
    index
        .parse()
        .unwrap_or_else(|e| panic!("{} is not a partition: {e}", call.topic()))
}

/// A 4-partition topic read by `handler`, published to by batching producers, odd ids
/// retried once: every id is handled and acknowledged, from every partition. `keyed` publishes
/// with key-based batching (each batch one key, as the Java client's `KEY_BASED` batcher
/// does), which KeyShared needs; otherwise each batch is keyless and goes to the next
/// partition in turn. `exact`: each id is handled exactly as often as retried (Shared and
/// KeyShared); Failover's redelivery rewinds its partition's cursor, and pulsar-rs hands over
/// what was queued again, so there an id may come more often, never less.
async fn partitioned_retried_once(
    env: Env,
    (handler, topic, subscription): (&'static str, &'static str, &'static str),
    mount: fn(&mut ruststream_pulsar::PulsarBroker<Plan>),
    keyed: bool,
    exact: bool,
) {
    let app = env
        .start_partitioned(
            app(mount),
            Script::by_job(|id, attempt| {
                if id % 2 == 1 && attempt == 0 {
                    HandlerOutcome::retry()
                } else {
                    HandlerOutcome::ack()
                }
            }),
            &[(topic, PARTITIONS)],
        )
        .await;
    for batch in 0..PARTITIONED / BATCH_SIZE {
        let records: Vec<Message> = (0..BATCH_SIZE)
            .map(|i| {
                let id = batch * BATCH_SIZE + i;
                let record = Message::new(topic, job(id));
                if keyed {
                    record.key(format!("key-{batch}"))
                } else {
                    record
                }
            })
            .collect();
        let ids = app.publish_batch(records).await;
        assert_one_entry(&ids);
    }
    let expected = (PARTITIONED + PARTITIONED / 2) as usize;
    app.until_calls(handler, expected, SOON).await;
    app.pass(QUIET).await;
    let calls = app.calls_of(handler);
    let seen = calls_per_job(&calls);
    for id in 0..PARTITIONED {
        let times = seen.get(&id).copied().unwrap_or(0);
        let want = 1 + (id % 2) as usize;
        if exact {
            assert_eq!(times, want, "job {id}: {seen:?}");
        } else {
            assert!(
                times >= want,
                "job {id} handled {times} times, fewer than {want}"
            );
        }
    }
    // The last outcome of every job is an acknowledgement.
    let mut last = std::collections::BTreeMap::new();
    for call in &calls {
        let job: Job = serde_json::from_slice(call.payload_bytes()).expect("a job");
        last.insert(job.id, call.outcome());
    }
    assert!(
        last.values().all(|o| *o == Some(HandlerOutcome::ack())),
        "every job ends acknowledged: {last:?}"
    );
    let partitions: std::collections::BTreeSet<u32> = calls.iter().map(partition_of).collect();
    assert_eq!(
        partitions.len(),
        PARTITIONS as usize,
        "read from every partition"
    );
    // Each delivery's id names its partition, as the Java client prints it.
    for call in &calls {
        let id = call.message_id();
        assert_eq!(id.parts()[2], i64::from(partition_of(call)), "{id}");
    }
    for partition in partitions_of(topic) {
        if let Some(backlog) = app.backlog(&partition, subscription).await {
            assert_eq!(backlog, 0, "every entry of {partition} acknowledged");
        }
    }
    app.stop().await;
}

/// Shared on a 4-partition topic.
pub async fn partitioned_shared_loses_nothing(env: Env) {
    partitioned_retried_once(
        env,
        ("part_shared", "jobs-part", "part-shared"),
        |b| {
            b.include(part_shared);
        },
        false,
        true,
    )
    .await;
}

/// KeyShared on a 4-partition topic, with key-based batching.
pub async fn partitioned_key_shared_loses_nothing(env: Env) {
    partitioned_retried_once(
        env,
        ("part_key_shared", "jobs-part-ks", "part-key-shared"),
        |b| {
            b.include(part_key_shared);
        },
        true,
        true,
    )
    .await;
}

/// Failover on a 4-partition topic.
pub async fn partitioned_failover_loses_nothing(env: Env) {
    partitioned_retried_once(
        env,
        ("part_failover", "jobs-part-fo", "part-failover"),
        |b| {
            b.include(part_failover);
        },
        false,
        false,
    )
    .await;
}

/// A message of a partitioned topic that runs out of attempts reaches the dead-letter topic
/// with `REAL_TOPIC` naming its partition (as the Java client writes it) and its id.
pub async fn partitioned_dead_letter_names_the_partition(env: Env) {
    let app = env
        .start_partitioned(
            app(|b| {
                b.include(part_shared)
                    .max_attempts(n(2))
                    .dead_letter("jobs-part-dlq");
                b.include(part_dead_letters);
            }),
            Script::always(ret(HandlerOutcome::retry())),
            &[("jobs-part", PARTITIONS)],
        )
        .await;
    app.publish("jobs-part", job(9), vec![], Some("card-9".into()))
        .await;
    let dead = app.until_calls("part_dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1);
    let calls = app.calls_of("part_shared");
    assert_eq!(calls.len(), 2, "exactly max_attempts deliveries");
    let expected = key_partition(ruststream_pulsar::HashingScheme::JavaString, "card-9");
    assert_eq!(partition_of(&calls[0]), expected, "routed by its key");
    let real_topic = dead[0].property("REAL_TOPIC").expect("REAL_TOPIC");
    assert_eq!(real_topic, calls[0].topic());
    assert!(
        real_topic.starts_with("persistent://")
            && real_topic.ends_with(&format!("/jobs-part-partition-{expected}")),
        "{real_topic}"
    );
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    app.stop().await;
}

/// The partition a key goes to on a topic of [`PARTITIONS`] partitions.
fn key_partition(hashing: ruststream_pulsar::HashingScheme, key: &str) -> u32 {
    ruststream_pulsar_model::partition_for_key(hashing, key, PARTITIONS)
}

/// Keyed publishes to a partitioned topic: every message of a key lands on the partition its
/// key hashes to (the Java client's default hash), so a key keeps its order; keyless ones take
/// the partitions in turn.
pub async fn keyed_publishes_keep_a_key_on_one_partition(env: Env) {
    let app = env
        .start_partitioned(
            app(|b| {
                b.include(part_shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
            &[("jobs-part", PARTITIONS)],
        )
        .await;
    for id in 0..40u64 {
        app.publish(
            "jobs-part",
            job(id),
            vec![],
            Some(format!("card-{}", id % 10)),
        )
        .await;
    }
    for id in 40..48u64 {
        app.publish("jobs-part", job(id), vec![], None).await;
    }
    let calls = app.until_calls("part_shared", 48, SOON).await;
    assert_eq!(calls.len(), 48);
    let mut keyless = Vec::new();
    for call in &calls {
        let job: Job = serde_json::from_slice(call.payload_bytes()).expect("a job");
        if job.id < 40 {
            let key = format!("card-{}", job.id % 10);
            assert_eq!(
                partition_of(call),
                key_partition(ruststream_pulsar::HashingScheme::JavaString, &key),
                "job {} with key {key}",
                job.id
            );
        } else {
            keyless.push(partition_of(call));
        }
    }
    keyless.sort();
    assert_eq!(
        keyless,
        [0, 0, 1, 1, 2, 2, 3, 3],
        "keyless: each partition in turn"
    );
    app.stop().await;
}

/// One handler reads two topics, each through its own subscription.
pub async fn several_topics_one_handler(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(several);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-a", job(1), vec![], None).await;
    app.publish("jobs-b", job(2), vec![], None).await;
    let calls = app.until_calls("several", 2, SOON).await;
    let mut topics: Vec<String> = calls
        .iter()
        .map(|c| c.topic().rsplit('/').next().unwrap().to_owned())
        .collect();
    topics.sort();
    assert_eq!(topics, ["jobs-a", "jobs-b"]);
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("several").len(), 2);
    if let Some(backlog) = app.backlog("jobs-b", "several").await {
        assert_eq!(backlog, 0);
    }
    app.stop().await;
}

/// A pattern subscription reads topics created after the service started, a partitioned one
/// included, within its refresh period; topics the pattern does not match stay unread.
pub async fn pattern_picks_up_topics_created_later(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(pattern_reader);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    // Created by this publish, after the subscription started.
    app.publish("jobs-pat-new", job(1), vec![], None).await;
    app.publish("jobs-other", job(2), vec![], None).await;
    env.create_partitioned_topic(&*app, "jobs-pat-parted", 2)
        .await;
    app.publish("jobs-pat-parted", job(3), vec![], None).await;
    // Within one refresh (and the time a real broker takes to subscribe).
    let calls = app
        .until_calls("pattern_reader", 2, PATTERN_REFRESH + SOON)
        .await;
    let mut ids: Vec<u64> = calls
        .iter()
        .map(|c| c.payload::<Job>().expect("a job").id)
        .collect();
    ids.sort();
    assert_eq!(ids, [1, 3], "the new topics, not jobs-other");
    if env.exact() {
        assert!(
            calls.iter().all(|c| c.at() == PATTERN_REFRESH),
            "read at the first refresh: {:?}",
            calls.iter().map(|c| c.at()).collect::<Vec<_>>()
        );
    }
    assert!(calls
        .iter()
        .any(|c| c.topic().ends_with("/jobs-pat-parted-partition-0")
            || c.topic().ends_with("/jobs-pat-parted-partition-1")));
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("pattern_reader").len(), 2);
    app.stop().await;
}

/// A message published before a subscription exists reaches it when it starts at Earliest,
/// not when it starts at Latest (the default); both get what comes after.
pub async fn initial_position_earliest_and_latest(env: Env) {
    let first = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    first.publish("jobs-start", job(1), vec![], None).await;
    let second = env
        .start_beside(
            &*first,
            app(|b| {
                b.include(from_earliest);
                b.include(from_latest);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    second.publish("jobs-start", job(2), vec![], None).await;
    second.until_calls("from_earliest", 2, SOON).await;
    second.until_calls("from_latest", 1, SOON).await;
    second.pass(QUIET).await;
    let ids = |handler: &str| -> Vec<u64> {
        second
            .calls_of(handler)
            .iter()
            .map(|c| c.payload::<Job>().expect("a job").id)
            .collect()
    };
    assert_eq!(ids("from_earliest"), [1, 2]);
    assert_eq!(ids("from_latest"), [2]);
    second.stop().await;
    first.stop().await;
}

/// Messages published at once, as one batch, while the overlap handlers are held: they are
/// all there when the handlers start.
async fn publish_held(app: &dyn Running, script: &Script, topic: &str, keys: &[Option<&str>]) {
    script.hold();
    let records = keys
        .iter()
        .enumerate()
        .map(|(id, key)| {
            let record = Message::new(topic.to_owned(), job(id as u64));
            match key {
                Some(key) => record.key(*key),
                None => record,
            }
        })
        .collect();
    app.publish_batch_unsettled(records).await;
}

/// How many overlap handlers started while held: waits until `expected` have, then a moment
/// more (live) for any that should not have.
async fn started_while_held(
    env: &Env,
    app: &dyn Running,
    script: &Arc<Script>,
    expected: usize,
) -> usize {
    let probe = script.clone();
    let reached = move || probe.overlap().started.len() >= expected;
    assert!(
        app.wait_for(SOON, &reached).await,
        "{expected} handlers should have started: {:?}",
        script.overlap()
    );
    if !env.exact() {
        app.pass(Duration::from_secs(1)).await;
    } else {
        // In process: give the app every chance to start more.
        let never = || false;
        app.wait_for(SOON, &never).await;
    }
    script.overlap().started.len()
}

/// Failover runs one message at a time by default, in the broker's order; with
/// `concurrency(4)` chosen explicitly four run at once.
pub async fn failover_runs_one_message_at_a_time(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let ordered = env
        .start(
            app(|b| {
                b.include(ordered_failover);
            }),
            script.clone(),
        )
        .await;
    publish_held(&*ordered, &script, "jobs-fo-order", &[None; 8]).await;
    assert_eq!(
        started_while_held(&env, &*ordered, &script, 1).await,
        1,
        "one at a time: {:?}",
        script.overlap()
    );
    script.release();
    ordered.until_calls("ordered_failover", 8, SOON).await;
    let overlap = script.overlap();
    assert_eq!(overlap.most, 1, "{overlap:?}");
    assert_eq!(overlap.started, (0..8).collect::<Vec<u64>>(), "in order");
    ordered.stop().await;

    // The control: four at once when asked for, so the check above can fail.
    let script = Script::always(ret(HandlerOutcome::ack()));
    let concurrent = env
        .start(
            app(|b| {
                b.include(concurrent_failover);
            }),
            script.clone(),
        )
        .await;
    publish_held(&*concurrent, &script, "jobs-fo-conc", &[None; 8]).await;
    assert_eq!(
        started_while_held(&env, &*concurrent, &script, 4).await,
        4,
        "{:?}",
        script.overlap()
    );
    script.release();
    concurrent.until_calls("concurrent_failover", 8, SOON).await;
    assert_eq!(script.overlap().most, 4);
    concurrent.stop().await;
}

/// Failover with four at once and `key_ordered`: one message per key at a time, each key's
/// in order, the keys side by side.
pub async fn failover_key_ordered_keeps_each_key_in_order(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(key_ordered_failover);
            }),
            script.clone(),
        )
        .await;
    let keys = [
        Some("a"),
        Some("b"),
        Some("a"),
        Some("b"),
        Some("a"),
        Some("b"),
    ];
    publish_held(&*app, &script, "jobs-fo-keys", &keys).await;
    assert_eq!(
        started_while_held(&env, &*app, &script, 2).await,
        2,
        "one per key: {:?}",
        script.overlap()
    );
    script.release();
    app.until_calls("key_ordered_failover", keys.len(), SOON)
        .await;
    let overlap = script.overlap();
    let of_key = |key: &str| -> Vec<u64> {
        overlap
            .started
            .iter()
            .copied()
            .filter(|id| keys[*id as usize] == Some(key))
            .collect()
    };
    assert_eq!(of_key("a"), [0, 2, 4]);
    assert_eq!(of_key("b"), [1, 3, 5]);
    assert_eq!(overlap.most, 2, "{overlap:?}");
    app.stop().await;
}

/// `dead_letter(reason)` on the first delivery: the message is on the dead-letter topic at
/// once, with payload, key and properties, where it came from, the reason and the error that
/// came with it; the original is acknowledged and never comes back.
pub async fn dead_letter_now_with_its_reason(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(poison).dead_letter("jobs-dlq");
                b.include(dead_letters);
            }),
            Script::by_job(|id, _| {
                if id == 7 {
                    HandlerOutcome::dead_letter("poison")
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    app.publish(
        "jobs-poison",
        job(7),
        vec![("trace".into(), "abc".into())],
        Some("k7".into()),
    )
    .await;
    let dead = app.until_calls("dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1, "one message on the dead-letter topic");
    let calls = app.calls_of("poison");
    assert_eq!(calls.len(), 1, "dead-lettered at the first delivery");
    if env.exact() {
        assert_eq!(dead[0].at(), Duration::ZERO, "at once, no wait");
    }
    assert_eq!(dead[0].payload_bytes(), calls[0].payload_bytes());
    assert_eq!(dead[0].property("trace"), Some("abc"));
    assert_eq!(dead[0].property("REAL_TOPIC"), Some(calls[0].topic()));
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    assert_eq!(dead[0].property("DEAD_LETTER_REASON"), Some("poison"));
    assert_eq!(
        dead[0].property("DEAD_LETTER_ERROR"),
        Some("job 7 cannot be processed")
    );
    if let Some(tb) = app.in_process() {
        let dlq = tb.topic("jobs-dlq");
        assert_eq!(dlq.len(), 1);
        assert_eq!(dlq[0].key.as_deref(), Some("k7"), "the key kept");
        assert_eq!(dlq[0].properties.len(), 5, "nothing else added: {dlq:?}");
    }
    if let Some(backlog) = app.backlog("jobs-poison", "poison").await {
        assert_eq!(backlog, 0, "the original acknowledged");
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("poison").len(), 1, "it never came back");
    assert_eq!(app.calls_of("dead_letters").len(), 1);
    app.stop().await;
}

/// `dead_letter(reason)` on one message of a batched entry: that message alone reaches the
/// dead-letter topic, with its index in `ORIGIN_MESSAGE_ID`; its siblings are handled once and
/// acknowledged, and the entry with them.
pub async fn dead_letter_now_leaves_batch_siblings(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(poison).dead_letter("jobs-batch-dlq");
                b.include(batch_dead_letters);
            }),
            Script::by_job(|id, _| {
                if id == 2 {
                    HandlerOutcome::dead_letter("poison")
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    let ids = app
        .publish_batch(
            (0..4)
                .map(|id| Message::new("jobs-poison", job(id)))
                .collect(),
        )
        .await;
    assert_one_entry(&ids);
    app.until_calls("batch_dead_letters", 1, SOON).await;
    app.pass(QUIET).await;
    let dead = app.calls_of("batch_dead_letters");
    assert_eq!(dead.len(), 1, "only the poisoned message: {dead:?}");
    let job2: Job = serde_json::from_slice(dead[0].payload_bytes()).unwrap();
    assert_eq!(job2.id, 2);
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(ids[2].to_string().as_str())
    );
    assert_eq!(dead[0].property("DEAD_LETTER_REASON"), Some("poison"));
    let seen = calls_per_job(&app.calls_of("poison"));
    assert_eq!(
        seen,
        (0..4).map(|id| (id, 1)).collect(),
        "each message of the entry handled once"
    );
    if let Some(backlog) = app.backlog("jobs-poison", "poison").await {
        assert_eq!(backlog, 0, "the entry acknowledged");
    }
    app.stop().await;
}

/// `dead_letter(reason)` from a handler that did not declare it, on a registration without a
/// dead-letter topic: refused (the message must not be lost), no call, and the ack timeout
/// brings it back.
pub async fn dead_letter_without_a_topic_is_refused_and_comes_back(env: Env) {
    refused_then_back_by_the_ack_timeout(env, HandlerOutcome::dead_letter("poison")).await;
}

/// `retry_later(d)` on a registration without a retry topic: refused (a wait in the service
/// would not be the durable one asked for), no call, and the ack timeout brings it back.
pub async fn retry_later_without_a_topic_is_refused_and_comes_back(env: Env) {
    refused_then_back_by_the_ack_timeout(env, HandlerOutcome::retry_later(Duration::from_secs(60)))
        .await;
}

/// The `shared` handler answers `first`, then `ack`: `first` is refused, and the ack timeout
/// brings the message back.
async fn refused_then_back_by_the_ack_timeout(env: Env, first: HandlerOutcome) {
    let app = env
        .start(
            app(|b| {
                b.include(shared);
            }),
            Script::new([ret(first)], ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    let calls = app.until_calls("shared", 2, SOON).await;
    assert_eq!(calls.len(), 2);
    let gap = calls[1].at() - calls[0].at();
    assert!(
        gap > ACK_TIMEOUT,
        "came back after {gap:?}: not by the ack timeout"
    );
    if env.exact() {
        assert_eq!(gap, ACK_TIMEOUT + TICK);
        assert_eq!(calls[0].completion(), Completion::Returned(first));
    }
    if env.exact() {
        // Live, the second delivery's acknowledgement is what `ack` checks already.
        app.pass(QUIET).await;
        assert_eq!(
            app.calls_of("shared").len(),
            2,
            "acknowledged the second time"
        );
    }
    app.stop().await;
}

/// How early Apache Pulsar may deliver a delayed message by default: its delayed-delivery
/// tick (`delayedDeliveryTickTimeMillis`, 1 s), unless the broker sets
/// `isDelayedDeliveryDeliverAtTimeStrict=true`. The live cases allow it; in process the
/// delay is exact.
const BROKER_DELAY_TICK: Duration = Duration::from_secs(1);

/// `second` came `delay` after `first` on the broker's delayed delivery: exactly in process,
/// no earlier than the broker's tick before it live.
fn assert_delayed(
    env: &Env,
    first: &ruststream_pulsar::testing::Call,
    second: &ruststream_pulsar::testing::Call,
    delay: Duration,
) {
    if env.exact() {
        env.assert_gap(first, second, delay);
    } else {
        env.assert_gap(first, second, delay.saturating_sub(BROKER_DELAY_TICK));
    }
}

/// The `retry_later` delay of the cases: an hour on the virtual clock, far beyond the ack
/// timeout; live, a few seconds (still beyond it).
fn later_delay(env: &Env) -> Duration {
    if env.exact() {
        Duration::from_secs(3600)
    } else {
        ACK_TIMEOUT + Duration::from_secs(1)
    }
}

/// `retry_later(d)`: the copy on the retry topic comes back to the same handler after exactly
/// `d` (in process; at least `d` live), `d` longer than the ack timeout, with its payload,
/// key and properties, `REAL_TOPIC`, `ORIGIN_MESSAGE_ID`, `RECONSUMETIMES` and one attempt
/// counted; the original and the copy are both acknowledged.
pub async fn retry_later_comes_back_from_the_retry_topic(env: Env) {
    let later_by = later_delay(&env);
    let app = env
        .start(
            app(|b| {
                b.include(later).retry_topic("jobs-later-retry");
            }),
            Script::by_job(move |_, attempt| {
                if attempt == 0 {
                    HandlerOutcome::retry_later(later_by)
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    app.publish(
        "jobs-later",
        job(1),
        vec![("trace".into(), "abc".into())],
        Some("k1".into()),
    )
    .await;
    if env.exact() {
        app.pass(later_by - Duration::from_nanos(1)).await;
        assert_eq!(app.calls_of("later").len(), 1, "not a nanosecond early");
        app.pass(Duration::from_nanos(1)).await;
        assert_eq!(app.calls_of("later").len(), 2, "back at the delay");
    }
    let calls = app.until_calls("later", 2, later_by + SOON).await;
    assert_eq!(calls.len(), 2);
    assert_delayed(&env, &calls[0], &calls[1], later_by);
    assert!(
        calls[1].topic().ends_with("/jobs-later-retry"),
        "from the retry topic: {}",
        calls[1].topic()
    );
    assert_eq!(calls[1].payload_bytes(), calls[0].payload_bytes());
    assert_eq!(calls[1].property("trace"), Some("abc"));
    assert_eq!(calls[1].property("REAL_TOPIC"), Some(calls[0].topic()));
    assert_eq!(
        calls[1].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    assert_eq!(calls[1].property("RECONSUMETIMES"), Some("1"));
    let delay_ms = later_by.as_millis().to_string();
    assert_eq!(calls[1].property("DELAY_TIME"), Some(delay_ms.as_str()));
    assert_eq!(calls[1].redelivery_count(), 1, "one attempt count");
    if let Some(tb) = app.in_process() {
        let copies = tb.topic("jobs-later-retry");
        assert_eq!(copies.len(), 1);
        assert_eq!(copies[0].key.as_deref(), Some("k1"), "the key kept");
    }
    for topic in ["jobs-later", "jobs-later-retry"] {
        if let Some(backlog) = app.backlog(topic, "later").await {
            assert_eq!(backlog, 0, "{topic}: acknowledged");
        }
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("later").len(), 2, "once each");
    app.stop().await;
}

/// One attempt count: a message back once by a nack, once by the ack timeout and once by
/// `retry_later` reaches the dead-letter topic after exactly `max_attempts` (4) deliveries,
/// counted 0, 1, 2, 3, with where it first came from.
pub async fn attempts_count_every_way_back(env: Env) {
    let later_by = if env.exact() {
        Duration::from_secs(60)
    } else {
        Duration::from_secs(2)
    };
    let app = env
        .start(
            app(|b| {
                b.include(later)
                    .max_attempts(n(4))
                    .dead_letter("jobs-later-dlq")
                    .retry_topic("jobs-later-retry");
                b.include(later_dead_letters);
            }),
            Script::by_job(move |_, attempt| match attempt {
                0 => HandlerOutcome::retry(),
                // Refused (not shorter than the ack timeout): back by the ack timeout.
                1 => HandlerOutcome::retry_after(ACK_TIMEOUT),
                2 => HandlerOutcome::retry_later(later_by),
                _ => HandlerOutcome::retry(),
            }),
        )
        .await;
    app.publish("jobs-later", job(3), vec![], None).await;
    let dead = app
        .until_calls("later_dead_letters", 1, later_by + ACK_TIMEOUT + SOON)
        .await;
    assert_eq!(dead.len(), 1, "on the dead-letter topic");
    let calls = app.calls_of("later");
    assert_eq!(calls.len(), 4, "exactly max_attempts deliveries in all");
    let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
    assert_eq!(
        counts,
        [0, 1, 2, 3],
        "one count across nack, ack timeout and retry topic"
    );
    if env.exact() {
        let at: Vec<Duration> = calls.iter().map(|c| c.at()).collect();
        let timed_out = ACK_TIMEOUT + TICK;
        assert_eq!(
            at,
            [
                Duration::ZERO,
                Duration::ZERO,
                timed_out,
                timed_out + later_by
            ]
        );
    }
    assert_eq!(dead[0].property("REAL_TOPIC"), Some(calls[0].topic()));
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    assert_eq!(
        dead[0].property("DEAD_LETTER_REASON"),
        Some("out-of-attempts")
    );
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("later").len(), 4);
    assert_eq!(app.calls_of("later_dead_letters").len(), 1);
    app.stop().await;
}

/// `backoff()` four times under `Backoff::exponential(250 ms, 2 s)`: the waits are 250 ms,
/// 500 ms, 1 s and 2 s (the cap), by the delivery's count, kept in the service (the cap is
/// below the 3 s ack timeout).
pub async fn backoff_waits_by_attempt(env: Env) {
    let policy = ruststream::completion::Backoff::exponential(
        Duration::from_millis(250),
        Duration::from_secs(2),
    );
    let app = env
        .start(
            app(move |b| {
                b.include(shared).backoff(policy);
            }),
            Script::by_job(|_, attempt| {
                if attempt < 4 {
                    HandlerOutcome::backoff()
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    app.publish("jobs", job(5), vec![], None).await;
    let calls = app.until_calls("shared", 5, SOON).await;
    assert_eq!(calls.len(), 5);
    let waits = [250, 500, 1000, 2000].map(Duration::from_millis);
    for (pair, wait) in calls.windows(2).zip(waits) {
        env.assert_gap(&pair[0], &pair[1], wait);
    }
    if env.exact() {
        let settled: Vec<Completion> = calls.iter().map(|c| c.completion()).collect();
        let mut expected: Vec<Completion> = waits
            .iter()
            .map(|w| Completion::Returned(HandlerOutcome::retry_after(*w)))
            .collect();
        expected.push(Completion::Returned(HandlerOutcome::ack()));
        assert_eq!(
            settled, expected,
            "each backoff() became its policy's retry_after"
        );
    }
    if env.exact() {
        app.pass(QUIET).await;
        assert_eq!(app.calls_of("shared").len(), 5);
    }
    app.stop().await;
}

/// `backoff_later()` three times under an exponential policy with a retry topic: each copy
/// comes back from the retry topic after the policy's delay for its attempt (one, two and
/// four minutes in process; 1.5, 3 and 6 seconds live, less the broker's tick).
pub async fn backoff_later_waits_by_attempt_on_the_retry_topic(env: Env) {
    let unit = if env.exact() {
        Duration::from_secs(60)
    } else {
        Duration::from_millis(1500)
    };
    let policy = ruststream::completion::Backoff::exponential(unit, unit * 60);
    let app = env
        .start(
            app(move |b| {
                b.include(later)
                    .retry_topic("jobs-later-retry")
                    .backoff(policy);
            }),
            Script::by_job(|_, attempt| {
                if attempt < 3 {
                    HandlerOutcome::backoff_later()
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    app.publish("jobs-later", job(6), vec![], None).await;
    let calls = app.until_calls("later", 4, unit * 7 + SOON).await;
    assert_eq!(calls.len(), 4);
    for (pair, wait) in calls.windows(2).zip([unit, unit * 2, unit * 4]) {
        assert_delayed(&env, &pair[0], &pair[1], wait);
    }
    let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
    assert_eq!(counts, [0, 1, 2, 3], "each copy counts one more");
    assert_eq!(calls[3].property("RECONSUMETIMES"), Some("3"));
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("later").len(), 4);
    app.stop().await;
}

/// KeyShared with ordered retries: key K's first message is retried twice (`retry()`, then
/// `retry_after(1 s)`) while K's next three arrive; the handler sees K's messages in publish
/// order (the first three times, then the others), and key B's are not delayed.
pub async fn ordered_retries_keep_each_key_in_publish_order(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(retries_in_order);
            }),
            Script::by_job(|id, attempt| match (id, attempt) {
                (1, 0) => HandlerOutcome::retry(),
                (1, 1) => HandlerOutcome::retry_after(DELAY),
                _ => HandlerOutcome::ack(),
            }),
        )
        .await;
    for (id, key) in [(1, "K"), (2, "K"), (3, "K"), (4, "K"), (10, "B"), (11, "B")] {
        app.publish_unsettled("jobs-ordered", job(id), vec![], Some(key.into()))
            .await;
    }
    let calls = app.until_calls("retries_in_order", 8, DELAY + SOON).await;
    assert_eq!(calls.len(), 8, "{calls:?}");
    let of = |ids: &[u64]| -> Vec<u64> {
        calls
            .iter()
            .map(|c| c.payload::<Job>().expect("a job").id)
            .filter(|id| ids.contains(id))
            .collect()
    };
    assert_eq!(
        of(&[1, 2, 3, 4]),
        [1, 1, 1, 2, 3, 4],
        "key K in publish order"
    );
    assert_eq!(of(&[10, 11]), [10, 11]);
    let first_of = |id: u64| {
        calls
            .iter()
            .find(|c| c.payload::<Job>().expect("a job").id == id)
            .expect("handled")
            .at()
    };
    let last_one = calls
        .iter()
        .rfind(|c| c.payload::<Job>().expect("a job").id == 1)
        .expect("handled")
        .at();
    assert!(first_of(2) >= last_one, "2 only after 1 settled");
    if env.exact() {
        assert_eq!(first_of(10), Duration::ZERO, "B not delayed");
        assert_eq!(first_of(11), Duration::ZERO, "B not delayed");
        assert_eq!(last_one, DELAY);
        assert_eq!(first_of(4), DELAY);
    } else {
        assert!(
            first_of(11) < last_one,
            "B handled while K's first message was away"
        );
    }
    app.pass(QUIET).await;
    assert_eq!(
        app.calls_of("retries_in_order").len(),
        8,
        "nothing handled twice"
    );
    if let Some(backlog) = app.backlog("jobs-ordered", "ordered").await {
        assert_eq!(backlog, 0);
    }
    app.stop().await;
}

/// Failover keeps no redelivery count and the broker does not delay there: its retry topic is
/// read through a Shared subscription of its own, so `retry_later(d)` waits `d` and counts,
/// and `max_attempts(3)` ends on the dead-letter topic after exactly three deliveries.
pub async fn failover_retry_later_waits_and_counts(env: Env) {
    let later_by = if env.exact() {
        Duration::from_secs(3600)
    } else {
        Duration::from_secs(2)
    };
    let app = env
        .start(
            app(|b| {
                b.include(failover)
                    .retry_topic("jobs-fo-retry")
                    .max_attempts(n(3))
                    .dead_letter("jobs-fo-dlq");
                b.include(failover_dead_letters);
            }),
            Script::by_job(move |_, _| HandlerOutcome::retry_later(later_by)),
        )
        .await;
    app.publish("jobs-fo", job(8), vec![], None).await;
    let dead = app
        .until_calls("failover_dead_letters", 1, later_by * 3 + SOON)
        .await;
    assert_eq!(dead.len(), 1, "on the dead-letter topic");
    let calls = app.calls_of("failover");
    assert_eq!(calls.len(), 3, "exactly max_attempts deliveries");
    let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
    assert_eq!(counts, [0, 1, 2], "durable retries count on Failover");
    for pair in calls.windows(2) {
        assert_delayed(&env, &pair[0], &pair[1], later_by);
    }
    assert!(calls[1].topic().ends_with("/jobs-fo-retry"));
    assert_eq!(dead[0].property("REAL_TOPIC"), Some(calls[0].topic()));
    if env.exact() {
        assert_eq!(
            dead[0].at(),
            later_by * 3,
            "out of attempts when the third copy came"
        );
    }
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("failover").len(), 3);
    app.stop().await;
}
