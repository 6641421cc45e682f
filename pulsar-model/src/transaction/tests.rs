//! Each behaviour of the module, on a virtual clock.

use std::time::Duration;

use ruststream::{Instant, SubscriptionType};

use super::*;
use crate::{
    ConsumerOptions, Dispatched, InitialPosition, Redelivery, Retention, TopicSelection,
    TopicsConsumer,
};

fn topic(name: &str) -> TopicName {
    name.parse().expect("a valid topic name")
}

fn at(ms: u64) -> Instant {
    Instant::from_elapsed(Duration::from_millis(ms))
}

fn earliest() -> ConsumerOptions {
    ConsumerOptions {
        initial_position: InitialPosition::Earliest,
        ..ConsumerOptions::default()
    }
}

fn subscribe(
    cluster: &mut Cluster,
    t: &TopicName,
    subscription: &str,
    kind: SubscriptionType,
    options: ConsumerOptions,
    permits: u32,
) -> ConsumerId {
    let c = cluster
        .subscribe(t, subscription, kind, options, at(0))
        .expect("subscribed");
    if permits > 0 {
        cluster.flow(c, permits, at(0)).expect("flow");
    }
    c
}

fn shared(cluster: &mut Cluster, t: &TopicName, permits: u32) -> ConsumerId {
    subscribe(
        cluster,
        t,
        "sub",
        SubscriptionType::Shared,
        earliest(),
        permits,
    )
}

fn drain(cluster: &mut Cluster, c: ConsumerId, now: Instant) -> Vec<Dispatched> {
    std::iter::from_fn(|| cluster.receive(c, now)).collect()
}

fn bodies(deliveries: &[Dispatched]) -> Vec<String> {
    deliveries
        .iter()
        .map(|d| String::from_utf8_lossy(d.payload()).into_owned())
        .collect()
}

fn stored(messages: &[crate::StoredMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| String::from_utf8_lossy(m.payload()).into_owned())
        .collect()
}

fn counts(deliveries: &[Dispatched]) -> Vec<(String, u32)> {
    deliveries
        .iter()
        .map(|d| {
            (
                String::from_utf8_lossy(d.payload()).into_owned(),
                d.redelivery_count,
            )
        })
        .collect()
}

fn send(cluster: &mut Cluster, t: &TopicName, body: &str, now: Instant) -> MessageId {
    cluster
        .publish(t, OutgoingMessage::new(body), now)
        .expect("published")
}

fn send_in(
    cluster: &mut Cluster,
    txn: TxnId,
    t: &TopicName,
    body: &str,
    now: Instant,
) -> MessageId {
    cluster
        .publish_in(txn, t, OutgoingMessage::new(body), now)
        .expect("published in the transaction")
}

const MINUTE: Duration = Duration::from_secs(60);

// Publishing.

#[test]
fn a_committed_message_becomes_readable_in_its_place() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let txn = cluster.new_transaction(MINUTE, at(0));
    assert_eq!(cluster.transaction_state(txn), Some(TransactionState::Open));
    let id = send_in(&mut cluster, txn, &t, "invoice", at(1));
    assert_eq!(id.entry_id, 0, "stored at once, at its position");
    assert!(drain(&mut cluster, c, at(1)).is_empty());
    assert!(
        cluster.topic_messages(&t).is_empty(),
        "no reader sees it yet"
    );
    assert_eq!(stored(cluster.held_back_messages(&t)), ["invoice"]);
    assert_eq!(cluster.backlog(&t, "sub"), Some(1), "the broker counts it");

    cluster.commit(txn, at(2)).unwrap();
    assert_eq!(
        cluster.transaction_state(txn),
        Some(TransactionState::Committed)
    );
    let got = drain(&mut cluster, c, at(2));
    assert_eq!(bodies(&got), ["invoice"]);
    assert_eq!(got[0].message_id, id);
    assert_eq!(stored(cluster.topic_messages(&t)), ["invoice"]);
    assert!(cluster.held_back_messages(&t).is_empty());
    cluster.ack(c, &id, at(3)).unwrap();
    assert_eq!(
        cluster.backlog(&t, "sub"),
        Some(0),
        "the commit marker was read and acknowledged by the dispatcher"
    );
}

