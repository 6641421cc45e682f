//! What a topic keeps of the messages published to it: everything (tests read topics back), or
//! only what a subscription still needs (a long `run --embedded` holds flat memory).
//!
//! Pulsar keeps a message while some subscription has not acknowledged it (its backlog), and
//! beyond that only as long as the namespace's retention policy says; the default retention
//! is none, so a ledger every cursor has moved past is deleted. The model has two policies:
//!
//! - [`Retention::KeepAll`], the default: every message ever published stays, with its payload,
//!   so that a test reads back what reached a topic ([`Cluster::topic_messages`]) and a
//!   subscription made later with [`InitialPosition::Earliest`] reads from the first message.
//!   What tests and `TestApp` rely on.
//! - [`Retention::UntilAcknowledged`]: a message's payload, properties and key are freed once
//!   every subscription of its topic has acknowledged it, cumulatively (its cursor's
//!   mark-delete position moved past it) or individually, and its record goes once every
//!   message before it went too; what `run --embedded` uses.
//!
//! Under [`Retention::UntilAcknowledged`]:
//!
//! - A message that a subscription has not acknowledged stays whole: redelivery after a
//!   negative acknowledgement, an ack timeout or a closed consumer, delayed delivery and
//!   dead-lettering (the client copies the message before it acknowledges it) work as under
//!   [`Retention::KeepAll`].
//! - The model acknowledges by entry (pulsar-rs sends no batch-index ack set, see
//!   [`Cluster::ack`]), so a batch is freed as a whole, when its entry is acknowledged.
//! - A freed message's memory is returned at one of its topic's next publishes, one a publish,
//!   on the publisher's thread, where the allocator reuses it for the next message; at most
//!   1,024 wait per topic, past which it is returned at once.
//! - A message published while its topic has no subscription is kept only while it is among
//!   the topic's last `without_subscription` entries (by default
//!   [`DEFAULT_KEPT_WITHOUT_SUBSCRIPTION`], Pulsar's `managedLedgerMaxEntriesPerLedger`: with
//!   no retention, Pulsar deletes every ledger but the one being written). So a topic nobody
//!   reads (a service's output, a dead-letter topic no handler reads) does not grow forever,
//!   and a subscription made soon after a publish, like a pattern consumer finding a new
//!   topic, still reads it.
//! - A subscription made later with [`InitialPosition::Earliest`] starts at the first message
//!   still kept, and skips those freed since, as Pulsar's earliest position is the first
//!   message not deleted. A topic's first subscription made at the latest position lets go at
//!   once of what the topic kept without one: nothing will read it.
//!
//! [`Cluster::topic_messages`]: crate::Cluster::topic_messages
//! [`Cluster::ack`]: crate::Cluster::ack
//! [`InitialPosition::Earliest`]: crate::InitialPosition::Earliest

/// How many entries a topic without subscription keeps under
/// [`Retention::UntilAcknowledged`] by default: Pulsar's `managedLedgerMaxEntriesPerLedger`
/// (50,000), the size of the one ledger a topic with no retention keeps.
pub const DEFAULT_KEPT_WITHOUT_SUBSCRIPTION: u64 = 50_000;

/// What a [`Cluster`](crate::Cluster)'s topics keep of the messages published to them (see
/// the [module](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Retention {
    /// Keep every message ever published, with its payload: tests read topics back.
    #[default]
    KeepAll,
    /// Free a message once every subscription of its topic acknowledged it; on a topic
    /// without subscription, keep the last `without_subscription` entries. Made with
    /// [`Retention::until_acknowledged`] or [`Retention::until_acknowledged_keeping`].
    #[non_exhaustive]
    UntilAcknowledged {
        /// How many of its last entries a topic without subscription keeps.
        without_subscription: u64,
    },
}

impl Retention {
    /// [`Retention::UntilAcknowledged`], a topic without subscription keeping its last
    /// [`DEFAULT_KEPT_WITHOUT_SUBSCRIPTION`] entries.
    pub const fn until_acknowledged() -> Self {
        Retention::until_acknowledged_keeping(DEFAULT_KEPT_WITHOUT_SUBSCRIPTION)
    }

