//! The in-process Pulsar: topics, subscriptions, consumers, and the clock-driven client timers.

mod inspect;
mod schema;
mod timers;

use std::collections::BTreeMap;

use ruststream::{Instant, SubscriptionType};

use crate::active_consumer::pick_active;
use crate::consumer::Consumer;
use crate::deadline_cache::DeadlineCache;
use crate::dispatch::Dispatch;
use crate::persistent::require_persistent;
use crate::roster::Member;
use crate::subscription::Subscription;
use crate::topic::Topic;
use crate::transaction::Coordinator;
use crate::{
    Acknowledgement, ConsumerId, ConsumerOptions, Dispatched, MessageId, ModelError,
    OutgoingMessage, Redelivery, Retention, TopicName,
};

/// A Pulsar cluster with its pulsar-rs consumers, run by hand.
///
/// Every call that can move messages takes `now` and first runs whatever client timers are due
/// at or before it ([`Cluster::handle_timeouts`]), then applies the call, then dispatches
/// everything the broker can send. Nothing happens between calls: the caller asks
/// [`Cluster::next_deadline`] when the next timer fires and calls back then. Calls must be made
/// with instants that never go back.
///
/// Flow control is the caller's: a consumer receives messages only while it has permits
/// ([`Cluster::flow`]), as with Pulsar's `Flow` command. A message dead-lettered by the client
/// uses a permit like any other, as it does in pulsar-rs (whose engine counts every message the
/// broker sends).
#[derive(Debug, Default)]
pub struct Cluster {
    pub(crate) topics: BTreeMap<TopicName, Topic>,
    pub(crate) consumers: BTreeMap<ConsumerId, Consumer>,
    last_consumer_id: u64,
    last_ledger_id: u64,
    /// The entries of a dispatch read, reused.
    read: Vec<u64>,
    /// [`Cluster::next_deadline`]'s answer while nothing that moves a deadline happened.
    pub(crate) next_deadline: DeadlineCache,
    /// How many connected consumers have an ack timeout: with none, and no delayed message
    /// ever published, no timer can exist and [`Cluster::next_deadline`] answers at once.
    /// Most services use neither, and every call asks.
    timed_consumers: usize,
    /// Whether a message with a delivery time was ever published (kept once set: its entry
    /// may wait on any subscription, read later or not).
    pub(crate) delayed_published: bool,
    /// Deliveries queued for all consumers, [`Cluster::queued`].
    queued: usize,
    /// Partitioned topics and the names of their partitions, in index order.
    partitioned: BTreeMap<TopicName, Vec<TopicName>>,
    /// What topics keep of what was published to them.
    pub(crate) retention: Retention,
    /// The transaction coordinator: transactions and their timeouts.
    pub(crate) coordinator: Coordinator,
    /// Whether subscriptions acknowledge at batch-index level
    /// ([`Cluster::with_batch_index_acknowledgement`]).
    pub(crate) batch_index_acks: bool,
}

impl Cluster {
    /// An empty cluster: no topics, no consumers; every message ever published is kept
    /// ([`Retention::KeepAll`]), as tests read topics back.
    pub fn new() -> Self {
        Cluster::default()
    }

    /// An empty cluster whose topics keep what `retention` says: [`Retention::KeepAll`] for
    /// tests, [`Retention::until_acknowledged`] for a long run whose memory must not grow
    /// with the messages it handled (see [`crate::retention`]).
    pub fn with_retention(retention: Retention) -> Self {
        Cluster {
            retention,
            ..Cluster::default()
        }
    }