#[test]
fn an_aborted_message_is_never_delivered_nor_listed() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let txn = cluster.new_transaction(MINUTE, at(0));
    send_in(&mut cluster, txn, &t, "undone", at(0));
    send(&mut cluster, &t, "plain", at(0));
    assert_eq!(cluster.backlog(&t, "sub"), Some(2));
    cluster.abort(txn, at(1)).unwrap();
    assert_eq!(
        cluster.transaction_state(txn),
        Some(TransactionState::Aborted)
    );
    assert_eq!(bodies(&drain(&mut cluster, c, at(1))), ["plain"]);
    assert_eq!(stored(cluster.topic_messages(&t)), ["plain"]);
    assert_eq!(
        cluster.backlog(&t, "sub"),
        Some(1),
        "the aborted message and the marker were filtered and acknowledged as read"
    );
    // A subscription made later from the earliest position does not see it either.
    let late = subscribe(
        &mut cluster,
        &t,
        "late",
        SubscriptionType::Shared,
        earliest(),
        10,
    );
    assert_eq!(bodies(&drain(&mut cluster, late, at(2))), ["plain"]);
}

#[test]
fn aborted_entries_and_markers_count_in_the_backlog_until_a_dispatcher_reads_them() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 0);
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster
        .publish_batch_in(
            txn,
            &t,
            vec![OutgoingMessage::new("a"), OutgoingMessage::new("b")],
            at(0),
        )
        .unwrap();
    cluster.abort(txn, at(1)).unwrap();
    assert_eq!(
        cluster.backlog(&t, "sub"),
        Some(2),
        "the batch and the abort marker: no consumer has a permit, nothing was read"
    );
    cluster.flow(c, 1, at(2)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
    assert!(drain(&mut cluster, c, at(2)).is_empty());
    assert_eq!(
        cluster.permits(c),
        Some(1),
        "filtered entries take no permit"
    );
}

#[test]
fn a_plain_message_after_an_open_transaction_waits_behind_it_and_markers_take_ids() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let before = send(&mut cluster, &t, "before", at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    let inside = send_in(&mut cluster, txn, &t, "inside", at(1));
    let after = send(&mut cluster, &t, "after", at(2));
    assert_eq!(bodies(&drain(&mut cluster, c, at(2))), ["before"]);
    assert_eq!(stored(cluster.topic_messages(&t)), ["before"]);
    assert_eq!(stored(cluster.held_back_messages(&t)), ["inside", "after"]);

    cluster.commit(txn, at(3)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(3))), ["inside", "after"]);
    let next = send(&mut cluster, &t, "next", at(4));
    assert_eq!(
        [before, inside, after, next].map(|id| id.entry_id),
        [0, 1, 2, 4],
        "the commit marker is entry 3"
    );
}

#[test]
fn a_transaction_committed_behind_an_open_one_waits_for_it() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let first = cluster.new_transaction(MINUTE, at(0));
    let second = cluster.new_transaction(MINUTE, at(0));
    send_in(&mut cluster, first, &t, "first", at(1));
    send_in(&mut cluster, second, &t, "second", at(2));
    cluster.commit(second, at(3)).unwrap();
    assert!(
        drain(&mut cluster, c, at(3)).is_empty(),
        "the max read position is before `first`'s message"
    );
    cluster.abort(first, at(4)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(4))), ["second"]);
}

