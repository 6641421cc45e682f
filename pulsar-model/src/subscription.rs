//! A durable subscription: its cursor and the broker's bookkeeping of what is out.

use std::collections::{BTreeMap, BTreeSet};

use ruststream::{Instant, SubscriptionType};

use crate::consumer::Consumer;
use crate::deadlines::Deadlines;
use crate::pending_ack::PendingAckHandle;
use crate::ConsumerId;

/// What Pulsar keeps for one subscription: the cursor (Pulsar's `ManagedCursor`: a start,
/// individually deleted entries and a read position) and the dispatcher's state.
///
/// Entries are numbered by their index in the topic (their `entry_id`).
#[derive(Debug)]
pub(crate) struct Subscription {
    /// The type of the connected consumers (the dispatcher's type).
    pub(crate) kind: SubscriptionType,
    /// Connected consumers, ordered by priority level, then by arrival (as Pulsar's
    /// `consumerList`).
    pub(crate) consumers: Vec<ConsumerId>,
    /// Pulsar's mark-delete position: every entry before it is settled (acknowledged, or
    /// published before the subscription existed). It moves up as the first unsettled entry is
    /// acknowledged, so in-order acknowledgement keeps `acked` small.
    pub(crate) mark_delete: u64,
    /// Entries at or after `mark_delete` acknowledged individually (Pulsar's
    /// `individualDeletedMessages`).
    pub(crate) acked: BTreeSet<u64>,
    /// The next entry a normal read returns.
    pub(crate) read_position: u64,
    /// Entries to send again before new ones (Shared and KeyShared): Pulsar's
    /// `redeliveryMessages`.
    pub(crate) replay: BTreeSet<u64>,
    /// Pulsar's `InMemoryRedeliveryTracker` (Shared and KeyShared only).
    pub(crate) redelivery_counts: BTreeMap<u64, u32>,
    /// Where the round-robin over `consumers` continues (Shared).
    pub(crate) round_robin: usize,
    /// The consumer receiving messages (Exclusive and Failover).
    pub(crate) active: Option<ConsumerId>,
    /// Entries read before their delayed-delivery time, with that time (Shared and
    /// KeyShared): Pulsar's `DelayedDeliveryTracker`.
    pub(crate) delayed: Deadlines<u64>,
    /// Acknowledgements made in transactions not ended yet: Pulsar's pending-ack handle.
    pub(crate) txn_acks: PendingAckHandle,
    /// For a batched entry of which some messages, not all, were acknowledged at batch-index
    /// level (committed transactional acknowledgements, on a cluster with batch-index
    /// acknowledgement): those indexes (the cursor's `batchDeletedIndexes`). They are not sent
    /// again when the entry is.
    pub(crate) batch_deleted: BTreeMap<u64, BTreeSet<u32>>,
}

impl Subscription {
    pub(crate) fn new(kind: SubscriptionType, start: u64) -> Self {
        Subscription {
            kind,
            consumers: Vec::new(),
            mark_delete: start,
            acked: BTreeSet::new(),
            read_position: start,
            replay: BTreeSet::new(),
            redelivery_counts: BTreeMap::new(),
            round_robin: 0,
            active: None,
            delayed: Deadlines::default(),
            txn_acks: PendingAckHandle::default(),
            batch_deleted: BTreeMap::new(),
        }
    }

    /// A subscription made at `start` on a topic where `settled` (entries at or after `start`)
    /// need no delivery: entries the retention freed, as if acknowledged.
    pub(crate) fn starting_at(kind: SubscriptionType, start: u64, settled: Vec<u64>) -> Self {
        let mut sub = Subscription::new(kind, start);
        sub.acked.extend(settled);
        while sub.acked.first() == Some(&sub.mark_delete) {
            sub.acked.pop_first();
            sub.mark_delete += 1;
        }
        sub.read_position = sub.mark_delete;
        sub
    }

    /// Move the delayed entries due at `now` to the replay set; whether any moved.
    pub(crate) fn release_delayed(&mut self, now: Instant) -> bool {
        let due = self.delayed.take_due(now, true);
        self.replay.extend(due.iter().copied());
        !due.is_empty()
    }

