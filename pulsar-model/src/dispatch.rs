//! Sending a subscription's messages to its consumers, and what the client does on receipt.
//!
//! Broker side, per type:
//!
//! - **Shared** (`PersistentDispatcherMultipleConsumers`): a read takes up to
//!   `min(total permits, 100)` entries (`dispatcherMaxReadBatchSize`), from the replay set if it
//!   is not empty, else from the cursor. They are handed out round-robin, each consumer taking
//!   up to `min(its permits, 20)` consecutive entries (`dispatcherMaxRoundRobinBatchSize`);
//!   entries no one could take go to the replay set. The round-robin serves the best priority
//!   level with permits first (`getNextConsumer`).
//! - **KeyShared** (`PersistentStickyKeyDispatcherMultipleConsumers`): replayed entries first,
//!   then new ones, in entry order; each goes to the consumer owning its key on the hash ring
//!   ([`crate::sticky_key`]). An entry is held back (into the replay set) when that consumer has
//!   no permit, when an earlier entry of the same key was held back in this pass, or while
//!   another consumer still has an unacknowledged entry of that key (Pulsar 4's "draining
//!   hashes", PIP-379, after a consumer joins). So a key's entries are delivered in order, and a
//!   redelivered entry always goes before the later entries of its key not yet delivered.
//! - **Exclusive / Failover** (`PersistentDispatcherSingleActiveConsumer`): the active consumer
//!   gets entries from the cursor while it has permits.
//!
//! Every message sent takes one permit, a batched entry one per message of it
//! (`Consumer.sendMessages`). On Shared and KeyShared it is
//! recorded in the consumer's pending acks and carries the redelivery tracker's count for it;
//! the single-active types carry 0 (`RedeliveryTrackerDisabled`).
//!
//! Every type reads new entries only up to the topic's max read position, before the first
//! message of its oldest open transaction ([`crate::transaction`]), and acknowledges the
//! entries that hold no message as it reads them, sending nothing: transaction markers and the
//! entries of aborted transactions (`AbstractBaseDispatcher.filterEntriesForConsumer`). They
//! take their place in a read, as on the broker (a Shared consumer handed a chunk of entries
//! with a marker in it gets one message fewer), but no permit.
//!
//! Client side, on receipt (pulsar-rs `ConsumerEngine::process_payload`): the dead-letter check
//! ([`crate::dead_letter`]) may publish the message to the dead-letter topic and acknowledge
//! it; otherwise it joins the consumer's queue for the application. Its ack timeout starts
//! when the application takes it from there (`Cluster::receive`), not here.

use std::collections::{BTreeMap, BTreeSet};

use ruststream::Instant;

use crate::consumer::Consumer;
use crate::dead_letter::dead_letter_copy;
use crate::roster::Member;
use crate::sticky_key::{sticky_key_hash, HashRing};
use crate::subscription::Subscription;
use crate::topic::Store;
use crate::{ConsumerId, Dispatched, OutgoingMessage, TopicName};
use ruststream::SubscriptionType;

/// `dispatcherMaxReadBatchSize`, Pulsar's default.
const READ_BATCH: u64 = 100;
/// `dispatcherMaxRoundRobinBatchSize`, Pulsar's default.
const ROUND_ROBIN_BATCH: u64 = 20;

/// One dispatch pass over one subscription.
pub(crate) struct Dispatch<'a> {
    pub(crate) topic: &'a TopicName,
    pub(crate) store: &'a Store,
    /// The first entry not readable yet: the max read position plus one.
    pub(crate) readable: u64,
    pub(crate) consumers: &'a mut BTreeMap<ConsumerId, Consumer>,
    pub(crate) now: Instant,
    /// Copies the clients publish to dead-letter topics, in order.
    pub(crate) dead_letters: &'a mut Vec<(TopicName, OutgoingMessage)>,
    /// Entries the clients acknowledged in this pass (dead-lettered), for the retention.
    pub(crate) settled: &'a mut Vec<u64>,
    /// The entries of one read, kept between passes so that a read allocates nothing.
    pub(crate) read: &'a mut Vec<u64>,
    /// Deliveries queued for every consumer of the cluster, counted up as they are queued.
    pub(crate) queued: &'a mut usize,
}