#[test]
fn every_subscription_type_reads_past_markers() {
    for kind in [
        SubscriptionType::Exclusive,
        SubscriptionType::Failover,
        SubscriptionType::Shared,
        SubscriptionType::KeyShared,
    ] {
        let mut cluster = Cluster::new();
        let t = topic("invoices");
        let c = subscribe(&mut cluster, &t, "sub", kind, earliest(), 2);
        for (i, end) in ["commit", "abort", "commit"].into_iter().enumerate() {
            let txn = cluster.new_transaction(MINUTE, at(0));
            let message = OutgoingMessage::new(format!("{end} {i}")).with_key(format!("k{i}"));
            cluster.publish_in(txn, &t, message, at(0)).unwrap();
            match end {
                "commit" => cluster.commit(txn, at(0)).unwrap(),
                _ => cluster.abort(txn, at(0)).unwrap(),
            }
        }
        send(&mut cluster, &t, "plain", at(0));
        let got = drain(&mut cluster, c, at(0));
        assert_eq!(bodies(&got), ["commit 0", "commit 2"], "{kind:?}");
        cluster.flow(c, 2, at(0)).unwrap();
        assert_eq!(
            bodies(&drain(&mut cluster, c, at(0))),
            ["plain"],
            "{kind:?}"
        );
    }
}

#[test]
fn a_transactional_batch_is_one_entry() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let txn = cluster.new_transaction(MINUTE, at(0));
    let ids = cluster
        .publish_batch_in(
            txn,
            &t,
            ["a", "b", "c"].map(OutgoingMessage::new).to_vec(),
            at(0),
        )
        .unwrap();
    assert_eq!(
        ids.iter().map(|id| id.to_string()).collect::<Vec<_>>(),
        ["1:0:-1:0", "1:0:-1:1", "1:0:-1:2"]
    );
    assert_eq!(
        cluster.publish_batch_in(txn, &t, Vec::new(), at(0)),
        Ok(Vec::new())
    );
    cluster.commit(txn, at(1)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(1))), ["a", "b", "c"]);
}

#[test]
fn publishing_in_a_transaction_that_is_not_open_is_refused() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let unknown = TxnId::new(0, 41);
    let refused = cluster
        .publish_in(unknown, &t, OutgoingMessage::new("x"), at(0))
        .unwrap_err();
    assert_eq!(refused, ModelError::UnknownTransaction { txn: unknown });
    assert!(refused.to_string().contains("transaction (0,41)"));

    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.commit(txn, at(1000)).unwrap();
    let refused = cluster
        .publish_in(txn, &t, OutgoingMessage::new("x"), at(2000))
        .unwrap_err();
    assert_eq!(
        refused,
        ModelError::TransactionNotOpen {
            txn,
            operation: "publish in",
            state: TransactionState::Committed,
            ended_at: at(1000),
            timeout: MINUTE,
        }
    );
    assert_eq!(
        refused.to_string(),
        "TransactionNotFound: cannot publish in transaction (0,0): it was committed at 1s on \
         the cluster's clock, and a transaction ends once; open a new transaction for more work"
    );
    assert!(cluster.topic_messages(&t).is_empty());
    assert_eq!(
        cluster.publish_in(
            TxnId::new(0, 1),
            &topic("non-persistent://public/default/x"),
            OutgoingMessage::new("x"),
            at(2000)
        ),
        Err(ModelError::UnknownTransaction {
            txn: TxnId::new(0, 1)
        }),
        "the transaction is checked first, as the client registers the topic with it first"
    );
}

// The coordinator.

#[test]
fn the_coordinator_aborts_at_the_first_timer_tick_after_the_timeout() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let txn = cluster.new_transaction(Duration::from_secs(5), at(0));
    send_in(&mut cluster, txn, &t, "late", at(100));
    assert_eq!(TRANSACTION_TIMER_TICK, Duration::from_millis(100));
    assert_eq!(cluster.next_deadline(), Some(at(5100)));
    cluster.handle_timeouts(Instant::from_nanos(5_099_999_999));
    assert_eq!(
        cluster.transaction_state(txn),
        Some(TransactionState::Open),
        "the timer's task is filed under the tick that holds 5 s and runs as it ends"
    );
    cluster.handle_timeouts(at(5100));
    assert_eq!(
        cluster.transaction_state(txn),
        Some(TransactionState::TimedOut)
    );
    assert_eq!(cluster.next_deadline(), None);
    assert!(drain(&mut cluster, c, at(5100)).is_empty());
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));

    let refused = cluster.commit(txn, at(6000)).unwrap_err();
    assert_eq!(
        refused,
        ModelError::TransactionNotOpen {
            txn,
            operation: "commit",
            state: TransactionState::TimedOut,
            ended_at: at(5100),
            timeout: Duration::from_secs(5),
        }
    );
    assert_eq!(
        refused.to_string(),
        "TransactionNotFound: cannot commit transaction (0,0): the coordinator aborted it at \
         5.1s on the cluster's clock, its timeout of 5s having passed, and undid its work; \
         open a new transaction, with a timeout longer than the work takes, and do the work \
         again in it"
    );
    assert!(matches!(
        cluster.abort(txn, at(6000)),
        Err(ModelError::TransactionNotOpen {
            operation: "abort",
            ..
        })
    ));
}