    /// The earliest delayed-delivery time still waiting.
    pub(crate) fn next_delayed(&self) -> Option<Instant> {
        self.delayed.earliest()
    }

    /// Whether this type has one receiving consumer (Exclusive, Failover) rather than many.
    pub(crate) fn single_active(&self) -> bool {
        !self.kind.counts_redeliveries()
    }

    /// Whether the entry needs no (more) delivery on this subscription.
    pub(crate) fn is_settled(&self, entry: u64) -> bool {
        entry < self.mark_delete || self.acked.contains(&entry)
    }

    /// Move the read position back to the first entry not acknowledged: Pulsar's
    /// `cursor.rewind()`. Acknowledged entries are skipped when read.
    pub(crate) fn rewind(&mut self) {
        self.read_position = self.mark_delete;
    }

    /// The next entry a normal read returns, skipping settled ones, or `None` at the end.
    pub(crate) fn read_next(&mut self, len: u64) -> Option<u64> {
        while self.read_position < len {
            let entry = self.read_position;
            self.read_position += 1;
            if !self.is_settled(entry) {
                return Some(entry);
            }
        }
        None
    }

    /// Acknowledge the entry, whoever it was sent to (Pulsar's `getAckOwnerConsumer` looks
    /// through the other consumers' pending acks). `false` if it was already settled.
    pub(crate) fn acknowledge(
        &mut self,
        entry: u64,
        consumers: &mut BTreeMap<ConsumerId, Consumer>,
    ) -> bool {
        if self.is_settled(entry) {
            return false;
        }
        if entry == self.mark_delete {
            self.mark_delete += 1;
            while self.acked.first() == Some(&self.mark_delete) {
                self.acked.pop_first();
                self.mark_delete += 1;
            }
        } else {
            self.acked.insert(entry);
        }
        self.replay.remove(&entry);
        self.redelivery_counts.remove(&entry);
        // `PersistentSubscription.acknowledgeMessage`: a deleted entry is pending in no
        // transaction any more (`clearIndividualPosition`), and keeps no batch indexes.
        if !self.txn_acks.is_empty() {
            self.txn_acks.cleared(entry, self.mark_delete);
        }
        if !self.batch_deleted.is_empty() {
            self.batch_deleted.remove(&entry);
        }
        for id in &self.consumers {
            if let Some(consumer) = consumers.get_mut(id) {
                consumer.pending_acks.remove(&entry);
            }
        }
        true
    }

    /// The number of entries of a topic of `len` entries still to be acknowledged.
    pub(crate) fn backlog(&self, len: u64) -> usize {
        let unsettled = len.saturating_sub(self.mark_delete) as usize;
        unsettled - self.acked.range(self.mark_delete..len).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_delete_position_moves_over_every_acknowledged_entry_in_a_row() {
        let mut sub = Subscription::new(SubscriptionType::Shared, 2);
        let mut consumers = BTreeMap::new();
        assert!(sub.is_settled(1), "published before the subscription");
        assert_eq!(sub.backlog(8), 6);
        assert!(sub.acknowledge(4, &mut consumers));
        assert!(sub.acknowledge(3, &mut consumers));
        assert_eq!((sub.mark_delete, sub.acked.len()), (2, 2), "a hole at 2");
        assert_eq!(sub.backlog(8), 4);
        assert!(sub.acknowledge(2, &mut consumers));
        assert_eq!(
            (sub.mark_delete, sub.acked.len()),
            (5, 0),
            "2, 3, 4 in a row"
        );
        assert!(!sub.acknowledge(3, &mut consumers), "already settled");
        assert!(sub.acknowledge(6, &mut consumers));
        assert_eq!(sub.backlog(8), 2, "5 and 7");
        sub.read_position = 8;
        sub.rewind();
        assert_eq!(sub.read_next(8), Some(5));
        assert_eq!(sub.read_next(8), Some(7));
        assert_eq!(sub.read_next(8), None);
    }
}
