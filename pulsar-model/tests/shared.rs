//! Shared subscriptions: round-robin, nack counting, closing, permits.

mod common;

use common::*;
use ruststream::SubscriptionType::{self, Shared};
use ruststream_pulsar_model::{Acknowledgement, Cluster, ModelError, Redelivery};

#[test]
fn nack_redelivers_at_once_with_count_one() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    let first = cluster.receive(c, at(0)).unwrap();
    assert_eq!((first.message_id, first.redelivery_count), (id, 0));
    assert_eq!(cluster.nack(c, &id, at(5)), Ok(Redelivery::Scheduled));
    let again = cluster.receive(c, at(5)).unwrap();
    assert_eq!((again.message_id, again.redelivery_count), (id, 1));
    assert_eq!(cluster.pending_for(c), 0);
}

#[test]
fn three_nacks_count_three() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    let mut seen = vec![cluster.receive(c, at(0)).unwrap().redelivery_count];
    for _ in 0..3 {
        cluster.nack(c, &id, at(0)).unwrap();
        seen.push(cluster.receive(c, at(0)).unwrap().redelivery_count);
    }
    assert_eq!(seen, [0, 1, 2, 3]);
}

#[test]
fn messages_go_round_robin_over_consumers_with_permits() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let b = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    for i in 0..4 {
        publish(&mut cluster, &t, &format!("m{i}"), at(0));
    }
    assert_eq!(bodies(&drain(&mut cluster, a, at(0))), ["m0", "m2"]);
    assert_eq!(bodies(&drain(&mut cluster, b, at(0))), ["m1", "m3"]);
}

#[test]
fn a_consumer_without_permits_is_skipped() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 1, at(0));
    let b = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    for i in 0..3 {
        publish(&mut cluster, &t, &format!("m{i}"), at(0));
    }
    assert_eq!(bodies(&drain(&mut cluster, a, at(0))), ["m0"]);
    assert_eq!(bodies(&drain(&mut cluster, b, at(0))), ["m1", "m2"]);
}

#[test]
fn flow_permits_bound_what_is_sent() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 2, at(0));
    for i in 0..5 {
        publish(&mut cluster, &t, &format!("m{i}"), at(0));
    }
    assert_eq!(cluster.pending_for(c), 2);
    assert_eq!(cluster.permits(c), Some(0));
    // Receiving does not give permits back; only flow does.
    drain(&mut cluster, c, at(0));
    assert_eq!(cluster.pending_for(c), 0);
    cluster.flow(c, 1, at(0)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["m2"]);
    cluster.flow(c, 10, at(0)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["m3", "m4"]);
    assert_eq!(cluster.permits(c), Some(8));
}

#[test]
fn a_closed_consumers_unacknowledged_messages_go_to_the_other_without_counting() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let b = consumer(&mut cluster, &t, Shared, earliest(), 0, at(0));
    let ids: Vec<_> = (0..3)
        .map(|i| publish(&mut cluster, &t, &format!("m{i}"), at(0)))
        .collect();
    // A received all three (B had no permits), acknowledged one, nacked one.
    let got = drain(&mut cluster, a, at(0));
    assert_eq!(got.len(), 3);
    cluster.ack(a, &ids[0], at(0)).unwrap();
    cluster.nack(a, &ids[2], at(0)).unwrap();
    assert_eq!(counts(&drain(&mut cluster, a, at(0))), [1]);

    cluster.close(a, at(1)).unwrap();
    cluster.flow(b, 10, at(1)).unwrap();
    let moved = drain(&mut cluster, b, at(1));
    assert_eq!(bodies(&moved), ["m1", "m2"]);
    // m1 was never redelivered; m2 keeps the count it had: closing does not count.
    assert_eq!(counts(&moved), [0, 1]);
}

#[test]
fn replayed_messages_are_dealt_in_round_robin_batches_of_twenty() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 100, at(0));
    for i in 0..25 {
        publish(&mut cluster, &t, &format!("m{i}"), at(0));
    }
    assert_eq!(cluster.pending_for(a), 25);
    let b = consumer(&mut cluster, &t, Shared, earliest(), 0, at(0));
    let c = consumer(&mut cluster, &t, Shared, earliest(), 0, at(0));
    // Give permits without dispatching anything (nothing is left to send yet).
    cluster.flow(b, 30, at(0)).unwrap();
    cluster.flow(c, 30, at(0)).unwrap();
    cluster.close(a, at(0)).unwrap();
    // One read of the 25 replayed entries, dealt 20 at most per consumer. The round-robin
    // position is not reset when consumers come and go: it stood at index 1 (C).
    assert_eq!(cluster.pending_for(c), 20);
    assert_eq!(cluster.pending_for(b), 5);
    let first: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), first);
    assert_eq!(
        bodies(&drain(&mut cluster, b, at(0))),
        ["m20", "m21", "m22", "m23", "m24"]
    );
}

#[test]
fn when_the_last_consumer_leaves_the_counts_are_forgotten() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    cluster.nack(a, &id, at(0)).unwrap();
    assert_eq!(counts(&drain(&mut cluster, a, at(0))), [0, 1]);
    cluster.close(a, at(0)).unwrap();
    let b = consumer(&mut cluster, &t, Shared, earliest(), 10, at(1));
    let again = drain(&mut cluster, b, at(1));
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].message_id, id);
    assert_eq!(again[0].redelivery_count, 0);
}