#[test]
fn a_commit_at_the_timeout_itself_is_in_time() {
    let mut cluster = Cluster::new();
    let txn = cluster.new_transaction(Duration::from_secs(5), at(0));
    assert_eq!(cluster.commit(txn, at(5000)), Ok(()));
    let late = cluster.new_transaction(Duration::from_secs(5), at(0));
    assert_eq!(cluster.commit(late, at(5099)), Ok(()), "up to a tick later");
}

#[test]
fn the_timeout_counts_whole_milliseconds_and_the_ticks_from_the_clock_s_origin() {
    let mut cluster = Cluster::new();
    let opened = Instant::from_nanos(2_700_000);
    let first = cluster.new_transaction(Duration::from_micros(1_500_900), opened);
    // Opened at 2.7 ms for 1,500 ms (the microseconds do not travel): due at 1,502.7 ms,
    // aborted at the tick that ends at 1,600 ms.
    assert_eq!(cluster.next_deadline(), Some(at(1600)));
    let second = cluster.new_transaction(Duration::from_millis(1470), at(30));
    // Due at 1,500 ms exactly: filed under the tick from 1,500 ms, aborted as it ends.
    cluster.handle_timeouts(Instant::from_nanos(1_599_999_999));
    assert_eq!(
        cluster.transaction_state(first),
        Some(TransactionState::Open)
    );
    assert_eq!(
        cluster.transaction_state(second),
        Some(TransactionState::Open)
    );
    cluster.handle_timeouts(at(1600));
    assert_eq!(
        [first, second].map(|txn| cluster.transaction_state(txn)),
        [Some(TransactionState::TimedOut); 2]
    );
}

#[test]
fn a_timeout_under_a_millisecond_aborts_at_once() {
    let mut cluster = Cluster::new();
    let txn = cluster.new_transaction(Duration::from_micros(999), at(7));
    assert_eq!(
        cluster.transaction_state(txn),
        Some(TransactionState::TimedOut)
    );
    assert_eq!(cluster.next_deadline(), None);
    assert!(cluster
        .publish_in(txn, &topic("invoices"), OutgoingMessage::new("x"), at(7))
        .is_err());
}

#[test]
fn the_timeout_is_checked_before_every_call() {
    let mut cluster = Cluster::new();
    let t = topic("invoices");
    let txn = cluster.new_transaction(Duration::from_secs(1), at(0));
    // No one called `handle_timeouts`: the publish at 2 s runs the timer first.
    assert!(matches!(
        cluster.publish_in(txn, &t, OutgoingMessage::new("x"), at(2000)),
        Err(ModelError::TransactionNotOpen {
            state: TransactionState::TimedOut,
            ended_at,
            ..
        }) if ended_at == at(1100)
    ));
}

#[test]
fn ending_twice_is_refused() {
    let mut cluster = Cluster::new();
    let committed = cluster.new_transaction(MINUTE, at(0));
    cluster.commit(committed, at(1)).unwrap();
    assert!(matches!(
        cluster.commit(committed, at(2)),
        Err(ModelError::TransactionNotOpen {
            state: TransactionState::Committed,
            ..
        })
    ));
    let aborted = cluster.new_transaction(MINUTE, at(0));
    cluster.abort(aborted, at(1)).unwrap();
    assert!(matches!(
        cluster.abort(aborted, at(2)),
        Err(ModelError::TransactionNotOpen {
            state: TransactionState::Aborted,
            ..
        })
    ));
    assert_eq!(
        cluster.commit(TxnId::new(3, 0), at(3)),
        Err(ModelError::UnknownTransaction {
            txn: TxnId::new(3, 0)
        })
    );
}