    /// [`Retention::UntilAcknowledged`], a topic without subscription keeping its last
    /// `without_subscription` entries (0: none).
    pub const fn until_acknowledged_keeping(without_subscription: u64) -> Self {
        Retention::UntilAcknowledged {
            without_subscription,
        }
    }

    /// Whether messages are ever freed.
    pub const fn frees(self) -> bool {
        !matches!(self, Retention::KeepAll)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ruststream::{Instant, SubscriptionType};

    use super::*;
    use crate::{
        Cluster, ConsumerId, ConsumerOptions, DeadLetterPolicy, Dispatched, InitialPosition,
        OutgoingMessage, TopicName,
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

    fn consumer(
        cluster: &mut Cluster,
        t: &TopicName,
        subscription: &str,
        options: ConsumerOptions,
    ) -> ConsumerId {
        let c = cluster
            .subscribe(t, subscription, SubscriptionType::Shared, options, at(0))
            .expect("subscribed");
        cluster.flow(c, 1_000, at(0)).expect("flow");
        c
    }

    fn publish(cluster: &mut Cluster, t: &TopicName, bodies: &[&str], now: Instant) {
        for body in bodies {
            cluster
                .publish(t, OutgoingMessage::new(*body), now)
                .expect("published");
        }
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

    /// The payloads `topic` holds, `""` for a freed one.
    fn held(cluster: &Cluster, t: &TopicName) -> Vec<String> {
        cluster
            .topic_messages(t)
            .iter()
            .map(|m| String::from_utf8_lossy(m.payload()).into_owned())
            .collect()
    }

    fn ack_all(cluster: &mut Cluster, c: ConsumerId, deliveries: &[Dispatched], now: Instant) {
        for d in deliveries {
            cluster.ack(c, &d.message_id, now).expect("acknowledged");
        }
    }

    #[test]
    fn a_new_cluster_keeps_every_message_acknowledged_or_not() {
        let mut cluster = Cluster::new();
        assert_eq!(cluster.retention(), Retention::KeepAll);
        let t = topic("orders");
        let c = consumer(&mut cluster, &t, "s", earliest());
        publish(&mut cluster, &t, &["a", "b", "c"], at(0));
        let got = drain(&mut cluster, c, at(0));
        ack_all(&mut cluster, c, &got, at(0));
        assert_eq!(held(&cluster, &t), ["a", "b", "c"]);
        // Later subscriptions from the earliest position read them all again.
        let late = consumer(&mut cluster, &t, "late", earliest());
        assert_eq!(bodies(&drain(&mut cluster, late, at(0))), ["a", "b", "c"]);
    }

    #[test]
    fn a_message_every_subscription_acknowledged_is_freed_and_its_delivery_keeps_its_payload() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let c = consumer(&mut cluster, &t, "s", earliest());
        publish(&mut cluster, &t, &["a", "b", "c"], at(0));
        let got = drain(&mut cluster, c, at(0));
        cluster.ack(c, &got[1].message_id, at(0)).unwrap();
        assert_eq!(held(&cluster, &t), ["a", "", "c"], "b alone is freed");
        assert_eq!(
            bodies(&got),
            ["a", "b", "c"],
            "a delivery holds its own payload"
        );
        cluster.ack(c, &got[0].message_id, at(0)).unwrap();
        cluster.ack(c, &got[2].message_id, at(0)).unwrap();
        assert_eq!(held(&cluster, &t), ["", "", ""]);
        assert_eq!(cluster.backlog(&t, "s"), Some(0));
    }

    #[test]
    fn a_message_is_kept_until_the_last_subscription_acknowledges_it() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let first = consumer(&mut cluster, &t, "first", earliest());
        let second = consumer(&mut cluster, &t, "second", earliest());
        publish(&mut cluster, &t, &["a", "b"], at(0));
        let to_first = drain(&mut cluster, first, at(0));
        let to_second = drain(&mut cluster, second, at(0));
        ack_all(&mut cluster, first, &to_first, at(0));
        assert_eq!(
            held(&cluster, &t),
            ["a", "b"],
            "`second` has not acknowledged"
        );
        cluster
            .ack(second, &to_second[1].message_id, at(0))
            .unwrap();
        assert_eq!(held(&cluster, &t), ["a", ""]);
        cluster
            .ack(second, &to_second[0].message_id, at(0))
            .unwrap();
        assert_eq!(held(&cluster, &t), ["", ""]);
    }

    #[test]
    fn negatively_acknowledged_and_timed_out_messages_come_back_whole_beside_freed_ones() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let options = ConsumerOptions {
            ack_timeout: Some(Duration::from_secs(1)),
            ..earliest()
        };
        let c = consumer(&mut cluster, &t, "s", options);
        publish(
            &mut cluster,
            &t,
            &["nacked", "acked", "forgotten", "acked too"],
            at(0),
        );
        let got = drain(&mut cluster, c, at(0));
        cluster.ack(c, &got[1].message_id, at(0)).unwrap();
        cluster.ack(c, &got[3].message_id, at(0)).unwrap();
        cluster.nack(c, &got[0].message_id, at(0)).unwrap();
        let again = drain(&mut cluster, c, at(0));
        assert_eq!(bodies(&again), ["nacked"]);
        assert_eq!(again[0].redelivery_count, 1);
        cluster.ack(c, &again[0].message_id, at(0)).unwrap();
        // "forgotten" is neither acknowledged nor negatively acknowledged: its ack timeout
        // asks for it again at the first tick after 1 s.
        let tick = cluster.next_deadline().expect("an ack timeout is pending");
        cluster.handle_timeouts(tick);
        let redelivered = drain(&mut cluster, c, tick);
        assert_eq!(bodies(&redelivered), ["forgotten"]);
        assert_eq!(held(&cluster, &t), ["", "", "forgotten", ""]);
        cluster.ack(c, &redelivered[0].message_id, tick).unwrap();
        assert_eq!(held(&cluster, &t), ["", "", "", ""]);
    }