#[test]
fn the_subscription_outlives_its_consumers() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    cluster.close(a, at(0)).unwrap();
    publish(&mut cluster, &t, "while away", at(1));
    assert_eq!(cluster.backlog(&t, "sub"), Some(1));
    // A Latest consumer joining an existing subscription still gets its backlog.
    let b = consumer(
        &mut cluster,
        &t,
        Shared,
        ruststream_pulsar_model::ConsumerOptions::default(),
        10,
        at(2),
    );
    assert_eq!(bodies(&drain(&mut cluster, b, at(2))), ["while away"]);
}

#[test]
fn a_new_subscription_starts_at_latest_by_default_as_pulsar_rs_does() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    publish(&mut cluster, &t, "before", at(0));
    let latest = cluster
        .subscribe(&t, "late", Shared, Default::default(), at(1))
        .unwrap();
    let first = cluster
        .subscribe(&t, "early", Shared, earliest(), at(1))
        .unwrap();
    cluster.flow(latest, 10, at(1)).unwrap();
    cluster.flow(first, 10, at(1)).unwrap();
    publish(&mut cluster, &t, "after", at(2));
    assert_eq!(bodies(&drain(&mut cluster, latest, at(2))), ["after"]);
    assert_eq!(
        bodies(&drain(&mut cluster, first, at(2))),
        ["before", "after"]
    );
}

#[test]
fn acking_through_another_consumer_acknowledges_the_message() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let b = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    assert_eq!(cluster.pending_for(a), 1);
    assert_eq!(
        cluster.ack(b, &id, at(0)),
        Ok(Acknowledgement::Acknowledged)
    );
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
    // A's later nack finds nothing pending: ignored, nothing comes back.
    drain(&mut cluster, a, at(0));
    assert_eq!(cluster.nack(a, &id, at(0)), Ok(Redelivery::Ignored));
    assert_eq!(cluster.pending_for(a) + cluster.pending_for(b), 0);
    assert_eq!(cluster.ack(a, &id, at(0)), Ok(Acknowledgement::Ignored));
}

#[test]
fn nack_of_a_message_pending_on_another_consumer_is_ignored() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let b = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    assert_eq!(cluster.pending_for(a), 1);
    assert_eq!(cluster.nack(b, &id, at(0)), Ok(Redelivery::Ignored));
    assert_eq!(cluster.pending_for(a) + cluster.pending_for(b), 1);
}

#[test]
fn calls_on_an_unknown_or_closed_consumer_are_errors() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    cluster.close(c, at(0)).unwrap();
    let gone = ModelError::UnknownConsumer { consumer: c };
    assert_eq!(cluster.ack(c, &id, at(0)), Err(gone.clone()));
    assert_eq!(cluster.nack(c, &id, at(0)), Err(gone.clone()));
    assert_eq!(cluster.flow(c, 1, at(0)), Err(gone.clone()));
    assert_eq!(cluster.close(c, at(0)), Err(gone.clone()));
    assert_eq!(cluster.receive(c, at(0)), None);
    assert_eq!(cluster.pending_for(c), 0);
    assert!(gone.to_string().contains(&c.to_string()), "{gone}");
}

#[test]
fn a_different_type_is_refused_while_consumers_are_connected() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
    let err = cluster
        .subscribe(&t, "sub", SubscriptionType::Failover, earliest(), at(0))
        .unwrap_err();
    assert!(matches!(
        err,
        ModelError::SubscriptionTypeMismatch {
            existing: Shared,
            requested: SubscriptionType::Failover,
            ..
        }
    ));
    assert!(err.to_string().contains("different type"), "{err}");
    // With no consumer connected, the type may change.
    cluster.close(a, at(0)).unwrap();
    cluster
        .subscribe(&t, "sub", SubscriptionType::Failover, earliest(), at(0))
        .unwrap();
}

#[test]
fn non_persistent_topics_are_refused() {
    let mut cluster = Cluster::new();
    let t = topic("non-persistent://public/default/x");
    let err = cluster
        .subscribe(&t, "sub", Shared, earliest(), at(0))
        .unwrap_err();
    assert_eq!(err, ModelError::NonPersistentTopic { topic: t.clone() });
    assert!(cluster
        .publish(
            &t,
            ruststream_pulsar_model::OutgoingMessage::new("x"),
            at(0)
        )
        .is_err());
}

#[test]
fn two_spellings_of_a_topic_are_one_topic() {
    let mut cluster = Cluster::new();
    let short = topic("refunds");
    let full = topic("persistent://public/default/refunds");
    let c = consumer(&mut cluster, &short, Shared, earliest(), 10, at(0));
    publish(&mut cluster, &full, "m", at(0));
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["m"]);
    assert_eq!(cluster.topic_messages(&short).len(), 1);
    assert_eq!(cluster.topic_messages(&full)[0].id.partition, -1);
}

#[test]
fn the_queued_count_is_the_sum_over_consumers_through_receive_and_close() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let first = consumer(&mut cluster, &t, Shared, earliest(), 3, at(0));
    let second = consumer(&mut cluster, &t, Shared, earliest(), 3, at(0));
    for n in 0..5 {
        publish(&mut cluster, &t, &format!("m{n}"), at(0));
    }
    let sum = |cluster: &Cluster| cluster.pending_for(first) + cluster.pending_for(second);
    assert_eq!((cluster.queued(), sum(&cluster)), (5, 5));
    assert_eq!(cluster.outstanding(first), Some(3));
    cluster.receive(first, at(1)).unwrap();
    assert_eq!((cluster.queued(), sum(&cluster)), (4, 4));
    cluster.close(second, at(2)).unwrap();
    assert_eq!(cluster.queued(), cluster.pending_for(first));
    assert_eq!(cluster.outstanding(second), None);
}