    /// What the topics keep.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// The same cluster, its subscriptions acknowledging at batch-index level or not: Apache
    /// Pulsar's `acknowledgmentAtBatchIndexLevelEnabled` (off by default, as in 4.0.7), which
    /// Pulsar's documentation asks for to acknowledge messages of batches in transactions.
    ///
    /// On, a committed transactional acknowledgement of a message of a batch (which carries
    /// its batch index, see [`Cluster::ack_in`]) acknowledges that message alone: the entry is
    /// acknowledged once all its messages are, and until then a redelivery of the entry
    /// leaves out those acknowledged. Off, the cursor ignores such acknowledgements and the
    /// entry stays unacknowledged (see [`crate::transaction`]). Plain acknowledgements
    /// ([`Cluster::ack`]) are of whole entries either way: the model's client sends no
    /// batch-index ack set.
    pub fn with_batch_index_acknowledgement(mut self, enabled: bool) -> Self {
        self.batch_index_acks = enabled;
        self
    }

    /// Whether subscriptions acknowledge at batch-index level
    /// ([`Cluster::with_batch_index_acknowledgement`]).
    pub fn batch_index_acknowledgement(&self) -> bool {
        self.batch_index_acks
    }

    /// Connect a consumer to `subscription` on `topic`, creating the topic and the
    /// subscription if needed (a new subscription starts at `options.initial_position`).
    ///
    /// Refused as Pulsar refuses it: an Exclusive subscription that already has a consumer
    /// ([`ModelError::ExclusiveConsumerBusy`]); a type other than that of the connected
    /// consumers ([`ModelError::SubscriptionTypeMismatch`]); a non-persistent topic or
    /// dead-letter topic ([`ModelError::NonPersistentTopic`]).
    ///
    /// The first consumer of a subscription rewinds it: every unacknowledged message is sent
    /// again (Pulsar rewinds the cursor when a dispatcher gets its first consumer). The new
    /// consumer has no permits until [`Cluster::flow`].
    pub fn subscribe(
        &mut self,
        topic: &TopicName,
        subscription: &str,
        kind: SubscriptionType,
        options: ConsumerOptions,
        now: Instant,
    ) -> Result<ConsumerId, ModelError> {
        self.handle_timeouts(now);
        require_persistent(topic)?;
        self.require_not_partitioned(topic)?;
        if let Some(policy) = &options.dead_letter {
            require_persistent(&policy.dead_letter_topic)?;
        }
        if let Some(schema) = &options.schema {
            self.declare_schema(topic, schema, false, now)?;
        }
        let topic_state = self.topic_mut(topic, now);
        // A new subscription starts at its initial position among the entries still kept.
        let start = (!topic_state.subscriptions.contains_key(subscription))
            .then(|| topic_state.start_of(options.initial_position));
        let sub = topic_state
            .subscriptions
            .entry(subscription.to_owned())
            .or_insert_with(|| {
                let (start, settled) = start.unwrap_or_default();
                Subscription::starting_at(kind, start, settled)
            });
        if sub.consumers.is_empty() {
            sub.kind = kind;
            sub.rewind();
            sub.replay.clear();
            sub.redelivery_counts.clear();
            sub.active = None;
            sub.round_robin = 0;
        } else if sub.kind != kind {
            return Err(ModelError::SubscriptionTypeMismatch {
                topic: topic.clone(),
                subscription: subscription.to_owned(),
                existing: sub.kind,
                requested: kind,
            });
        } else if kind == SubscriptionType::Exclusive {
            return Err(ModelError::ExclusiveConsumerBusy {
                topic: topic.clone(),
                subscription: subscription.to_owned(),
            });
        }

        self.last_consumer_id += 1;
        let id = ConsumerId(self.last_consumer_id);
        let consumer = Consumer::new(id, topic.clone(), subscription.into(), options, now);
        self.timed_consumers += usize::from(consumer.unacked.is_some());
        self.consumers.insert(id, consumer);
        let consumers = &self.consumers;
        let sub = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.subscriptions.get_mut(subscription))
            .expect("created above");
        sub.consumers.push(id);
        sub.consumers
            .sort_by_key(|c| consumers.get(c).map_or(i32::MAX, |c| c.priority_level));
        if sub.single_active() {
            repick_active(topic, sub, consumers);
        }
        // A topic's first subscription may let go of what the topic kept without one.
        if let Some(t) = self.topics.get_mut(topic) {
            t.retain(self.retention);
        }
        self.pump(now);
        Ok(id)
    }

    /// Create `topic` as a partitioned topic of `partitions` partitions, each an ordinary topic
    /// named `<topic>-partition-<i>`: Pulsar's `PUT /admin/v2/persistent/{tenant}/{namespace}/
    /// {topic}/partitions`. The partitions exist from now on (a pattern consumer finds them).
    ///
    /// Refused as Pulsar refuses it: where a topic or partitioned topic of that name exists
    /// ([`ModelError::TopicExists`]), with no partitions or on a partition's own name
    /// ([`ModelError::InvalidPartitioning`]), on a non-persistent topic.
    pub fn create_partitioned_topic(
        &mut self,
        topic: &TopicName,
        partitions: u32,
        now: Instant,
    ) -> Result<(), ModelError> {
        require_persistent(topic)?;
        let invalid = |why| ModelError::InvalidPartitioning {
            topic: topic.clone(),
            partitions,
            why,
        };
        if partitions == 0 {
            return Err(invalid("a partitioned topic has at least one partition"));
        }
        if topic.partition_index().is_some() {
            return Err(invalid(
                "the name is that of a partition (it ends in `-partition-<n>`); name the \
                 partitioned topic without that suffix",
            ));
        }
        let existing = match self.partitioned.get(topic) {
            Some(names) => Some(format!("a partitioned topic of {} partitions", names.len())),
            None => self
                .topics
                .contains_key(topic)
                .then(|| "a topic".to_owned()),
        };
        if let Some(existing) = existing {
            return Err(ModelError::TopicExists {
                topic: topic.clone(),
                partitions,
                existing,
            });
        }
        let names: Vec<TopicName> = (0..partitions).map(|i| topic.partition(i)).collect();
        for name in &names {
            self.topic_mut(name, now);
        }
        self.partitioned.insert(topic.clone(), names);
        Ok(())
    }

    /// Give `consumer` `permits` more messages' worth of room: Pulsar's `Flow` command.
    pub fn flow(
        &mut self,
        consumer: ConsumerId,
        permits: u32,
        now: Instant,
    ) -> Result<(), ModelError> {
        self.handle_timeouts(now);
        // Not `ok_or`: its error would be built and dropped on every call (on each
        // acknowledgement).
        let Some(state) = self.consumers.get_mut(&consumer) else {
            return Err(ModelError::UnknownConsumer { consumer });
        };
        state.permits += u64::from(permits);
        self.pump(now);
        Ok(())
    }

    /// Publish a message to `topic` (created if needed) and dispatch it to whoever can take it.
    /// A message with a schema registers it on the topic, or is refused when the topic's is of
    /// another kind ([`ModelError::IncompatibleSchema`]).
    pub fn publish(
        &mut self,
        topic: &TopicName,
        mut message: OutgoingMessage,
        now: Instant,
    ) -> Result<MessageId, ModelError> {
        self.handle_timeouts(now);
        require_persistent(topic)?;
        self.require_not_partitioned(topic)?;
        if let Some(schema) = message.schema.take() {
            self.declare_schema(topic, &schema, true, now)?;
        }
        self.delayed_published |= message.deliver_at.is_some();
        let retention = self.retention;
        let topic = self.topic_mut(topic, now);
        let id = topic.append(message, now);
        topic.retain_after_publish(retention);
        self.pump(now);
        Ok(id)
    }

    /// Publish `messages` as one batch, as a batching producer (the default of the Java, Python
    /// and Go clients) does: they share one entry, each with its batch index, in order. The
    /// broker acknowledges and redelivers the entry as a whole; see
    /// [`MessageId`] and [`Cluster::ack`]. An empty batch publishes nothing.
    pub fn publish_batch(
        &mut self,
        topic: &TopicName,
        mut messages: Vec<OutgoingMessage>,
        now: Instant,
    ) -> Result<Vec<MessageId>, ModelError> {
        self.handle_timeouts(now);
        require_persistent(topic)?;
        self.require_not_partitioned(topic)?;
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        // One producer writes a batch, with one schema: the first message's.
        if let Some(schema) = messages[0].schema.clone() {
            self.declare_schema(topic, &schema, true, now)?;
        }
        for message in &mut messages {
            message.schema = None;
        }
        self.delayed_published |= messages.iter().any(|m| m.deliver_at.is_some());
        let retention = self.retention;
        let topic = self.topic_mut(topic, now);
        let ids = topic.append_batch(messages, now);
        topic.retain_after_publish(retention);
        self.pump(now);
        Ok(ids)
    }

    /// The next delivery waiting for `consumer`'s application, after running the timers due
    /// at `now`; `None` if there is none or the consumer is unknown. Its ack timeout, if the
    /// consumer has one, starts now.
    ///
    /// The dead-letter check already happened when the client received the message: a
    /// delivery at the limit never reaches this queue.
    pub fn receive(&mut self, consumer: ConsumerId, now: Instant) -> Option<Dispatched> {
        self.handle_timeouts(now);
        let state = self.consumers.get_mut(&consumer)?;
        let id = state.queue.front()?.message_id;
        if let Some(tracker) = state.unacked.as_mut() {
            tracker.received(id, now);
            self.next_deadline.forget();
        }
        self.queued -= 1;
        state.queue.pop_front()
    }

    /// `consumer`'s application handed `messages`, received earlier, on to its own code at
    /// `now` (a batch it gathered): their ack timeouts, where they still run, start again
    /// (the patched pulsar-rs's `Consumer::restart_ack_timeout`). Nothing else changes: an
    /// unknown consumer, or one without an ack timeout, is left as it is.
    pub fn restart_ack_timeout<'a>(
        &mut self,
        consumer: ConsumerId,
        messages: impl IntoIterator<Item = &'a MessageId>,
        now: Instant,
    ) {
        self.handle_timeouts(now);
        let Some(tracker) = self
            .consumers
            .get_mut(&consumer)
            .and_then(|state| state.unacked.as_mut())
        else {
            return;
        };
        for id in messages {
            tracker.restarted(id, now);
        }
        self.next_deadline.forget();
    }

    /// Acknowledge a message through `consumer`: pulsar-rs `ack_with_id`.
    ///
    /// Like pulsar-rs 6.9, the model sends the id without a batch-index ack set, so the broker
    /// acknowledges the whole entry: for a message of a batch, every other message of it too.
    /// Like pulsar-rs, the model sends whatever id it is given, and like Pulsar it
    /// acknowledges the message on the subscription even if it was sent to another consumer
    /// (or not sent at all); an id with nothing left to acknowledge is ignored. Only an unknown
    /// consumer is an error (pulsar-rs fails when its consumer is gone).
    pub fn ack(
        &mut self,
        consumer: ConsumerId,
        message: &MessageId,
        now: Instant,
    ) -> Result<Acknowledgement, ModelError> {
        self.handle_timeouts(now);
        // Not `ok_or`: its error would be built and dropped on every call (on each
        // acknowledgement).
        let Some(state) = self.consumers.get_mut(&consumer) else {
            return Err(ModelError::UnknownConsumer { consumer });
        };
        if let Some(tracker) = state.unacked.as_mut() {
            tracker.acknowledged(message);
        }
        let mut unblocks = false;
        let acknowledged = match self.topics.get_mut(&state.topic) {
            Some(t) => match (
                t.entry_of(message),
                t.subscriptions.get_mut(&*state.subscription),
            ) {
                (Some(entry), Some(sub)) => {
                    // Only on KeyShared can an acknowledgement let the broker send more: it
                    // may end another consumer's hold on a key ("draining hashes"). Elsewhere
                    // it frees no permit and adds no entry, so there is nothing to dispatch.
                    unblocks = sub.kind == SubscriptionType::KeyShared;
                    let acknowledged = sub.acknowledge(entry, &mut self.consumers);
                    if acknowledged {
                        t.released(entry, self.retention);
                    }
                    acknowledged
                }
                _ => false,
            },
            None => false,
        };
        let outcome = if acknowledged {
            Acknowledgement::Acknowledged
        } else {
            Acknowledgement::Ignored
        };
        if unblocks {
            self.pump(now);
        } else {
            // The ack timeout of the message ended.
            self.next_deadline.forget();
        }
        Ok(outcome)
    }

    /// Ask for a message again through `consumer`: pulsar-rs `nack_with_id`, which sends
    /// `RedeliverUnacknowledgedMessages` with that id at once (there is no nack delay in
    /// pulsar-rs 6.x).
    ///
    /// The broker redelivers by entry: for a message of a batch, the whole batch comes again,
    /// every message of it with the entry's count.
    ///
    /// On Shared and KeyShared the broker redelivers the message if it is pending on this
    /// consumer, counting the redelivery ([`Redelivery::Scheduled`]). On Exclusive and Failover
    /// the broker ignores the id and rewinds the active consumer's cursor
    /// ([`Redelivery::Rewound`]): every unacknowledged message comes again, in order, with
    /// count 0. pulsar-rs does not empty its receive queue then (the Java client does), so
    /// deliveries still queued are received twice.
    pub fn nack(
        &mut self,
        consumer: ConsumerId,
        message: &MessageId,
        now: Instant,
    ) -> Result<Redelivery, ModelError> {
        self.handle_timeouts(now);
        if !self.consumers.contains_key(&consumer) {
            return Err(ModelError::UnknownConsumer { consumer });
        }
        let outcome = self.redeliver(consumer, std::slice::from_ref(message));
        self.pump(now);
        Ok(outcome)
    }

    /// Close `consumer` (or lose its connection: the broker does the same).
    ///
    /// A transaction it acknowledged in stays open (the coordinator knows no consumers, see
    /// [`crate::transaction`]). Its queued deliveries are dropped with it. On Shared and
    /// KeyShared its unacknowledged messages go back to the subscription for the other
    /// consumers, keeping their redelivery count (Pulsar's `removeConsumer` uses
    /// `redeliveryTracker.addIfAbsent`, not an increment); when the last consumer leaves, the counts are forgotten (the tracker is
    /// cleared) and the next consumer starts from the first unacknowledged message. On
    /// Failover, if it was the active consumer, another takes over from the first
    /// unacknowledged message.
    pub fn close(&mut self, consumer: ConsumerId, now: Instant) -> Result<(), ModelError> {
        self.handle_timeouts(now);
        let state = self
            .consumers
            .remove(&consumer)
            .ok_or(ModelError::UnknownConsumer { consumer })?;
        self.timed_consumers -= usize::from(state.unacked.is_some());
        self.queued -= state.queue.len();
        let consumers = &self.consumers;
        if let Some(sub) = self
            .topics
            .get_mut(&state.topic)
            .and_then(|t| t.subscriptions.get_mut(&*state.subscription))
        {
            sub.consumers.retain(|c| *c != consumer);
            if sub.single_active() {
                repick_active(&state.topic, sub, consumers);
            } else if sub.consumers.is_empty() {
                sub.replay.clear();
                sub.redelivery_counts.clear();
            } else {
                for entry in state.pending_acks {
                    sub.replay.insert(entry);
                    sub.redelivery_counts.entry(entry).or_insert(0);
                }
            }
        }
        self.pump(now);
        Ok(())
    }

    /// What the broker does with `RedeliverUnacknowledgedMessages` from `consumer`
    /// (`ServerCnx.handleRedeliverUnacknowledged`).
    fn redeliver(&mut self, consumer: ConsumerId, ids: &[MessageId]) -> Redelivery {
        let Some(state) = self.consumers.get_mut(&consumer) else {
            return Redelivery::Ignored;
        };
        let Some(topic) = self.topics.get_mut(&state.topic) else {
            return Redelivery::Ignored;
        };
        let Some(sub) = topic.subscriptions.get_mut(&*state.subscription) else {
            return Redelivery::Ignored;
        };
        if sub.single_active() {
            // Consumer.redeliverUnacknowledgedMessages() → the single-active dispatcher
            // rewinds the cursor, for the active consumer only.
            if sub.active == Some(consumer) {
                sub.rewind();
                return Redelivery::Rewound;
            }
            return Redelivery::Ignored;
        }
        // Consumer.redeliverUnacknowledgedMessages(ids): only ids pending on this consumer;
        // the dispatcher replays them and increments their redelivery count.
        let entries: Vec<u64> = ids.iter().filter_map(|id| topic.entry_of(id)).collect();
        let Some(sub) = topic.subscriptions.get_mut(&*state.subscription) else {
            return Redelivery::Ignored;
        };
        let mut scheduled = false;
        for entry in entries {
            if state.pending_acks.remove(&entry) {
                sub.replay.insert(entry);
                *sub.redelivery_counts.entry(entry).or_insert(0) += 1;
                scheduled = true;
            }
        }
        if scheduled {
            Redelivery::Scheduled
        } else {
            Redelivery::Ignored
        }
    }

    /// Dispatch until nothing more can be sent, publishing dead-lettered copies as they come.
    pub(crate) fn pump(&mut self, now: Instant) {
        loop {
            let mut progress = false;
            let mut dead_letters = Vec::new();
            let mut settled = Vec::new();
            for (name, topic) in &mut self.topics {
                let readable = topic.readable();
                let Topic {
                    store,
                    subscriptions,
                    ..
                } = topic;
                for sub in subscriptions.values_mut() {
                    let mut dispatch = Dispatch {
                        topic: name,
                        store,
                        readable,
                        consumers: &mut self.consumers,
                        now,
                        dead_letters: &mut dead_letters,
                        settled: &mut settled,
                        read: &mut self.read,
                        queued: &mut self.queued,
                    };
                    progress |= dispatch.run(sub);
                }
                // Entries the clients dead-lettered are acknowledged on their subscription.
                for entry in settled.drain(..) {
                    topic.released(entry, self.retention);
                }
            }
            for (topic, message) in dead_letters {
                self.delayed_published |= message.deliver_at.is_some();
                let retention = self.retention;
                let topic = self.topic_mut(&topic, now);
                topic.append(message, now);
                topic.retain_after_publish(retention);
                progress = true;
            }
            if !progress {
                break;
            }
        }
        // Every change that can move a deadline (an acknowledgement ending an ack timeout, a
        // delayed entry read or released, a consumer leaving) ends with a pump; a receive,
        // which starts one, forgets the deadline itself.
        self.next_deadline.forget();
    }

    /// The topic, created (with the next ledger id) if it does not exist yet.
    pub(crate) fn topic_mut(&mut self, topic: &TopicName, now: Instant) -> &mut Topic {
        let last_ledger_id = &mut self.last_ledger_id;
        self.topics.entry(topic.clone()).or_insert_with(|| {
            *last_ledger_id += 1;
            Topic::new(*last_ledger_id, topic.partition_index().unwrap_or(-1), now)
        })
    }
}

/// Choose the active consumer again; a change rewinds the cursor, as
/// `scheduleReadOnActiveConsumer` does.
fn repick_active(
    topic: &TopicName,
    sub: &mut Subscription,
    consumers: &BTreeMap<ConsumerId, Consumer>,
) {
    let members: Vec<Member> = sub
        .consumers
        .iter()
        .filter_map(|id| {
            consumers.get(id).map(|c| Member {
                id: *id,
                name: c.name.clone(),
                priority_level: c.priority_level,
            })
        })
        .collect();
    let active = pick_active(topic, &members);
    if active != sub.active {
        sub.active = active;
        sub.rewind();
    }
}
