//! KeyShared subscriptions: one key, one consumer, in order, across redeliveries.

mod common;

use std::collections::BTreeMap;

use common::*;
use ruststream::SubscriptionType::KeyShared;
use ruststream_pulsar_model::{Cluster, ConsumerId, Redelivery};

#[test]
fn a_key_always_goes_to_the_same_consumer() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let a = consumer(&mut cluster, &t, KeyShared, named("a"), 1000, at(0));
    let b = consumer(&mut cluster, &t, KeyShared, named("b"), 1000, at(0));
    for round in 0..3 {
        for k in 0..20 {
            publish_keyed(
                &mut cluster,
                &t,
                &format!("k{k}"),
                &format!("{k}/{round}"),
                at(0),
            );
        }
    }
    let mut owner: BTreeMap<String, ConsumerId> = BTreeMap::new();
    let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in [a, b] {
        for d in drain(&mut cluster, c, at(0)) {
            let key = d.key.clone().unwrap();
            assert_eq!(*owner.entry(key.clone()).or_insert(c), c, "key {key} split");
            order
                .entry(key)
                .or_default()
                .push(String::from_utf8(d.payload().to_vec()).unwrap());
        }
    }
    assert_eq!(owner.len(), 20);
    assert!(owner.values().any(|&c| c == a) && owner.values().any(|&c| c == b));
    for (key, bodies) in order {
        let k = &key[1..];
        assert_eq!(
            bodies,
            [format!("{k}/0"), format!("{k}/1"), format!("{k}/2")]
        );
    }
}

#[test]
fn a_redelivered_message_goes_before_the_later_messages_of_its_key() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, KeyShared, earliest(), 1, at(0));
    let m1 = publish_keyed(&mut cluster, &t, "k", "m1", at(0));
    publish_keyed(&mut cluster, &t, "k", "m2", at(0));
    publish_keyed(&mut cluster, &t, "other", "o1", at(0));
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["m1"]);
    assert_eq!(cluster.nack(c, &m1, at(0)), Ok(Redelivery::Scheduled));
    cluster.flow(c, 1, at(0)).unwrap();
    let again = drain(&mut cluster, c, at(0));
    assert_eq!(
        (bodies(&again), counts(&again)),
        (vec!["m1".to_owned()], vec![1])
    );
    cluster.flow(c, 2, at(0)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["m2", "o1"]);
}

#[test]
fn a_redelivery_goes_before_a_message_of_its_key_published_later() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, KeyShared, earliest(), 2, at(0));
    let m1 = publish_keyed(&mut cluster, &t, "k", "m1", at(0));
    publish_keyed(&mut cluster, &t, "k", "m2", at(0));
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["m1", "m2"]);
    cluster.nack(c, &m1, at(0)).unwrap();
    publish_keyed(&mut cluster, &t, "k", "m3", at(0));
    cluster.flow(c, 2, at(0)).unwrap();
    let got = drain(&mut cluster, c, at(0));
    assert_eq!(bodies(&got), ["m1", "m3"]);
    assert_eq!(counts(&got), [1, 0]);
}

#[test]
fn a_closed_consumers_keys_move_to_the_other_in_order() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let a = consumer(&mut cluster, &t, KeyShared, named("a"), 1000, at(0));
    let b = consumer(&mut cluster, &t, KeyShared, named("b"), 1000, at(0));
    for round in 0..2 {
        for k in 0..10 {
            publish_keyed(
                &mut cluster,
                &t,
                &format!("k{k}"),
                &format!("k{k}/{round}"),
                at(0),
            );
        }
    }
    let on_a = drain(&mut cluster, a, at(0));
    drain(&mut cluster, b, at(0));
    assert!(!on_a.is_empty());
    cluster.close(a, at(1)).unwrap();
    let moved = drain(&mut cluster, b, at(1));
    assert_eq!(bodies(&moved), bodies(&on_a));
    assert!(counts(&moved).iter().all(|&n| n == 0));
}

#[test]
fn a_joining_consumer_gets_a_key_only_after_the_old_owner_acknowledged_it() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let a = consumer(&mut cluster, &t, KeyShared, named("a"), 1000, at(0));
    let first: Vec<_> = (0..50)
        .map(|k| publish_keyed(&mut cluster, &t, &format!("k{k}"), "first", at(0)))
        .collect();
    assert_eq!(cluster.pending_for(a), 50);
    drain(&mut cluster, a, at(0));
    let b = consumer(&mut cluster, &t, KeyShared, named("b"), 1000, at(1));
    for k in 0..50 {
        publish_keyed(&mut cluster, &t, &format!("k{k}"), "second", at(1));
    }
    // Keys now owned by B are held while A still has their first message unacknowledged.
    assert_eq!(cluster.pending_for(b), 0);
    let kept_by_a = cluster.pending_for(a);
    assert!(kept_by_a < 50, "some keys must have moved to B");
    for id in &first {
        cluster.ack(a, id, at(2)).unwrap();
    }
    assert_eq!(cluster.pending_for(b), 50 - kept_by_a);
    assert!(drain(&mut cluster, b, at(2))
        .iter()
        .all(|d| d.payload() == b"second"));
}
