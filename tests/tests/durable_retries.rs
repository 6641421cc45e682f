//! A durable `retry_later` survives the service: killed (`TestApp::kill`, as SIGKILL) while the
//! copy waits on the retry topic and started again, the message still comes back at exactly
//! the delay, once. Run on tokio, async-std and smol, on the virtual clock.

use std::sync::Arc;
use std::time::Duration;

use ruststream::message::Message;
use ruststream::runtime::Spawn;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::TestApp;
use ruststream_tests::scenario::*;

const HOUR: Duration = Duration::from_secs(3600);

fn mount(b: &mut ruststream_pulsar::PulsarBroker<Plan>) {
    b.include(later).retry_topic("jobs-later-retry");
}

/// The first instance answers `retry_later(1 h)`, the second `ack`.
async fn killed_during_the_wait_still_arrives_at_the_delay_once(spawn: Arc<dyn Spawn>) {
    let first = TestApp::with_state(
        app(mount),
        Plan::new(Script::always(ret(HandlerOutcome::retry_later(HOUR)))),
    )
    .on(spawn.clone())
    .await
    .expect("the first instance starts");
    first
        .publish(Message::json("jobs-later", &Job { id: 1 }).unwrap())
        .await
        .unwrap();
    assert_eq!(first.calls_of("later").len(), 1);
    first.advance(Duration::from_secs(600)).await.unwrap();
    assert_eq!(first.calls_of("later").len(), 1, "waiting on the broker");
    // Made before the kill, to start on the same Pulsar and clock after it.
    let second = TestApp::with_state(
        app(mount),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn.clone())
    .alongside(&first);
    let pulsar = first.pulsar().clone();
    first.kill().await.unwrap();
    let second = second.await.expect("the second instance starts");
    assert_eq!(second.now(), Duration::from_secs(600));
    second
        .advance(HOUR - Duration::from_secs(600) - Duration::from_nanos(1))
        .await
        .unwrap();
    assert!(
        second.calls_of("later").is_empty(),
        "not a nanosecond early"
    );
    second.advance(Duration::from_nanos(1)).await.unwrap();
    let calls = second.calls_of("later");
    assert_eq!(calls.len(), 1, "once, from the retry topic: {calls:?}");
    assert_eq!(calls[0].at(), HOUR, "at exactly the delay");
    assert!(calls[0].topic().ends_with("/jobs-later-retry"));
    assert_eq!(calls[0].redelivery_count(), 1);
    second.advance(Duration::from_secs(3 * 3600)).await.unwrap();
    assert_eq!(second.calls_of("later").len(), 1, "and never again");
    for topic in ["jobs-later", "jobs-later-retry"] {
        assert_eq!(
            pulsar.backlog(topic, "later").unwrap(),
            Some(0),
            "{topic}: every message acknowledged"
        );
    }
    second.stop().await;
}

/// Killed after the copy was published but before the original was acknowledged (the
/// in-flight window the guarantee allows a duplicate for): nothing is lost, and what comes
/// back twice is counted.
async fn killed_before_the_acknowledgement_loses_nothing(spawn: Arc<dyn Spawn>) {
    let first = TestApp::with_state(
        app(mount),
        Plan::new(Script::always(ret(HandlerOutcome::retry_later(HOUR)))),
    )
    .on(spawn.clone())
    .await
    .expect("the first instance starts");
    let second = TestApp::with_state(
        app(mount),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn.clone())
    .alongside(&first);
    first
        .publish(Message::json("jobs-later", &Job { id: 2 }).unwrap())
        .await
        .unwrap();
    first.kill().await.unwrap();
    let second = second.await.expect("the second instance starts");
    second.advance(2 * HOUR).await.unwrap();
    let calls = second.calls_of("later");
    assert!(!calls.is_empty(), "lost");
    assert!(
        calls.len() <= 2,
        "at most the original and its copy: {calls:?}"
    );
    second.stop().await;
}

ruststream_tests::on_every_runtime!(
    killed_during_the_wait_still_arrives_at_the_delay_once,
    killed_before_the_acknowledgement_loses_nothing,
);
