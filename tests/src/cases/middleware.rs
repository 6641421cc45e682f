//! Layers around handlers and publishes (`docs/middleware.md`): one at each scope, the
//! guide's three examples.

use super::*;
use crate::layers::{RequireTenant, Stamp, Timing, NO_TENANT};

/// A timing layer on the broker sees every call of every handler, with its outcome; on the
/// virtual clock a call that does not wait takes no time.
pub async fn a_timing_layer_times_every_call(env: Env) {
    let timing = Timing::default();
    let layer = timing.clone();
    let app = env
        .start(
            layered_app(
                |app| app,
                |broker| broker.layer(layer),
                |b| {
                    b.include(shared);
                },
            ),
            Script::by_job(|id, _| match id {
                2 => HandlerOutcome::drop(),
                _ => HandlerOutcome::ack(),
            }),
        )
        .await;
    app.publish("jobs", job(1), vec![], None).await;
    app.publish("jobs", job(2), vec![], None).await;
    app.until_calls("shared", 2, SOON).await;
    app.pass(QUIET).await;
    let seen = timing.seen();
    let outcomes: Vec<_> = seen.iter().map(|t| (t.handler, t.outcome)).collect();
    assert_eq!(
        outcomes,
        [("shared", "ack"), ("shared", "drop")],
        "{seen:?}"
    );
    if env.exact() {
        assert!(seen.iter().all(|t| t.took == Duration::ZERO), "{seen:?}");
    }
    app.stop().await;
}

/// A layer on one registration dead-letters the messages that lack a `tenant` property
/// without calling the handler; the others reach it.
pub async fn a_layer_dead_letters_what_lacks_a_tenant(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(shared)
                    .max_attempts(n(3))
                    .dead_letter("jobs-dlq")
                    .layer(RequireTenant);
                b.include(dead_letters);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs", job(1), vec![("tenant".into(), "acme".into())], None)
        .await;
    app.publish("jobs", job(2), vec![], None).await;
    let dead = app.until_calls("dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1, "the message without a tenant, copied");
    assert_eq!(dead[0].payload::<Job>().expect("a job").id, 2);
    assert_eq!(dead[0].property("DEAD_LETTER_REASON"), Some(NO_TENANT));
    app.pass(QUIET).await;
    let calls = app.calls_of("shared");
    assert_eq!(
        calls.len(),
        1,
        "only the job with a tenant was handled: {calls:?}"
    );
    assert_eq!(calls[0].property("tenant"), Some("acme"));
    assert_eq!(app.calls_of("dead_letters").len(), 1, "copied once");
    if let Some(backlog) = app.backlog("jobs", "shared").await {
        assert_eq!(backlog, 0, "both acknowledged");
    }
    app.stop().await;
}

/// A publish layer on the app adds a property to every message a handler publishes.
pub async fn a_publish_layer_stamps_every_message(env: Env) {
    let app = env
        .start(
            layered_app(
                |app| app.layer(Stamp("scripted")),
                |broker| broker,
                |b| {
                    b.include(forwarder);
                    b.include(outbox);
                },
            ),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    app.publish("jobs-fwd", job(42), vec![], None).await;
    let out = app.until_calls("outbox", 1, SOON).await;
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].property("origin"), Some("scripted"), "{:?}", out[0]);
    app.stop().await;
}
