//! Deliveries a handler cannot start on: a payload that does not decode, and a message the
//! client cannot read.

use super::*;

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
            // Both steps, as the guide asks; what cannot decode goes at once, long before
            // the limit.
            b.include(no_timeout)
                .max_attempts(n(5))
                .dead_letter("jobs-nt-dlq");
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