    #[test]
    fn unacknowledged_messages_of_a_closed_consumer_go_whole_to_the_next_one() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let gone = consumer(&mut cluster, &t, "s", earliest());
        publish(&mut cluster, &t, &["a", "b"], at(0));
        let got = drain(&mut cluster, gone, at(0));
        cluster.ack(gone, &got[0].message_id, at(0)).unwrap();
        cluster.close(gone, at(0)).unwrap();
        let next = consumer(&mut cluster, &t, "s", earliest());
        assert_eq!(bodies(&drain(&mut cluster, next, at(0))), ["b"]);
    }

    #[test]
    fn a_delayed_message_waits_whole_while_later_ones_are_freed() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let c = consumer(&mut cluster, &t, "s", earliest());
        let mut later = OutgoingMessage::new("later");
        later.deliver_at = Some(at(5_000));
        cluster.publish(&t, later, at(0)).unwrap();
        publish(&mut cluster, &t, &["now"], at(0));
        let got = drain(&mut cluster, c, at(0));
        ack_all(&mut cluster, c, &got, at(0));
        assert_eq!(held(&cluster, &t), ["later", ""]);
        cluster.handle_timeouts(at(5_000));
        let due = drain(&mut cluster, c, at(5_000));
        assert_eq!(bodies(&due), ["later"]);
        ack_all(&mut cluster, c, &due, at(5_000));
        assert_eq!(held(&cluster, &t), ["", ""]);
    }

    #[test]
    fn a_dead_lettered_message_is_freed_and_its_copy_kept_on_a_topic_nobody_reads() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let dlq = topic("orders-dlq");
        let options = ConsumerOptions {
            dead_letter: Some(DeadLetterPolicy {
                max_redeliver_count: 1,
                dead_letter_topic: dlq.clone(),
            }),
            ..earliest()
        };
        let c = consumer(&mut cluster, &t, "s", options);
        publish(&mut cluster, &t, &["poison"], at(0));
        let first = drain(&mut cluster, c, at(0));
        cluster.nack(c, &first[0].message_id, at(0)).unwrap();
        assert!(
            drain(&mut cluster, c, at(0)).is_empty(),
            "the client dead-letters the redelivery"
        );
        assert_eq!(held(&cluster, &t), [""]);
        assert_eq!(held(&cluster, &dlq), ["poison"]);
    }

    #[test]
    fn a_batch_is_freed_whole_when_its_entry_is_acknowledged() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let c = consumer(&mut cluster, &t, "s", earliest());
        let batch = ["a", "b", "c"].map(OutgoingMessage::new).to_vec();
        cluster.publish_batch(&t, batch, at(0)).unwrap();
        publish(&mut cluster, &t, &["d"], at(0));
        let got = drain(&mut cluster, c, at(0));
        assert_eq!(bodies(&got), ["a", "b", "c", "d"]);
        // pulsar-rs sends no batch-index ack set: one id acknowledges the entry.
        cluster.ack(c, &got[1].message_id, at(0)).unwrap();
        assert_eq!(held(&cluster, &t), ["", "", "", "d"]);
    }

    #[test]
    fn a_topic_without_subscription_keeps_only_its_last_entries() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged_keeping(2));
        let t = topic("orders");
        publish(&mut cluster, &t, &["a", "b", "c", "d", "e"], at(0));
        assert_eq!(held(&cluster, &t), ["", "", "", "d", "e"]);
        let late = consumer(&mut cluster, &t, "late", earliest());
        assert_eq!(bodies(&drain(&mut cluster, late, at(0))), ["d", "e"]);
    }

    #[test]
    fn a_first_subscription_at_the_latest_position_lets_go_of_what_was_kept_without_one() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        publish(&mut cluster, &t, &["a", "b", "c"], at(0));
        assert_eq!(held(&cluster, &t), ["a", "b", "c"]);
        let c = consumer(&mut cluster, &t, "s", ConsumerOptions::default());
        assert_eq!(held(&cluster, &t), ["", "", ""]);
        publish(&mut cluster, &t, &["d"], at(0));
        assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["d"]);
    }

    #[test]
    fn a_first_subscription_at_the_earliest_position_keeps_what_was_kept_without_one() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        publish(&mut cluster, &t, &["a", "b", "c"], at(0));
        let c = consumer(&mut cluster, &t, "s", earliest());
        assert_eq!(held(&cluster, &t), ["a", "b", "c"]);
        assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["a", "b", "c"]);
    }

    #[test]
    fn a_later_subscription_from_the_earliest_position_skips_what_was_freed() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let c = consumer(&mut cluster, &t, "s", earliest());
        publish(&mut cluster, &t, &["a", "b", "c", "d"], at(0));
        let got = drain(&mut cluster, c, at(0));
        cluster.ack(c, &got[0].message_id, at(0)).unwrap();
        cluster.ack(c, &got[2].message_id, at(0)).unwrap();
        let late = consumer(&mut cluster, &t, "late", earliest());
        assert_eq!(bodies(&drain(&mut cluster, late, at(0))), ["b", "d"]);
        assert_eq!(cluster.backlog(&t, "late"), Some(2));
    }

    #[test]
    fn a_long_run_holds_the_records_of_the_messages_in_flight_only() {
        let mut cluster = Cluster::with_retention(Retention::until_acknowledged());
        let t = topic("orders");
        let c = consumer(&mut cluster, &t, "s", ConsumerOptions::default());
        let mut most = 0;
        for round in 0..100 {
            let now = at(round);
            publish(&mut cluster, &t, &["x"; 50], now);
            most = most.max(cluster.topic_messages(&t).len());
            let got = drain(&mut cluster, c, now);
            cluster.flow(c, 50, now).unwrap();
            ack_all(&mut cluster, c, &got, now);
        }
        assert!(
            most <= 2 * 50 + 64,
            "at most twice the 50 messages in flight and the trimming slack are held, not \
             {most} of 5,000"
        );
    }
}
