//! The attempt limit and the dead-letter topic: `max_attempts`, what counts as an attempt,
//! and `dead_letter(reason)`.

use super::*;

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