#[test]
fn a_cluster_that_frees_messages_forgets_ended_transactions() {
    let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
    let t = topic("invoices");
    let c = shared(&mut cluster, &t, 10);
    let txn = cluster.new_transaction(MINUTE, at(0));
    send_in(&mut cluster, txn, &t, "kept until acknowledged", at(0));
    cluster.commit(txn, at(1)).unwrap();
    assert_eq!(cluster.transaction_state(txn), None);
    assert_eq!(
        cluster.commit(txn, at(2)),
        Err(ModelError::UnknownTransaction { txn })
    );
    let got = drain(&mut cluster, c, at(2));
    assert_eq!(bodies(&got), ["kept until acknowledged"]);
    cluster.ack(c, &got[0].message_id, at(3)).unwrap();
    assert_eq!(stored(cluster.topic_messages(&t)), [""], "freed");
}

// Acknowledging.

#[test]
fn a_pending_acknowledgement_is_neither_nacked_nor_timed_out_back() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let options = ConsumerOptions {
        ack_timeout: Some(Duration::from_secs(1)),
        ..earliest()
    };
    let c = subscribe(
        &mut cluster,
        &t,
        "sub",
        SubscriptionType::Shared,
        options,
        10,
    );
    let id = send(&mut cluster, &t, "order", at(0));
    drain(&mut cluster, c, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, c, &id, at(10)).unwrap();
    assert_eq!(
        cluster.next_deadline(),
        Some(at(60_100)),
        "the client stopped its ack timeout: only the transaction's timeout is left"
    );
    assert_eq!(cluster.nack(c, &id, at(20)), Ok(Redelivery::Ignored));
    cluster.handle_timeouts(at(5000));
    assert!(drain(&mut cluster, c, at(5000)).is_empty());
    assert_eq!(
        cluster.backlog(&t, "sub"),
        Some(1),
        "pending, not acknowledged"
    );
}

#[test]
fn a_committed_acknowledgement_settles_the_message() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let id = send(&mut cluster, &t, "order", at(0));
    drain(&mut cluster, c, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, c, &id, at(1)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(1));
    cluster.commit(txn, at(2)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
    let fresh = cluster.new_transaction(MINUTE, at(3));
    assert_eq!(
        cluster.ack_in(fresh, c, &id, at(3)),
        Err(ModelError::TransactionConflict {
            txn: TxnId::new(0, 1),
            topic: t.clone(),
            subscription: "sub".into(),
            message: id,
            cause: Conflict::Acknowledged,
        })
    );
}

#[test]
fn an_aborted_acknowledgement_redelivers_at_once_counting_one_more() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let a = shared(&mut cluster, &t, 10);
    let b = shared(&mut cluster, &t, 10);
    let id = send(&mut cluster, &t, "order", at(0));
    assert_eq!(bodies(&drain(&mut cluster, a, at(0))), ["order"]);
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, a, &id, at(1)).unwrap();
    cluster.abort(txn, at(2)).unwrap();
    // Back to the subscription, to the next consumer in the round-robin.
    assert_eq!(
        counts(&drain(&mut cluster, b, at(2))),
        [("order".into(), 1)]
    );
    assert_eq!(cluster.backlog(&t, "sub"), Some(1));
}

#[test]
fn an_aborted_acknowledgement_on_exclusive_rewinds_the_cursor() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = subscribe(
        &mut cluster,
        &t,
        "sub",
        SubscriptionType::Exclusive,
        earliest(),
        10,
    );
    let first = send(&mut cluster, &t, "first", at(0));
    let second = send(&mut cluster, &t, "second", at(0));
    drain(&mut cluster, c, at(0));
    cluster.ack(c, &first, at(1)).unwrap();
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, c, &second, at(1)).unwrap();
    cluster.abort(txn, at(2)).unwrap();
    assert_eq!(
        counts(&drain(&mut cluster, c, at(2))),
        [("second".into(), 0)]
    );
}

