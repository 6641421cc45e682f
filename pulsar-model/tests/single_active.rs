//! Exclusive and Failover subscriptions: one receiving consumer, rewinds, takeover.

mod common;

use common::*;
use ruststream::SubscriptionType::{Exclusive, Failover};
use ruststream_pulsar_model::{Acknowledgement, Cluster, ModelError, Redelivery};

#[test]
fn a_second_exclusive_consumer_is_refused() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let first = consumer(&mut cluster, &t, Exclusive, earliest(), 10, at(0));
    let err = cluster
        .subscribe(&t, "sub", Exclusive, earliest(), at(0))
        .unwrap_err();
    assert_eq!(
        err,
        ModelError::ExclusiveConsumerBusy {
            topic: t.clone(),
            subscription: "sub".into()
        }
    );
    assert!(
        err.to_string()
            .contains("Exclusive consumer is already connected"),
        "{err}"
    );
    // Another subscription on the same topic is fine; so is the same one after a close.
    cluster
        .subscribe(&t, "other", Exclusive, earliest(), at(0))
        .unwrap();
    cluster.close(first, at(0)).unwrap();
    cluster
        .subscribe(&t, "sub", Exclusive, earliest(), at(0))
        .unwrap();
}

#[test]
fn exclusive_nack_rewinds_everything_unacknowledged_in_order_with_count_zero() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Exclusive, earliest(), 100, at(0));
    let ids: Vec<_> = (0..4)
        .map(|i| publish(&mut cluster, &t, &format!("m{i}"), at(0)))
        .collect();
    assert_eq!(drain(&mut cluster, c, at(0)).len(), 4);
    cluster.ack(c, &ids[0], at(0)).unwrap();
    cluster.ack(c, &ids[2], at(0)).unwrap();
    // The id is ignored: the whole cursor rewinds.
    assert_eq!(cluster.nack(c, &ids[3], at(0)), Ok(Redelivery::Rewound));
    let again = drain(&mut cluster, c, at(0));
    assert_eq!(bodies(&again), ["m1", "m3"]);
    assert_eq!(counts(&again), [0, 0]);
}

#[test]
fn pulsar_rs_keeps_its_queue_on_a_rewind_so_queued_deliveries_come_twice() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Exclusive, earliest(), 100, at(0));
    let ids: Vec<_> = (0..3)
        .map(|i| publish(&mut cluster, &t, &format!("m{i}"), at(0)))
        .collect();
    let first = cluster.receive(c, at(0)).unwrap();
    assert_eq!(first.message_id, ids[0]);
    cluster.nack(c, &ids[0], at(0)).unwrap();
    assert_eq!(
        bodies(&drain(&mut cluster, c, at(0))),
        ["m1", "m2", "m0", "m1", "m2"]
    );
    assert_eq!(cluster.permits(c), Some(94));
}

#[test]
fn exclusive_close_leaves_the_unacknowledged_for_the_next_consumer() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Exclusive, earliest(), 10, at(0));
    let ids: Vec<_> = (0..2)
        .map(|i| publish(&mut cluster, &t, &format!("m{i}"), at(0)))
        .collect();
    cluster.ack(a, &ids[0], at(0)).unwrap();
    cluster.close(a, at(0)).unwrap();
    let b = consumer(&mut cluster, &t, Exclusive, earliest(), 10, at(1));
    let got = drain(&mut cluster, b, at(1));
    assert_eq!(bodies(&got), ["m1"]);
    assert_eq!(counts(&got), [0]);
}

#[test]
fn failover_has_one_active_consumer_and_the_standby_takes_over_on_close() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Failover, named("alpha"), 10, at(0));
    let b = consumer(&mut cluster, &t, Failover, named("beta"), 10, at(0));
    let active = cluster.active_consumer(&t, "sub").unwrap();
    let standby = if active == a { b } else { a };
    let ids: Vec<_> = (0..3)
        .map(|i| publish(&mut cluster, &t, &format!("m{i}"), at(0)))
        .collect();
    assert_eq!(cluster.pending_for(standby), 0);
    let got = drain(&mut cluster, active, at(0));
    assert_eq!(bodies(&got), ["m0", "m1", "m2"]);
    cluster.ack(active, &ids[0], at(0)).unwrap();

    cluster.close(active, at(1)).unwrap();
    assert_eq!(cluster.active_consumer(&t, "sub"), Some(standby));
    let taken = drain(&mut cluster, standby, at(1));
    assert_eq!(bodies(&taken), ["m1", "m2"]);
    assert_eq!(counts(&taken), [0, 0]);
}

#[test]
fn failover_redelivery_requests_from_a_standby_are_ignored() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Failover, named("alpha"), 10, at(0));
    let b = consumer(&mut cluster, &t, Failover, named("beta"), 10, at(0));
    let active = cluster.active_consumer(&t, "sub").unwrap();
    let standby = if active == a { b } else { a };
    let id = publish(&mut cluster, &t, "m", at(0));
    drain(&mut cluster, active, at(0));
    assert_eq!(cluster.nack(standby, &id, at(0)), Ok(Redelivery::Ignored));
    assert_eq!(cluster.pending_for(active), 0);
    assert_eq!(cluster.nack(active, &id, at(0)), Ok(Redelivery::Rewound));
    let again = drain(&mut cluster, active, at(0));
    assert_eq!(
        (bodies(&again), counts(&again)),
        (vec!["m".to_owned()], vec![0])
    );
    // An ack from the standby still acknowledges on the subscription.
    assert_eq!(
        cluster.ack(standby, &id, at(0)),
        Ok(Acknowledgement::Acknowledged)
    );
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
}

#[test]
fn the_active_consumer_depends_on_names_not_on_who_came_first() {
    let t = topic("refunds");
    let mut one = Cluster::new();
    let a1 = consumer(&mut one, &t, Failover, named("alpha"), 1, at(0));
    let _b1 = consumer(&mut one, &t, Failover, named("beta"), 1, at(0));
    let mut two = Cluster::new();
    let b2 = consumer(&mut two, &t, Failover, named("beta"), 1, at(0));
    let _a2 = consumer(&mut two, &t, Failover, named("alpha"), 1, at(0));
    let alpha_active_in_one = one.active_consumer(&t, "sub") == Some(a1);
    let beta_active_in_two = two.active_consumer(&t, "sub") == Some(b2);
    assert_ne!(
        alpha_active_in_one, beta_active_in_two,
        "the same consumer name must win in both arrival orders"
    );
}

#[test]
fn a_failover_newcomer_that_wins_the_ring_takes_over_from_the_first_unacknowledged() {
    // Find a pair of names where the second to arrive becomes active.
    let t = topic("refunds");
    for n in 0..50 {
        let mut cluster = Cluster::new();
        let first = consumer(&mut cluster, &t, Failover, named("first"), 10, at(0));
        let id = publish(&mut cluster, &t, "m", at(0));
        assert_eq!(cluster.pending_for(first), 1);
        let second = consumer(
            &mut cluster,
            &t,
            Failover,
            named(&format!("n{n}")),
            10,
            at(1),
        );
        if cluster.active_consumer(&t, "sub") == Some(second) {
            // The cursor rewinds for the new active consumer; the old one keeps its queue.
            assert_eq!(bodies(&drain(&mut cluster, second, at(1))), ["m"]);
            assert_eq!(cluster.pending_for(first), 1);
            cluster.ack(second, &id, at(1)).unwrap();
            return;
        }
    }
    panic!("no newcomer name won the hash ring against `first` in 50 tries");
}
