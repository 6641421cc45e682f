//! Delayed delivery (`deliver_at_time`): Shared and KeyShared hold a message until its time;
//! Exclusive and Failover deliver it at once, as Pulsar's dispatchers do.

mod common;

use common::*;
use ruststream::SubscriptionType::{Exclusive, KeyShared, Shared};
use ruststream_pulsar_model::{Cluster, OutgoingMessage};

fn delayed(body: &str, until_ms: u64) -> OutgoingMessage {
    let mut message = OutgoingMessage::new(body);
    message.deliver_at = Some(at(until_ms));
    message
}

#[test]
fn shared_holds_a_delayed_message_until_its_time_and_no_longer() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 100, at(0));
    cluster
        .publish(&t, delayed("later", 30_000), at(0))
        .unwrap();
    cluster
        .publish(&t, OutgoingMessage::new("now"), at(0))
        .unwrap();
    let got = drain(&mut cluster, c, at(0));
    assert_eq!(
        bodies(&got),
        ["now"],
        "the delayed one waits, the next goes past it"
    );
    assert_eq!(cluster.next_deadline(), Some(at(30_000)));
    cluster.handle_timeouts(at(29_999));
    assert!(
        drain(&mut cluster, c, at(29_999)).is_empty(),
        "not a millisecond early"
    );
    cluster.handle_timeouts(at(30_000));
    assert_eq!(bodies(&drain(&mut cluster, c, at(30_000))), ["later"]);
    assert_eq!(cluster.next_deadline(), None);
}

#[test]
fn key_shared_holds_it_too() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, KeyShared, earliest(), 100, at(0));
    cluster.publish(&t, delayed("later", 5_000), at(0)).unwrap();
    assert!(drain(&mut cluster, c, at(0)).is_empty());
    cluster.handle_timeouts(at(5_000));
    assert_eq!(bodies(&drain(&mut cluster, c, at(5_000))), ["later"]);
}

#[test]
fn exclusive_ignores_the_delay() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Exclusive, earliest(), 100, at(0));
    cluster.publish(&t, delayed("later", 5_000), at(0)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["later"]);
    assert_eq!(cluster.next_deadline(), None);
}

#[test]
fn a_delayed_message_in_a_batch_holds_its_entry_until_its_time() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = consumer(&mut cluster, &t, Shared, earliest(), 100, at(0));
    cluster
        .publish_batch(&t, vec![delayed("a", 2_000), delayed("b", 2_000)], at(0))
        .unwrap();
    assert!(drain(&mut cluster, c, at(0)).is_empty());
    assert_eq!(cluster.next_deadline(), Some(at(2_000)));
    cluster.handle_timeouts(at(2_000));
    assert_eq!(bodies(&drain(&mut cluster, c, at(2_000))), ["a", "b"]);
}