#[test]
fn acknowledging_a_message_pending_in_a_transaction_conflicts() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let id = send(&mut cluster, &t, "order", at(0));
    drain(&mut cluster, c, at(0));
    let first = cluster.new_transaction(MINUTE, at(0));
    let second = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(first, c, &id, at(1)).unwrap();
    let refused = cluster.ack_in(second, c, &id, at(2)).unwrap_err();
    assert_eq!(
        refused,
        ModelError::TransactionConflict {
            txn: second,
            topic: t.clone(),
            subscription: "sub".into(),
            message: id,
            cause: Conflict::Pending { holder: first },
        }
    );
    assert_eq!(
        refused.to_string(),
        "TransactionConflict: transaction (0,1) cannot acknowledge message 1:0:-1 on \
         subscription `sub` of persistent://public/default/orders: it is pending in \
         transaction (0,0), which has not ended, and a message is acknowledged in one \
         transaction at a time; end (0,0) first (its abort delivers the message again), or \
         leave the message to it"
    );
    assert!(matches!(
        cluster.ack_in(first, c, &id, at(3)),
        Err(ModelError::TransactionConflict {
            cause: Conflict::Pending { holder },
            ..
        }) if holder == first
    ));
    // The conflict does not spoil the second transaction, which may still commit.
    cluster.commit(second, at(4)).unwrap();
    cluster.commit(first, at(5)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
}

#[test]
fn a_plain_acknowledgement_of_a_pending_message_settles_it_for_good() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let id = send(&mut cluster, &t, "order", at(0));
    drain(&mut cluster, c, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, c, &id, at(1)).unwrap();
    assert_eq!(
        cluster.ack(c, &id, at(2)),
        Ok(crate::Acknowledgement::Acknowledged)
    );
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
    cluster.abort(txn, at(3)).unwrap();
    assert!(
        drain(&mut cluster, c, at(3)).is_empty(),
        "the abort finds it deleted: nothing to redeliver"
    );
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
}

#[test]
fn a_closed_consumer_leaves_its_transaction_open_until_the_timeout() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let gone = shared(&mut cluster, &t, 10);
    let stays = shared(&mut cluster, &t, 0);
    let id = send(&mut cluster, &t, "order", at(0));
    drain(&mut cluster, gone, at(0));
    let txn = cluster.new_transaction(Duration::from_secs(10), at(0));
    cluster.ack_in(txn, gone, &id, at(1)).unwrap();
    cluster.close(gone, at(2)).unwrap();
    cluster.flow(stays, 10, at(2)).unwrap();
    assert_eq!(cluster.transaction_state(txn), Some(TransactionState::Open));
    assert!(
        drain(&mut cluster, stays, at(2)).is_empty(),
        "not among the closed consumer's pending acks: not handed to the other"
    );
    cluster.handle_timeouts(at(10_100));
    assert_eq!(
        cluster.transaction_state(txn),
        Some(TransactionState::TimedOut)
    );
    assert_eq!(
        counts(&drain(&mut cluster, stays, at(10_100))),
        [("order".into(), 1)]
    );
}

#[test]
fn a_rewind_rereads_a_pending_message() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let first = shared(&mut cluster, &t, 10);
    let id = send(&mut cluster, &t, "order", at(0));
    drain(&mut cluster, first, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, first, &id, at(1)).unwrap();
    cluster.close(first, at(2)).unwrap();
    // The subscription's next first consumer rewinds the cursor, which has not deleted it.
    let next = shared(&mut cluster, &t, 10);
    assert_eq!(bodies(&drain(&mut cluster, next, at(3))), ["order"]);
    let fresh = cluster.new_transaction(MINUTE, at(3));
    assert!(matches!(
        cluster.ack_in(fresh, next, &id, at(3)),
        Err(ModelError::TransactionConflict {
            cause: Conflict::Pending { .. },
            ..
        })
    ));
}