impl Dispatch<'_> {
    /// Send what can be sent; `true` if anything was.
    pub(crate) fn run(&mut self, sub: &mut Subscription) -> bool {
        match sub.kind {
            SubscriptionType::KeyShared => self.key_shared(sub),
            _ if sub.single_active() => self.single_active(sub),
            _ => self.shared(sub),
        }
    }

    fn permits(&self, id: ConsumerId) -> u64 {
        self.consumers.get(&id).map_or(0, |c| c.permits)
    }

    fn total_permits(&self, sub: &Subscription) -> u64 {
        sub.consumers.iter().map(|&id| self.permits(id)).sum()
    }

    /// How far a normal read may go (see [`Dispatch::readable`]).
    #[inline]
    fn len(&self) -> u64 {
        self.readable
    }

    /// If `entry` holds no message (a transaction marker, an aborted transaction's entry),
    /// acknowledge it on the subscription instead of sending it, as the broker's dispatcher
    /// does when it reads one (`individualAcknowledgeMessageIfNeeded`).
    #[inline]
    fn skip_hollow(&mut self, sub: &mut Subscription, entry: u64) -> bool {
        if !self.store.is_hollow(entry) {
            return false;
        }
        sub.replay.remove(&entry);
        if sub.acknowledge(entry, self.consumers) {
            self.settled.push(entry);
        }
        true
    }

    fn single_active(&mut self, sub: &mut Subscription) -> bool {
        let Some(active) = sub.active else {
            return false;
        };
        let mut progress = false;
        while self.permits(active) > 0 {
            let Some(entry) = sub.read_next(self.len()) else {
                break;
            };
            if self.skip_hollow(sub, entry) {
                continue;
            }
            self.send(sub, active, entry);
            progress = true;
        }
        progress
    }

    fn shared(&mut self, sub: &mut Subscription) -> bool {
        let mut progress = false;
        loop {
            let total = self.total_permits(sub);
            if total == 0 {
                break;
            }
            let batch = total.min(READ_BATCH) as usize;
            let replaying = !sub.replay.is_empty();
            let mut entries = std::mem::take(self.read);
            entries.clear();
            if replaying {
                // The first `batch` unsettled entries, in order; settled ones met on the way
                // leave the set. No copy of the whole set: it can hold every waiting message.
                let mut settled = Vec::new();
                for &entry in &sub.replay {
                    if entries.len() == batch {
                        break;
                    }
                    if sub.is_settled(entry) {
                        settled.push(entry);
                    } else {
                        entries.push(entry);
                    }
                }
                for entry in &settled {
                    sub.replay.remove(entry);
                }
                if entries.is_empty() {
                    *self.read = entries;
                    continue;
                }
            } else {
                while entries.len() < batch {
                    let Some(entry) = sub.read_next(self.len()) else {
                        break;
                    };
                    if !self.hold_if_delayed(sub, entry) {
                        entries.push(entry);
                    }
                }
                if entries.is_empty() {
                    *self.read = entries;
                    break;
                }
            }

            let mut start = 0;
            while start < entries.len() {
                let Some(consumer) = self.next_consumer(sub) else {
                    break;
                };
                let take = (entries.len() - start) as u64;
                let take = take.min(self.permits(consumer)).min(ROUND_ROBIN_BATCH) as usize;
                for &entry in &entries[start..start + take] {
                    sub.replay.remove(&entry);
                    if !self.skip_hollow(sub, entry) {
                        self.send(sub, consumer, entry);
                    }
                }
                start += take;
                progress = true;
            }
            if !replaying {
                sub.replay.extend(&entries[start..]);
            }
            *self.read = entries;
        }
        progress
    }

    /// Pulsar's `getNextConsumer`: the best priority level that has a consumer with permits,
    /// and within it the first such consumer at or after the round-robin position.
    fn next_consumer(&self, sub: &mut Subscription) -> Option<ConsumerId> {
        let n = sub.consumers.len();
        if sub.round_robin >= n {
            sub.round_robin = 0;
        }
        let level = |id: &ConsumerId| {
            self.consumers
                .get(id)
                .map_or(i32::MAX, |c| c.priority_level)
        };
        let best = sub
            .consumers
            .iter()
            .filter(|&&id| self.permits(id) > 0)
            .map(level)
            .min()?;
        let index = (sub.round_robin..n).chain(0..sub.round_robin).find(|&i| {
            let id = sub.consumers[i];
            self.permits(id) > 0 && level(&id) == best
        })?;
        sub.round_robin = index + 1;
        Some(sub.consumers[index])
    }

    fn key_shared(&mut self, sub: &mut Subscription) -> bool {
        let members: Vec<Member> = sub
            .consumers
            .iter()
            .filter_map(|id| {
                self.consumers.get(id).map(|c| Member {
                    id: *id,
                    name: c.name.clone(),
                    priority_level: c.priority_level,
                })
            })
            .collect();
        let ring = HashRing::new(&members);
        let mut progress = false;
        loop {
            let total = self.total_permits(sub);
            if total == 0 {
                break;
            }
            let mut held: BTreeSet<u32> = BTreeSet::new();
            let mut sent = false;
            for entry in sub.replay.clone() {
                if sub.is_settled(entry) {
                    sub.replay.remove(&entry);
                } else if !self.skip_hollow(sub, entry)
                    && self.try_send_keyed(sub, &ring, &mut held, entry)
                {
                    sub.replay.remove(&entry);
                    sent = true;
                }
            }
            for _ in 0..total.min(READ_BATCH) {
                let Some(entry) = sub.read_next(self.len()) else {
                    break;
                };
                if self.skip_hollow(sub, entry) || self.hold_if_delayed(sub, entry) {
                    continue;
                }
                if self.try_send_keyed(sub, &ring, &mut held, entry) {
                    sent = true;
                } else {
                    sub.replay.insert(entry);
                }
            }
            if !sent {
                break;
            }
            progress = true;
        }
        progress
    }

    /// Pulsar's `DelayedDeliveryTracker`: an entry read before its `deliver_at` is set aside
    /// until then (it joins the replay set when due, see `Cluster::handle_timeouts`).
    fn hold_if_delayed(&self, sub: &mut Subscription, entry: u64) -> bool {
        match self.store.entry(entry).first().and_then(|m| m.deliver_at) {
            Some(at) if at > self.now => {
                sub.delayed.insert(entry, at);
                true
            }
            _ => false,
        }
    }

    fn key_hash(&self, entry: u64) -> u32 {
        // A batch is dispatched by the key of its entry; producers on KeyShared batch by key
        // (the Java client's key-based batcher), so every message of it has that key.
        sticky_key_hash(
            self.store
                .entry(entry)
                .first()
                .and_then(|m| m.key.as_deref()),
        )
    }

    fn try_send_keyed(
        &mut self,
        sub: &mut Subscription,
        ring: &HashRing,
        held: &mut BTreeSet<u32>,
        entry: u64,
    ) -> bool {
        let hash = self.key_hash(entry);
        if held.contains(&hash) {
            return false;
        }
        let Some(owner) = ring.select(hash) else {
            held.insert(hash);
            return false;
        };
        let draining = sub.consumers.iter().any(|&other| {
            other != owner
                && self
                    .consumers
                    .get(&other)
                    .is_some_and(|c| c.pending_acks.iter().any(|&p| self.key_hash(p) == hash))
        });
        if draining || self.permits(owner) == 0 {
            held.insert(hash);
            return false;
        }
        self.send(sub, owner, entry);
        true
    }

    /// The broker sends `entry` to `to`; the client engine receives it and splits a batch
    /// into its messages, each with the entry's redelivery count: it dead-letters them (the
    /// count is the entry's, so either every message of it goes or none), or queues them for
    /// the application (their ack timeouts start when it takes them).
    fn send(&mut self, sub: &mut Subscription, to: ConsumerId, entry: u64) {
        let store = self.store;
        let messages = store.entry(entry);
        let counted = !sub.single_active();
        let redelivery_count = if counted {
            sub.redelivery_counts.get(&entry).copied().unwrap_or(0)
        } else {
            0
        };
        // Batch indexes the cursor deleted (committed transactional acknowledgements at
        // batch-index level) are not sent again: the broker sends the entry with its ack set
        // and takes permits for the others only (`Consumer.sendMessages`), and the client
        // skips them (`ConsumerImpl.receiveIndividualMessagesFromBatch`; pulsar-rs with
        // ruststream's `pulsar-batch-ack-set.patch`).
        let deleted = if sub.batch_deleted.is_empty() {
            None
        } else {
            sub.batch_deleted.get(&entry).cloned()
        };
        let is_deleted = |message: &crate::StoredMessage| {
            deleted.as_ref().is_some_and(|deleted| {
                message
                    .id
                    .batch_index
                    .is_some_and(|index| deleted.contains(&(index as u32)))
            })
        };
        let sent = messages.len() - deleted.as_ref().map_or(0, BTreeSet::len);
        let Some(consumer) = self.consumers.get_mut(&to) else {
            return;
        };
        // The broker takes a permit per message of the entry; its count may go below zero
        // (a batch larger than the permits left), where the model stops at zero.
        consumer.permits = consumer.permits.saturating_sub(sent as u64);
        if counted {
            consumer.pending_acks.insert(entry);
        }
        let dead_letter_topic = consumer
            .options
            .dead_letter
            .as_ref()
            .filter(|policy| policy.applies_to(redelivery_count))
            .map(|policy| policy.dead_letter_topic.clone());
        let Some(dead_letter_topic) = dead_letter_topic else {
            // The common case, with the one look-up of the consumer above.
            *self.queued += sent;
            // A loop, not `extend`: `VecDeque`'s extend measured slower per message here.
            for message in messages {
                if deleted.is_some() && is_deleted(message) {
                    continue;
                }
                consumer.queue.push_back(Dispatched {
                    consumer: to,
                    message_id: message.id,
                    topic: self.topic.clone(),
                    content: message.content.clone(),
                    key: message.key.clone(),
                    redelivery_count,
                    publish_time: message.publish_time,
                    event_time: message.event_time,
                    batch_size: message.batch_size,
                });
            }
            return;
        };
        for message in messages {
            if is_deleted(message) {
                continue;
            }
            if let Some(tracker) = self
                .consumers
                .get_mut(&to)
                .and_then(|consumer| consumer.unacked.as_mut())
            {
                tracker.acknowledged(&message.id);
            }
            let copy = dead_letter_copy(message, self.topic, message.id);
            self.dead_letters.push((dead_letter_topic.clone(), copy));
            if sub.acknowledge(entry, self.consumers) {
                self.settled.push(entry);
            }
        }
    }
}
