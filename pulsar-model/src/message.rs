//! What is published, what a topic keeps, and what a consumer is handed.

use std::sync::Arc;

use ruststream::Instant;

use crate::{Chunk, ConsumerId, Content, MessageId, Properties, TopicName};

/// A message to publish: what a pulsar-rs `producer::Message` carries that the model keeps.
///
/// Properties are sorted by name, each name once ([`Properties`]): Pulsar keeps them as a list
/// of key/value pairs, but pulsar-rs exposes and builds them as maps (a `HashMap` on the way to
/// the dead-letter topic), so their order carries no meaning and sorting makes comparisons in
/// tests exact. Ordering keys
/// and schemas are not modelled; batching is, by publishing several messages at once
/// ([`Cluster::publish_batch`](crate::Cluster::publish_batch)), and so are event times and
/// delayed delivery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutgoingMessage {
    /// The message body.
    pub payload: Vec<u8>,
    /// The message properties, sorted by name: the list the topic
    /// stores and every delivery shares.
    pub properties: Properties,
    /// The partition key; on a KeyShared subscription it decides which consumer gets the
    /// message and keeps per-key order.
    pub key: Option<String>,
    /// When the producer says the event happened (`event_time`), since the Unix epoch.
    pub event_time: Option<std::time::Duration>,
    /// Delayed delivery (`deliver_at_time`): Shared and KeyShared subscriptions do not
    /// dispatch the message before this instant; Exclusive and Failover ignore it, as Pulsar
    /// does.
    pub deliver_at: Option<Instant>,
    /// The schema its producer declared (pulsar-rs's `ProducerOptions::schema`): registered on
    /// the topic, or checked against the one registered, when it is published. Not stored
    /// with the message.
    pub schema: Option<ruststream::Schema>,
    /// Its place in a chunked message, if it is one chunk of a message too large for the
    /// broker's limit ([`split_into_chunks`](crate::split_into_chunks) makes them); stored
    /// with the message and given with each delivery of it
    /// ([`Content::chunk`](crate::Content::chunk)).
    pub chunk: Option<Chunk>,
    /// Written so that no client can read it (a compression the client cannot undo, corrupt
    /// bytes): every delivery carries this reason, as the Pulsar client hands over an entry it
    /// could not read, with the bytes as stored.
    pub unreadable: Option<String>,
}

impl OutgoingMessage {
    /// A message with this payload, no properties and no key.
    pub fn new(payload: impl Into<Vec<u8>>) -> Self {
        OutgoingMessage {
            payload: payload.into(),
            ..OutgoingMessage::default()
        }
    }

    /// Add a property.
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties = std::mem::take(&mut self.properties).with(key.into(), value.into());
        self
    }

    /// Set the partition key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// A message as a topic stores it: what tests read back with
/// [`Cluster::topic_messages`](crate::Cluster::topic_messages), for instance to check what
/// reached a dead-letter topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Its position in the topic.
    pub id: MessageId,
    /// Body and properties, shared with every delivery.
    pub content: Arc<Content>,
    /// The partition key.
    pub key: Option<String>,
    /// When it was published (the `now` of the publishing call).
    pub publish_time: Instant,
    /// How many messages its entry holds, if it was published in a batch.
    pub batch_size: Option<u32>,
    /// The producer's event time, if it set one.
    pub event_time: Option<std::time::Duration>,
    /// Not dispatched before this instant on Shared and KeyShared.
    pub deliver_at: Option<Instant>,
}

/// One delivery of a message to a consumer, as the application receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched {
    /// The consumer it was delivered to.
    pub consumer: ConsumerId,
    /// The message's position; pass it to [`Cluster::ack`](crate::Cluster::ack) or
    /// [`Cluster::nack`](crate::Cluster::nack).
    pub message_id: MessageId,
    /// The topic it came from.
    pub topic: TopicName,
    /// Body and properties, shared with the stored message.
    pub content: Arc<Content>,
    /// The partition key.
    pub key: Option<String>,
    /// How many times the broker redelivered this message on this subscription before this
    /// delivery: 0 on the first, and always 0 on Exclusive and Failover subscriptions. (pulsar-rs
    /// does not expose it on its messages; the model does, for tests.)
    pub redelivery_count: u32,
    /// When the message was published.
    pub publish_time: Instant,
    /// The producer's event time, if it set one.
    pub event_time: Option<std::time::Duration>,
    /// How many messages share its entry, if it was published in a batch (pulsar-rs gives the
    /// entry's `num_messages_in_batch` with every message of it). Acknowledging any of them
    /// acknowledges the whole entry; redelivering any of them redelivers the whole entry.
    pub batch_size: Option<u32>,
}

impl StoredMessage {
    /// The body.
    pub fn payload(&self) -> &[u8] {
        self.content.payload()
    }

    /// The properties, sorted by name.
    pub fn properties(&self) -> &Properties {
        self.content.properties()
    }
}

impl Dispatched {
    /// The body.
    pub fn payload(&self) -> &[u8] {
        self.content.payload()
    }

    /// The properties, sorted by name.
    pub fn properties(&self) -> &Properties {
        self.content.properties()
    }
}

#[cfg(test)]
mod size {
    /// A delivery is moved from the subscription to the consumer's queue and out of it to the
    /// client: at 128 bytes or less the compiler moves it inline instead of calling `memcpy`,
    /// which `scripts/bench` showed on the consume->ack path.
    #[test]
    fn a_delivery_moves_without_memcpy() {
        let size = std::mem::size_of::<super::Dispatched>();
        assert!(
            size <= 128,
            "`Dispatched` is {size} bytes, over 128: keep what it carries small"
        );
    }
}
