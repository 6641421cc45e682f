//! Helpers shared by the scenario tests.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use ruststream::{Instant, SubscriptionType};
use ruststream_pulsar_model::{
    Cluster, ConsumerId, ConsumerOptions, Dispatched, InitialPosition, MessageId, OutgoingMessage,
    TopicName,
};

/// `ms` milliseconds after the origin.
pub fn at(ms: u64) -> Instant {
    Instant::from_elapsed(Duration::from_millis(ms))
}

pub fn topic(name: &str) -> TopicName {
    name.parse().expect("valid topic name")
}

/// Options reading from the start of the topic.
pub fn earliest() -> ConsumerOptions {
    ConsumerOptions {
        initial_position: InitialPosition::Earliest,
        ..ConsumerOptions::default()
    }
}

pub fn named(name: &str) -> ConsumerOptions {
    ConsumerOptions {
        name: Some(name.into()),
        ..earliest()
    }
}

/// Subscribe with `options` and give the consumer `permits`.
pub fn consumer(
    cluster: &mut Cluster,
    t: &TopicName,
    kind: SubscriptionType,
    options: ConsumerOptions,
    permits: u32,
    now: Instant,
) -> ConsumerId {
    let c = cluster
        .subscribe(t, "sub", kind, options, now)
        .expect("subscribe");
    cluster.flow(c, permits, now).expect("flow");
    c
}

pub fn publish(cluster: &mut Cluster, t: &TopicName, body: &str, now: Instant) -> MessageId {
    cluster
        .publish(t, OutgoingMessage::new(body), now)
        .expect("publish")
}

pub fn publish_keyed(
    cluster: &mut Cluster,
    t: &TopicName,
    key: &str,
    body: &str,
    now: Instant,
) -> MessageId {
    cluster
        .publish(t, OutgoingMessage::new(body).with_key(key), now)
        .expect("publish")
}

/// Everything queued for `c` at `now`.
pub fn drain(cluster: &mut Cluster, c: ConsumerId, now: Instant) -> Vec<Dispatched> {
    std::iter::from_fn(|| cluster.receive(c, now)).collect()
}

pub fn bodies(deliveries: &[Dispatched]) -> Vec<String> {
    deliveries
        .iter()
        .map(|d| String::from_utf8(d.payload().to_vec()).unwrap())
        .collect()
}

pub fn counts(deliveries: &[Dispatched]) -> Vec<u32> {
    deliveries.iter().map(|d| d.redelivery_count).collect()
}
