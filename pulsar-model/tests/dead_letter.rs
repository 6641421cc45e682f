//! pulsar-rs's client-side dead-letter policy.

mod common;

use std::time::Duration;

use common::*;
use ruststream::SubscriptionType::{Exclusive, Shared};
use ruststream_pulsar_model::{
    Cluster, ConsumerOptions, DeadLetterPolicy, OutgoingMessage, ORIGIN_MESSAGE_ID, REAL_TOPIC,
};

fn policy(max: u32) -> ConsumerOptions {
    ConsumerOptions {
        dead_letter: Some(DeadLetterPolicy {
            max_redeliver_count: max,
            dead_letter_topic: topic("refunds-dlq"),
        }),
        ..earliest()
    }
}

#[test]
fn at_the_limit_the_message_moves_to_the_dead_letter_topic_with_both_properties() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let dlq = topic("refunds-dlq");
    let c = consumer(&mut cluster, &t, Shared, policy(3), 100, at(0));
    let id = cluster
        .publish(
            &t,
            OutgoingMessage::new(r#"{"id":7}"#)
                .with_property("content-type", "application/json")
                .with_key("card-1"),
            at(10),
        )
        .unwrap();
    let mut seen = Vec::new();
    while let Some(d) = cluster.receive(c, at(20)) {
        seen.push(d.redelivery_count);
        cluster.nack(c, &d.message_id, at(20)).unwrap();
    }
    assert_eq!(seen, [0, 1, 2], "the application sees exactly 3 deliveries");

    let dead = cluster.topic_messages(&dlq);
    assert_eq!(dead.len(), 1);
    let dead = &dead[0];
    assert_eq!(dead.payload(), br#"{"id":7}"#);
    assert_eq!(dead.key.as_deref(), Some("card-1"));
    assert_eq!(dead.publish_time, at(20));
    assert_eq!(
        *dead.properties(),
        [
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                REAL_TOPIC.to_owned(),
                "persistent://public/default/refunds".to_owned()
            ),
            (ORIGIN_MESSAGE_ID.to_owned(), "1:0:-1".to_owned()),
        ]
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>()
    );
    assert_eq!(dead.properties()[ORIGIN_MESSAGE_ID], id.to_string());
    // The original is acknowledged: gone from the subscription.
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
    assert_eq!(cluster.pending_for(c), 0);
    // The dead-lettered delivery took a permit, as in pulsar-rs.
    assert_eq!(cluster.permits(c), Some(96));
}

#[test]
fn expired_ack_timeouts_count_towards_the_limit() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let dlq = topic("refunds-dlq");
    let options = ConsumerOptions {
        ack_timeout: Some(Duration::from_secs(2)),
        ..policy(2)
    };
    let c = consumer(&mut cluster, &t, Shared, options, 100, at(0));
    publish(&mut cluster, &t, "m", at(0));
    assert_eq!(counts(&drain(&mut cluster, c, at(0))), [0]);
    cluster.handle_timeouts(at(2500));
    assert_eq!(counts(&drain(&mut cluster, c, at(2500))), [1]);
    assert_eq!(cluster.next_deadline(), Some(at(5000)));
    cluster.handle_timeouts(at(5000));
    assert_eq!(cluster.pending_for(c), 0);
    assert_eq!(cluster.topic_messages(&dlq).len(), 1);
    assert_eq!(cluster.topic_messages(&dlq)[0].publish_time, at(5000));
    assert_eq!(cluster.next_deadline(), None);
}

#[test]
fn the_dead_letter_topic_is_an_ordinary_topic() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let dlq = topic("refunds-dlq");
    let review = cluster
        .subscribe(&dlq, "refunds-review", Shared, earliest(), at(0))
        .unwrap();
    cluster.flow(review, 10, at(0)).unwrap();
    let c = consumer(&mut cluster, &t, Shared, policy(1), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    cluster.nack(c, &id, at(0)).unwrap();
    let got = drain(&mut cluster, review, at(0));
    assert_eq!(bodies(&got), ["m"]);
    assert_eq!(got[0].redelivery_count, 0);
    assert_eq!(got[0].properties()[ORIGIN_MESSAGE_ID], id.to_string());
}

#[test]
fn exclusive_never_reaches_the_limit() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let dlq = topic("refunds-dlq");
    let c = consumer(&mut cluster, &t, Exclusive, policy(1), 100, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    for _ in 0..5 {
        assert_eq!(counts(&drain(&mut cluster, c, at(0))), [0]);
        cluster.nack(c, &id, at(0)).unwrap();
    }
    assert!(cluster.topic_messages(&dlq).is_empty());
}

#[test]
fn a_non_persistent_dead_letter_topic_is_refused() {
    let mut cluster = Cluster::new();
    let options = ConsumerOptions {
        dead_letter: Some(DeadLetterPolicy {
            max_redeliver_count: 1,
            dead_letter_topic: topic("non-persistent://public/default/dlq"),
        }),
        ..earliest()
    };
    assert!(cluster
        .subscribe(&topic("refunds"), "sub", Shared, options, at(0))
        .is_err());
}
