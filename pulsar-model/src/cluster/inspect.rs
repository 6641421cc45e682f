//! What the cluster answers without changing: its topics, partitions and consumers' counts,
//! for tests, gauges and pattern consumers.

use ruststream::Instant;

use super::Cluster;
use crate::{ConsumerId, StoredMessage, TopicName};

impl Cluster {
    /// How many partitions `topic` has, if it is a partitioned topic.
    pub fn partitions(&self, topic: &TopicName) -> Option<u32> {
        self.partition_names(topic).map(|names| names.len() as u32)
    }

    /// The partitions of `topic`, in index order, if it is a partitioned topic.
    #[inline]
    pub fn partition_names(&self, topic: &TopicName) -> Option<&[TopicName]> {
        if self.partitioned.is_empty() {
            return None;
        }
        self.partitioned.get(topic).map(Vec::as_slice)
    }

    /// Every persistent topic of namespace `tenant/namespace`, partitions included (not the
    /// partitioned topics' own names, which hold no messages), in name order: Pulsar's
    /// `CommandGetTopicsOfNamespace`, what a pattern consumer lists.
    pub fn topics_of_namespace(&self, namespace: &str) -> Vec<TopicName> {
        self.topics
            .keys()
            .filter(|t| t.is_persistent() && t.namespace_name() == namespace)
            .cloned()
            .collect()
    }

    /// How many topics were ever created: a number that changes whenever a topic appears, for
    /// whoever lists topics to tell that nothing new came.
    pub fn topics_created(&self) -> u64 {
        self.last_ledger_id
    }

    /// When `topic` was created, if it exists.
    pub fn created_at(&self, topic: &TopicName) -> Option<Instant> {
        self.topics.get(topic).map(|t| t.created)
    }

    /// The ledger that holds `topic`'s messages (the first number of their ids), if the topic
    /// exists.
    pub fn ledger_of(&self, topic: &TopicName) -> Option<u64> {
        self.topics.get(topic).map(|t| t.ledger_id)
    }

    /// Deliveries queued for `consumer` that its application has not received: work in flight
    /// on the client side. 0 for an unknown consumer.
    pub fn pending_for(&self, consumer: ConsumerId) -> usize {
        self.consumers.get(&consumer).map_or(0, |c| c.queue.len())
    }

    /// Deliveries queued for all consumers that their applications have not received: the sum
    /// of [`Cluster::pending_for`] over every consumer, kept as a count (asked after every
    /// change by whoever waits for nothing to be in flight).
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// The permits `consumer` has left plus its queued deliveries (in one look-up): what a
    /// client counts as asked for and not yet received. `None` if it is unknown.
    #[inline]
    pub fn outstanding(&self, consumer: ConsumerId) -> Option<u64> {
        self.consumers
            .get(&consumer)
            .map(|c| c.permits + c.queue.len() as u64)
    }

    /// The permits `consumer` has left, or `None` if it is unknown.
    pub fn permits(&self, consumer: ConsumerId) -> Option<u64> {
        self.consumers.get(&consumer).map(|c| c.permits)
    }

    /// Everything ever published to `topic`, in order (empty if the topic does not exist):
    /// how a test checks what reached a dead-letter topic.
    ///
    /// With transactions, what a reader of the topic can read: messages of committed
    /// transactions are there in their places, those of aborted transactions never are, and
    /// the list stops before the first message of the oldest transaction still open on the
    /// topic (the broker's max read position), even for plain messages published after it;
    /// [`Cluster::held_back_messages`] lists the rest.
    ///
    /// That is under [`Retention::KeepAll`](crate::Retention::KeepAll), the default. Under
    /// [`Retention::UntilAcknowledged`](crate::Retention::UntilAcknowledged) it is what the
    /// topic still holds: a message every
    /// subscription acknowledged is gone, or still listed with its payload, properties and
    /// key freed (empty) until the messages before it go too.
    pub fn topic_messages(&self, topic: &TopicName) -> &[StoredMessage] {
        self.topics
            .get(topic)
            .map_or(&[], |t| t.store.split_at_entry(t.readable()).0)
    }

    /// The messages stored on `topic` that no subscription may read yet: those from the first
    /// message of the oldest transaction still open on it (see [`crate::transaction`]), in
    /// order, whatever transaction (or none) each belongs to. Empty while no transaction is
    /// open on the topic. With [`Cluster::topic_messages`], every message the topic holds.
    pub fn held_back_messages(&self, topic: &TopicName) -> &[StoredMessage] {
        self.topics
            .get(topic)
            .map_or(&[], |t| t.store.split_at_entry(t.readable()).1)
    }

    /// How many entries of `topic` the subscription has not acknowledged (a batch counts as
    /// one), or `None` if there is no such subscription.
    ///
    /// As the broker counts it (`getNumberOfEntriesInBacklog`): entries of open transactions
    /// count, and so do transaction markers and entries of aborted transactions until a
    /// dispatcher reads them, which it does as soon as a consumer has a permit.
    pub fn backlog(&self, topic: &TopicName, subscription: &str) -> Option<usize> {
        let t = self.topics.get(topic)?;
        Some(t.subscriptions.get(subscription)?.backlog(t.len()))
    }

    /// The consumer receiving messages on an Exclusive or Failover subscription.
    pub fn active_consumer(&self, topic: &TopicName, subscription: &str) -> Option<ConsumerId> {
        self.topics
            .get(topic)?
            .subscriptions
            .get(subscription)?
            .active
    }
}
