//! Subscriptions and topics: the default subscription, Exclusive and Failover redelivery,
//! several topics, patterns and the initial position.

use super::*;

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
