//! Retries that wait: `retry_later` on the retry topic, one attempt count for every way back,
//! backoff policies in the service and on the retry topic.

use super::*;

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
