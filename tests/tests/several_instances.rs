//! Several instances of a service on one subscription, in process: `TestApp::alongside` runs a
//! second app on the first one's in-process Pulsar and clock, `TestApp::kill` ends one as a
//! process that dies does. Run on tokio, async-std and smol.

use ruststream::message::Message;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use ruststream::runtime::Spawn;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::{Call, TestApp};
use ruststream_tests::scenario::*;

async fn instance(
    spawn: &Arc<dyn Spawn>,
    beside: Option<&TestApp>,
    mount: fn(&mut ruststream_pulsar::PulsarBroker<Plan>),
    step: HandlerOutcome,
) -> TestApp {
    let builder =
        TestApp::with_state(app(mount), Plan::new(Script::always(ret(step)))).on(spawn.clone());
    match beside {
        Some(other) => builder.alongside(other),
        None => builder,
    }
    .await
    .expect("the instance starts")
}

/// Two instances of the app mounted by `mount`, the second beside the first, answering
/// `first` and `second` to every delivery.
async fn pair(
    spawn: &Arc<dyn Spawn>,
    mount: fn(&mut ruststream_pulsar::PulsarBroker<Plan>),
    first: HandlerOutcome,
    second: HandlerOutcome,
) -> (TestApp, TestApp) {
    let a = instance(spawn, None, mount, first).await;
    let b = instance(spawn, Some(&a), mount, second).await;
    (a, b)
}

fn ids(calls: &[Call]) -> BTreeSet<u64> {
    calls
        .iter()
        .map(|c| c.payload::<Job>().expect("a job").id)
        .collect()
}

const HOLD: HandlerOutcome = HandlerOutcome::RetryAfter(DELAY);

/// Shared: the instance that dies hands its unacknowledged messages (here all in a
/// `retry_after` wait) to the other at once, keeping their count; all end acknowledged.
async fn shared_killed_instance_hands_its_messages_to_the_other(spawn: Arc<dyn Spawn>) {
    let (a, b) = pair(
        &spawn,
        |b| {
            b.include(shared);
        },
        HOLD,
        HandlerOutcome::ack(),
    )
    .await;
    for id in 0..10 {
        a.publish(Message::json("jobs", &Job { id }).unwrap())
            .await
            .unwrap();
    }
    let held = ids(&a.calls_of("shared"));
    let acked = ids(&b.calls_of("shared"));
    assert!(
        !held.is_empty() && !acked.is_empty(),
        "both instances took messages"
    );
    assert_eq!(held.len() + acked.len(), 10);

    a.kill().await.unwrap();
    let after = b.calls_of("shared");
    assert_eq!(
        ids(&after),
        (0..10).collect(),
        "the killed instance's messages reached the other"
    );
    for call in after
        .iter()
        .filter(|c| held.contains(&c.payload::<Job>().unwrap().id))
    {
        assert_eq!(call.at(), Duration::ZERO, "at once, not after a timeout");
        assert_eq!(
            call.redelivery_count(),
            0,
            "a closed consumer's messages keep their count"
        );
    }
    assert_eq!(b.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    b.advance(ACK_TIMEOUT * 3).await.unwrap();
    assert_eq!(b.calls_of("shared").len(), 10, "nothing more");
    b.stop().await;
}

/// Shared: an instance stopped gracefully abandons its waits; their messages go to the other.
async fn shared_stopped_instance_hands_its_waits_to_the_other(spawn: Arc<dyn Spawn>) {
    let (a, b) = pair(
        &spawn,
        |b| {
            b.include(shared);
        },
        HOLD,
        HandlerOutcome::ack(),
    )
    .await;
    for id in 0..6 {
        b.publish(Message::json("jobs", &Job { id }).unwrap())
            .await
            .unwrap();
    }
    let held = ids(&a.calls_of("shared"));
    assert!(!held.is_empty());
    a.stop().await;
    b.settle().await.unwrap();
    assert_eq!(ids(&b.calls_of("shared")), (0..6).collect());
    assert_eq!(b.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    b.stop().await;
}

/// Failover: one instance receives; when it dies, the standby takes over from the first
/// unacknowledged message, with count 0.
async fn failover_standby_takes_over(spawn: Arc<dyn Spawn>) {
    let (a, b) = pair(
        &spawn,
        |b| {
            b.include(failover);
        },
        HOLD,
        HandlerOutcome::ack(),
    )
    .await;
    for id in 0..4 {
        a.publish(Message::json("jobs-fo", &Job { id }).unwrap())
            .await
            .unwrap();
    }
    assert_eq!(
        ids(&a.calls_of("failover")),
        (0..4).collect(),
        "the active one takes all"
    );
    assert!(b.calls_of("failover").is_empty(), "the standby takes none");
    a.kill().await.unwrap();
    let taken = b.calls_of("failover");
    assert_eq!(ids(&taken), (0..4).collect());
    assert!(taken
        .iter()
        .all(|c| c.redelivery_count() == 0 && c.at() == Duration::ZERO));
    assert_eq!(b.pulsar().backlog("jobs-fo", "failover").unwrap(), Some(0));
    b.stop().await;
}

/// Exclusive: a second instance is refused at startup, with an error that says so.
async fn exclusive_refuses_a_second_instance(spawn: Arc<dyn Spawn>) {
    let a = instance(
        &spawn,
        None,
        |b| {
            b.include(exclusive);
        },
        HandlerOutcome::ack(),
    )
    .await;
    let refused = TestApp::with_state(
        app(|b| {
            b.include(exclusive);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn.clone())
    .alongside(&a)
    .await
    .expect_err("a second Exclusive consumer is refused")
    .to_string();
    assert!(
        refused.contains("Exclusive consumer is already connected to subscription `exclusive`"),
        "{refused}"
    );
    // The first instance is unaffected.
    a.publish(Message::json("jobs-ex", &Job { id: 1 }).unwrap())
        .await
        .unwrap();
    assert_eq!(a.calls_of("exclusive").len(), 1);
    a.stop().await;
}

/// KeyShared: each key is handled by one instance only, and every message is handled.
async fn key_shared_keeps_each_key_on_one_instance(spawn: Arc<dyn Spawn>) {
    let (a, b) = pair(
        &spawn,
        |b| {
            b.include(key_shared);
        },
        HandlerOutcome::ack(),
        HandlerOutcome::ack(),
    )
    .await;
    for id in 0..40 {
        let payload = format!("{{\"id\":{id}}}").into_bytes();
        a.publish(Message::new("jobs-ks", payload).key(format!("key-{}", id % 8)))
            .await
            .unwrap();
    }
    let keys_of = |tb: &TestApp| -> BTreeMap<u64, ()> {
        tb.calls_of("key_shared")
            .iter()
            .map(|c| (c.payload::<Job>().unwrap().id % 8, ()))
            .collect()
    };
    let (ka, kb) = (keys_of(&a), keys_of(&b));
    assert!(!ka.is_empty() && !kb.is_empty(), "both instances own keys");
    assert!(
        ka.keys().all(|k| !kb.contains_key(k)),
        "no key on both: {ka:?} {kb:?}"
    );
    let all = a.calls_of("key_shared").len() + b.calls_of("key_shared").len();
    assert_eq!(all, 40);
    a.stop().await;
    b.stop().await;
}

ruststream_tests::on_every_runtime!(
    shared_killed_instance_hands_its_messages_to_the_other,
    shared_stopped_instance_hands_its_waits_to_the_other,
    failover_standby_takes_over,
    exclusive_refuses_a_second_instance,
    key_shared_keeps_each_key_on_one_instance,
);
