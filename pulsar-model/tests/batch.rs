//! Batched entries: what a batching producer's messages meet on a broker that acknowledges by
//! entry (Apache Pulsar 4.0.7's default) and pulsar-rs 6.9, which sends no batch-index ack set.

mod common;

use std::time::Duration;

use common::*;
use ruststream::SubscriptionType::{Exclusive, Shared};
use ruststream_pulsar_model::{
    Cluster, ConsumerOptions, DeadLetterPolicy, OutgoingMessage, Redelivery, ORIGIN_MESSAGE_ID,
};

fn batch(bodies: &[&str]) -> Vec<OutgoingMessage> {
    bodies.iter().map(|b| OutgoingMessage::new(*b)).collect()
}

#[test]
fn a_batch_is_one_entry_whose_messages_carry_their_index() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 100, at(0));
    let ids = cluster
        .publish_batch(&t, batch(&["a", "b", "c"]), at(0))
        .unwrap();
    assert_eq!(
        ids.iter().map(|id| id.to_string()).collect::<Vec<_>>(),
        ["1:0:-1:0", "1:0:-1:1", "1:0:-1:2"]
    );
    let got = drain(&mut cluster, c, at(0));
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|d| d.batch_size == Some(3)));
    assert_eq!(cluster.backlog(&t, "sub"), Some(1), "one entry");
    // The next single message is the next entry.
    let single = cluster
        .publish(&t, OutgoingMessage::new("d"), at(0))
        .unwrap();
    assert_eq!(single.to_string(), "1:1:-1");
}

#[test]
fn acking_one_message_of_a_batch_acknowledges_the_whole_entry() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 100, at(0));
    let ids = cluster
        .publish_batch(&t, batch(&["a", "b"]), at(0))
        .unwrap();
    drain(&mut cluster, c, at(0));
    cluster.ack(c, &ids[0], at(1)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
    // The sibling's negative acknowledgement then finds nothing to redeliver: this is how a
    // client that acks by message id loses a batched message.
    assert_eq!(
        cluster.nack(c, &ids[1], at(2)).unwrap(),
        Redelivery::Ignored
    );
    assert!(drain(&mut cluster, c, at(2)).is_empty());
}

#[test]
fn a_nack_redelivers_every_message_of_the_entry_with_the_entrys_count() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 100, at(0));
    let ids = cluster
        .publish_batch(&t, batch(&["a", "b", "c"]), at(0))
        .unwrap();
    drain(&mut cluster, c, at(0));
    assert_eq!(
        cluster.nack(c, &ids[1], at(1)).unwrap(),
        Redelivery::Scheduled
    );
    let again = drain(&mut cluster, c, at(1));
    assert_eq!(
        again
            .iter()
            .map(|d| (d.message_id, d.redelivery_count))
            .collect::<Vec<_>>(),
        [(ids[0], 1), (ids[1], 1), (ids[2], 1)]
    );
}

#[test]
fn the_ack_timeout_of_one_message_redelivers_its_whole_entry() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let options = ConsumerOptions {
        ack_timeout: Some(Duration::from_secs(1)),
        ..earliest()
    };
    let c = consumer(&mut cluster, &t, Shared, options, 100, at(0));
    cluster
        .publish_batch(&t, batch(&["a", "b"]), at(0))
        .unwrap();
    assert_eq!(drain(&mut cluster, c, at(0)).len(), 2);
    // Neither is acknowledged: both ids expire on the same tick and the entry comes back once.
    assert_eq!(cluster.next_deadline(), Some(at(1500)));
    let again = drain(&mut cluster, c, at(1500));
    assert_eq!(again.len(), 2);
    assert!(again.iter().all(|d| d.redelivery_count == 1));
}

#[test]
fn on_exclusive_a_nack_rewinds_and_the_batch_comes_again_uncounted() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Exclusive, earliest(), 100, at(0));
    let ids = cluster
        .publish_batch(&t, batch(&["a", "b"]), at(0))
        .unwrap();
    drain(&mut cluster, c, at(0));
    assert_eq!(
        cluster.nack(c, &ids[0], at(1)).unwrap(),
        Redelivery::Rewound
    );
    let again = drain(&mut cluster, c, at(1));
    assert_eq!(
        again
            .iter()
            .map(|d| (d.message_id, d.redelivery_count))
            .collect::<Vec<_>>(),
        [(ids[0], 0), (ids[1], 0)]
    );
}

#[test]
fn pulsar_rs_dead_letters_every_message_of_an_entry_at_the_limit() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let dlq = topic("orders-dlq");
    let options = ConsumerOptions {
        dead_letter: Some(DeadLetterPolicy {
            max_redeliver_count: 1,
            dead_letter_topic: dlq.clone(),
        }),
        ..earliest()
    };
    let c = consumer(&mut cluster, &t, Shared, options, 100, at(0));
    let ids = cluster
        .publish_batch(&t, batch(&["a", "b"]), at(0))
        .unwrap();
    drain(&mut cluster, c, at(0));
    cluster.nack(c, &ids[1], at(1)).unwrap();
    // Count 1 reaches the limit: pulsar-rs moves both messages, the one the application
    // would have acknowledged included, and acknowledges the entry.
    assert!(drain(&mut cluster, c, at(1)).is_empty());
    let dead = cluster.topic_messages(&dlq);
    assert_eq!(
        dead.iter()
            .map(|m| m.properties()[ORIGIN_MESSAGE_ID].as_str())
            .collect::<Vec<_>>(),
        ["1:0:-1:0", "1:0:-1:1"]
    );
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
}

#[test]
fn a_batch_takes_a_permit_per_message() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 5, at(0));
    cluster
        .publish_batch(&t, batch(&["a", "b", "c"]), at(0))
        .unwrap();
    assert_eq!(cluster.permits(c), Some(2));
    // With fewer permits left than the next batch holds, the broker still sends it whole.
    cluster
        .publish_batch(&t, batch(&["d", "e", "f"]), at(0))
        .unwrap();
    assert_eq!(cluster.permits(c), Some(0));
    assert_eq!(drain(&mut cluster, c, at(0)).len(), 6);
}
