//! pulsar-rs's ack timeout on the virtual clock.

mod common;

use std::time::Duration;

use common::*;
use ruststream::Instant;
use ruststream::SubscriptionType::{Exclusive, Shared};
use ruststream_pulsar_model::{Cluster, ConsumerOptions};

fn with_timeout(secs: u64) -> ConsumerOptions {
    ConsumerOptions {
        ack_timeout: Some(Duration::from_secs(secs)),
        ..earliest()
    }
}

fn just_before(t: Instant) -> Instant {
    Instant::from_nanos(t.as_nanos() - 1)
}

#[test]
fn an_unsettled_delivery_comes_back_at_the_first_tick_after_the_timeout_and_not_before() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    assert_eq!(cluster.receive(c, at(0)).unwrap().redelivery_count, 0);
    // Deadline 2 s; the 500 ms ticker fires at 2 s but needs `deadline < now`, so 2.5 s.
    let due = at(2500);
    assert_eq!(cluster.next_deadline(), Some(due));
    cluster.handle_timeouts(just_before(due));
    assert_eq!(cluster.pending_for(c), 0);
    assert_eq!(cluster.receive(c, just_before(due)), None);
    cluster.handle_timeouts(due);
    let again = cluster.receive(c, due).unwrap();
    assert_eq!((again.message_id, again.redelivery_count), (id, 1));
    // The next one: received at 2.5 s, deadline 4.5 s, tick 5 s.
    assert_eq!(cluster.next_deadline(), Some(at(5000)));
}

#[test]
fn an_acknowledged_delivery_never_comes_back() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    cluster.receive(c, at(0)).unwrap();
    cluster.ack(c, &id, at(1999)).unwrap();
    assert_eq!(cluster.next_deadline(), None);
    cluster.handle_timeouts(at(60_000));
    assert_eq!(cluster.pending_for(c), 0);
}

#[test]
fn the_timer_starts_when_the_app_takes_the_message_not_while_it_waits_in_the_queue() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    publish(&mut cluster, &t, "m", at(300));
    // In the client's queue since 0.3 s, not taken: no deadline, nothing comes back.
    assert_eq!(cluster.next_deadline(), None);
    cluster.handle_timeouts(at(10_000));
    assert_eq!(cluster.pending_for(c), 1);
    // Taken at 10 s: deadline 12 s, so the tick at 12.5 s.
    assert_eq!(counts(&drain(&mut cluster, c, at(10_000))), [0]);
    assert_eq!(cluster.next_deadline(), Some(at(12_500)));
    cluster.handle_timeouts(at(12_500));
    assert_eq!(counts(&drain(&mut cluster, c, at(12_500))), [1]);
}

#[test]
fn ticks_are_counted_from_the_consumers_creation() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(
        &mut cluster,
        &t,
        Shared,
        ConsumerOptions {
            ack_timeout: Some(Duration::from_millis(1000)),
            ..earliest()
        },
        10,
        at(100),
    );
    publish(&mut cluster, &t, "m", at(1250));
    assert_eq!(counts(&drain(&mut cluster, c, at(1250))), [0]);
    // Deadline 2.25 s; ticks at 0.1 s + k × 0.5 s → 2.6 s.
    assert_eq!(cluster.next_deadline(), Some(at(2600)));
    cluster.handle_timeouts(at(2599));
    assert_eq!(cluster.pending_for(c), 0);
    cluster.handle_timeouts(at(2600));
    assert_eq!(counts(&drain(&mut cluster, c, at(2600))), [1]);
}

#[test]
fn a_late_call_runs_every_due_tick_first() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    publish(&mut cluster, &t, "m0", at(0));
    assert_eq!(counts(&drain(&mut cluster, c, at(0))), [0]);
    publish(&mut cluster, &t, "m1", at(2200));
    assert_eq!(counts(&drain(&mut cluster, c, at(2200))), [0]);
    // Nothing called until 5.2 s: the ticks at 2.5 s (m0's) and 4.5 s (m1's) both ran before
    // the receive, whose copies time out from 5.2 s.
    let got = drain(&mut cluster, c, at(5200));
    assert_eq!(bodies(&got), ["m0", "m1"]);
    assert_eq!(counts(&got), [1, 1]);
    assert_eq!(cluster.next_deadline(), Some(at(7500)));
}

#[test]
fn a_nack_does_not_stop_the_timer_of_the_first_delivery() {
    // pulsar-rs forgets a deadline on ack, not on nack; the stale request finds the message no
    // longer pending on the first consumer and the broker ignores it.
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let a = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    let b = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    let id = publish(&mut cluster, &t, "m", at(0));
    assert_eq!(cluster.pending_for(a), 1);
    drain(&mut cluster, a, at(0));
    cluster.nack(a, &id, at(0)).unwrap();
    assert_eq!(counts(&drain(&mut cluster, b, at(0))), [1]);
    cluster.handle_timeouts(at(2500));
    let all: Vec<_> = [a, b]
        .into_iter()
        .flat_map(|c| drain(&mut cluster, c, at(2500)))
        .collect();
    assert_eq!(counts(&all), [2], "one redelivery, by B's timer");
}

#[test]
fn on_exclusive_an_expired_timeout_rewinds_with_count_zero() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Exclusive, with_timeout(2), 10, at(0));
    let ids: Vec<_> = (0..3)
        .map(|i| publish(&mut cluster, &t, &format!("m{i}"), at(0)))
        .collect();
    drain(&mut cluster, c, at(0));
    cluster.ack(c, &ids[1], at(0)).unwrap();
    cluster.handle_timeouts(at(2500));
    let again = drain(&mut cluster, c, at(2500));
    assert_eq!(bodies(&again), ["m0", "m2"]);
    assert_eq!(counts(&again), [0, 0]);
}

#[test]
fn a_closed_consumer_has_no_timer() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let c = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    publish(&mut cluster, &t, "m", at(0));
    drain(&mut cluster, c, at(0));
    assert!(cluster.next_deadline().is_some());
    cluster.close(c, at(1)).unwrap();
    assert_eq!(cluster.next_deadline(), None);
}

#[test]
fn closing_one_timed_consumer_keeps_the_other_ones_timer() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    let first = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    let second = consumer(&mut cluster, &t, Shared, with_timeout(2), 10, at(0));
    publish(&mut cluster, &t, "m", at(0));
    let holder = if cluster.pending_for(first) == 1 {
        first
    } else {
        second
    };
    let other = if holder == first { second } else { first };
    assert_eq!(
        cluster.receive(holder, at(0)).map(|d| d.redelivery_count),
        Some(0)
    );
    cluster.close(other, at(1)).unwrap();
    assert_eq!(cluster.next_deadline(), Some(at(2500)));
}