#[test]
fn acknowledging_through_an_unknown_consumer_or_a_foreign_id() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let txn = cluster.new_transaction(MINUTE, at(0));
    let other = send(&mut cluster, &topic("elsewhere"), "x", at(0));
    assert_eq!(cluster.ack_in(txn, c, &other, at(0)), Ok(()));
    cluster.close(c, at(0)).unwrap();
    assert_eq!(
        cluster.ack_in(txn, c, &other, at(0)),
        Err(ModelError::UnknownConsumer { consumer: c })
    );
}

// Batch indexes.

fn batch_of_three(cluster: &mut Cluster, t: &TopicName) -> Vec<MessageId> {
    cluster
        .publish_batch(t, ["a", "b", "c"].map(OutgoingMessage::new).to_vec(), at(0))
        .unwrap()
}

#[test]
fn messages_of_a_batch_are_pending_at_their_batch_index() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let ids = batch_of_three(&mut cluster, &t);
    drain(&mut cluster, c, at(0));
    let first = cluster.new_transaction(MINUTE, at(0));
    let second = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(first, c, &ids[0], at(1)).unwrap();
    cluster.ack_in(second, c, &ids[1], at(1)).unwrap();
    assert!(matches!(
        cluster.ack_in(second, c, &ids[0], at(1)),
        Err(ModelError::TransactionConflict {
            cause: Conflict::Pending { holder },
            ..
        }) if holder == first
    ));
    // Not every message of the entry is pending: the consumer still owes it, a nack brings
    // the whole entry back.
    assert_eq!(cluster.nack(c, &ids[2], at(2)), Ok(Redelivery::Scheduled));
    assert_eq!(bodies(&drain(&mut cluster, c, at(2))), ["a", "b", "c"]);
    cluster.ack_in(first, c, &ids[2], at(3)).unwrap();
    // Now all are: the consumer's pending ack is gone, a nack brings nothing.
    assert_eq!(cluster.nack(c, &ids[2], at(4)), Ok(Redelivery::Ignored));
    assert!(drain(&mut cluster, c, at(4)).is_empty());
}

