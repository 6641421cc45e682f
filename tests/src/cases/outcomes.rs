//! What each outcome a handler returns does: ack, drop, retry, an error, `retry_after`,
//! and the outcomes a registration refuses (the ack timeout brings the message back).

use super::*;

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
