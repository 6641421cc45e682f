//! What only the in-process Pulsar can show, on tokio, async-std and smol: the bound that
//! stops a step which never ends on the virtual clock, and the registrations refused at
//! startup with the core's texts.
//!
//! The completion table and the retry and dead-letter rules are behaviour cases
//! (`tests/src/cases/`), run in process by `cases_in_process.rs` and on real brokers by
//! `live.rs`.

use ruststream::message::Message;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use ruststream::runtime::Spawn;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::{TestApp, TestPublishError};
use ruststream_tests::scenario::*;

fn n(v: u32) -> NonZeroU32 {
    NonZeroU32::new(v).unwrap()
}

// ---- The step bound ----------------------------------------------------------------------

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
    .max_handled_per_instant(500)
    .await
    .expect("the scripted app starts");
    let error = tb
        .publish(Message::json("jobs-ex", &Job { id: 1 }).unwrap())
        .await
        .expect_err("no progress at t=0");
    let message = error.to_string();
    assert!(message.starts_with("no progress at t=0ns: "), "{message}");
    assert!(
        message.contains("`exclusive` on subscription `exclusive` with message 1:0:-1"),
        "{message}"
    );
    let TestPublishError::Stalled(stuck) = error else {
        panic!("the step fails with Stalled: {error:?}")
    };
    // The step gives up once past the bound. How far past depends on how many handler calls
    // the runtime's other worker threads made before the step noticed, so only the lower
    // side is exact.
    assert!(stuck.handled > 500, "gave up before the bound: {stuck:?}");
    assert_eq!(tb.now(), Duration::ZERO);
    // `advance` says the same instead of looping.
    let again = tb
        .advance(Duration::from_secs(1))
        .await
        .expect_err("still stuck");
    let last = again.last_call.expect("the last call is named");
    assert_eq!(last.subscription, "exclusive");
    assert_eq!(last.message_id.to_string(), "1:0:-1");
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
    let declared_without_topic = start_error(
        spawn.clone(),
        app(|b| {
            b.include(poison);
        }),
    )
    .await;
    assert_eq!(
        declared_without_topic,
        "the service cannot start: 1 invalid pulsar registration\n  - handler `poison` declares \
         that it dead-letters messages (`#[subscriber(.., dead_letter)]`), but its registration \
         names no dead-letter topic, so such a message would have nowhere to go: add \
         `.dead_letter(\"<topic>\")` after `include(poison)`, or remove `dead_letter` from its \
         #[subscriber]"
    );
    // The guide: a topic without a limit stops the service too, naming the missing step...
    let topic_only = start_error(
        spawn.clone(),
        app(|b| {
            b.include(shared).dead_letter("x");
        }),
    )
    .await;
    assert_eq!(
        topic_only,
        "the service cannot start: 1 invalid pulsar registration\n  - subscription `shared` \
         declares dead_letter(\"x\") but no max_attempts, so no message would ever run out of \
         attempts and reach it: add `.max_attempts(<n>)` before `.dead_letter(..)`; or, if the \
         topic is for the messages the handler dead-letters itself, declare \
         `#[subscriber(.., dead_letter)]` on the handler; or remove `.dead_letter(..)`"
    );
    // ... unless the handler declares `dead_letter`: then the topic alone is what it needs.
    let declared = TestApp::with_state(
        app(|b| {
            b.include(poison).dead_letter("jobs-dlq");
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn.clone())
    .await
    .expect("a declared handler's topic alone starts");
    declared.stop().await;
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
             and KeyShared count redeliveries); make the subscription Shared or KeyShared, \
             declare a retry topic (`.retry_topic(..)`, whose durable retries count on every \
             type), or remove `.max_attempts(..)`"
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
            b.include(exclusive).max_attempts(n(5));
        }),
    )
    .await;
    assert!(
        both.starts_with("the service cannot start: 2 invalid pulsar registrations"),
        "{both}"
    );
    let retry_on_pattern = start_error(
        spawn.clone(),
        app(|b| {
            b.include(pattern_reader).retry_topic("jobs-retry");
        }),
    )
    .await;
    assert!(
        retry_on_pattern
            .contains("a retry topic (persistent://public/default/jobs-retry) on the pattern"),
        "{retry_on_pattern}"
    );
    let backoff_past_the_ack_timeout = start_error(
        spawn.clone(),
        app(|b| {
            b.include(shared)
                .backoff(ruststream::completion::Backoff::exponential(
                    Duration::from_secs(1),
                    Duration::from_secs(10),
                ));
        }),
    )
    .await;
    assert!(
        backoff_past_the_ack_timeout.ends_with(
            "handler `shared`: the backoff's cap 10s is not shorter than the ack timeout 3s, so \
             `backoff()`, whose wait is kept in the service, would be refused once the delay \
             reaches it (the client would redeliver the message first); lower the cap below \
             3s, raise the ack timeout above it, or declare a retry topic (`.retry_topic(..)`) \
             and return `backoff_later()`, whose wait the broker keeps"
        ),
        "{backoff_past_the_ack_timeout}"
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
    always_retry_on_exclusive_fails_the_step_instead_of_hanging,
    invalid_registrations_fail_at_startup,
);