#[test]
fn without_batch_index_acknowledgement_a_committed_batch_stays_unacknowledged() {
    let mut cluster = Cluster::new();
    assert!(!cluster.batch_index_acknowledgement());
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let ids = batch_of_three(&mut cluster, &t);
    drain(&mut cluster, c, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    for id in &ids {
        cluster.ack_in(txn, c, id, at(1)).unwrap();
    }
    cluster.commit(txn, at(2)).unwrap();
    assert_eq!(
        cluster.backlog(&t, "sub"),
        Some(1),
        "the cursor ignores acknowledgements with an ack set"
    );
    let fresh = cluster.new_transaction(MINUTE, at(3));
    assert!(matches!(
        cluster.ack_in(fresh, c, &ids[0], at(3)),
        Err(ModelError::TransactionConflict {
            cause: Conflict::CommittedBatchIndex,
            ..
        })
    ));
    // A plain acknowledgement of the entry still settles it.
    cluster.ack(c, &ids[0], at(4)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
}

#[test]
fn with_batch_index_acknowledgement_a_commit_acknowledges_each_message() {
    let mut cluster = Cluster::new().with_batch_index_acknowledgement(true);
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 3);
    let ids = batch_of_three(&mut cluster, &t);
    drain(&mut cluster, c, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    cluster.ack_in(txn, c, &ids[1], at(1)).unwrap();
    cluster.commit(txn, at(2)).unwrap();
    assert_eq!(
        cluster.backlog(&t, "sub"),
        Some(1),
        "a and c are still owed"
    );
    // The entry comes back without b, which takes no permit.
    cluster.flow(c, 3, at(3)).unwrap();
    assert_eq!(cluster.nack(c, &ids[0], at(3)), Ok(Redelivery::Scheduled));
    let again = drain(&mut cluster, c, at(3));
    assert_eq!(bodies(&again), ["a", "c"]);
    assert_eq!(cluster.permits(c), Some(1));
    let fresh = cluster.new_transaction(MINUTE, at(4));
    assert!(matches!(
        cluster.ack_in(fresh, c, &ids[1], at(4)),
        Err(ModelError::TransactionConflict {
            cause: Conflict::Acknowledged,
            ..
        })
    ));
    let last = cluster.new_transaction(MINUTE, at(4));
    cluster.ack_in(last, c, &ids[0], at(4)).unwrap();
    cluster.ack_in(last, c, &ids[2], at(4)).unwrap();
    cluster.commit(last, at(5)).unwrap();
    assert_eq!(cluster.backlog(&t, "sub"), Some(0));
}

#[test]
fn an_aborted_batch_index_acknowledgement_redelivers_the_entry() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    let c = shared(&mut cluster, &t, 10);
    let ids = batch_of_three(&mut cluster, &t);
    drain(&mut cluster, c, at(0));
    let txn = cluster.new_transaction(MINUTE, at(0));
    for id in &ids {
        cluster.ack_in(txn, c, id, at(1)).unwrap();
    }
    cluster.abort(txn, at(2)).unwrap();
    assert_eq!(
        counts(&drain(&mut cluster, c, at(2))),
        [("a".into(), 1), ("b".into(), 1), ("c".into(), 1)]
    );
    let again = cluster.new_transaction(MINUTE, at(3));
    assert_eq!(cluster.ack_in(again, c, &ids[1], at(3)), Ok(()));
}

// Partitioned topics.

#[test]
fn each_partition_has_its_own_transaction_buffer() {
    let mut cluster = Cluster::new();
    let t = topic("orders");
    cluster.create_partitioned_topic(&t, 2, at(0)).unwrap();
    let mut consumer = TopicsConsumer::subscribe(
        &mut cluster,
        TopicSelection::Topics(vec![t.clone()]),
        "sub",
        SubscriptionType::Shared,
        earliest(),
        at(0),
    )
    .unwrap();
    for c in consumer.consumers().collect::<Vec<_>>() {
        cluster.flow(c, 10, at(0)).unwrap();
    }
    let (p0, p1) = (t.partition(0), t.partition(1));
    let txn = cluster.new_transaction(MINUTE, at(0));
    assert_eq!(
        cluster.publish_in(txn, &t, OutgoingMessage::new("x"), at(0)),
        Err(ModelError::PartitionedTopic {
            topic: t.clone(),
            partitions: 2
        }),
        "the client routes each message to a partition"
    );
    send_in(&mut cluster, txn, &p0, "p0 in txn", at(1));
    send(&mut cluster, &p0, "p0 plain", at(2));
    send(&mut cluster, &p1, "p1 plain", at(3));
    let got: Vec<Dispatched> =
        std::iter::from_fn(|| consumer.receive(&mut cluster, at(3))).collect();
    assert_eq!(bodies(&got), ["p1 plain"], "partition 1 holds nothing back");
    cluster.commit(txn, at(4)).unwrap();
    let got: Vec<Dispatched> =
        std::iter::from_fn(|| consumer.receive(&mut cluster, at(4))).collect();
    assert_eq!(bodies(&got), ["p0 in txn", "p0 plain"]);
    assert_eq!(
        send(&mut cluster, &p1, "p1 next", at(5)).entry_id,
        1,
        "no marker on partition 1: the transaction did not publish there"
    );
    assert_eq!(send(&mut cluster, &p0, "p0 next", at(5)).entry_id, 3);
    // Acknowledging through the partition's consumer.
    let id = got[0].message_id;
    let owner = consumer.consumer_of(&id).expect("a partition's consumer");
    let acks = cluster.new_transaction(MINUTE, at(6));
    cluster.ack_in(acks, owner, &id, at(6)).unwrap();
    cluster.commit(acks, at(7)).unwrap();
    assert_eq!(
        cluster.backlog(&p0, "sub"),
        Some(2),
        "p0 plain and p0 next; the marker was read"
    );
}
