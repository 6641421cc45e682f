//! One delivery as a consumer port hands it over.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use ruststream::broker::machine::{BatchSlot, Envelope};
use ruststream::broker::SharedMessage;
use ruststream::handler::Incoming;

/// A delivery's payload as the transport holds it: moved from the client's buffer, or shared
/// with an in-process broker's stored message. Either way no copy is made to hand it over.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Payload {
    /// The client's own buffer.
    Owned(Vec<u8>),
    /// Shared with the stored message.
    Shared(Arc<dyn SharedMessage>),
}

impl std::ops::Deref for Payload {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Payload::Owned(bytes) => bytes,
            Payload::Shared(message) => message.payload(),
        }
    }
}

/// A delivery's properties (headers) as the transport holds them: built from the client's
/// message, or shared with an in-process broker's stored message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Properties {
    /// Built for this delivery, or none.
    Owned(Vec<(String, String)>),
    /// Shared with the stored message.
    Shared(Arc<dyn SharedMessage>),
}

impl std::ops::Deref for Properties {
    type Target = [(String, String)];

    #[inline]
    fn deref(&self) -> &[(String, String)] {
        match self {
            Properties::Owned(pairs) => pairs,
            Properties::Shared(message) => message.properties(),
        }
    }
}

/// One delivery as the driver receives it. A broker's consumer port builds it, every field
/// set (its struct literal, or [`Received::new`] and the fields it has).
#[derive(Debug)]
pub struct Received<Id> {
    /// The transport's id.
    pub id: Id,
    /// The body.
    pub payload: Payload,
    /// The properties (headers).
    pub properties: Properties,
    /// The message's topic (subject), shared: the same for most messages of a consumer.
    pub topic: Arc<str>,
    /// Its key, if it has one.
    pub key: Option<String>,
    /// The broker's redelivery count (on a batched entry, the entry's), where the transport
    /// tells it; the machine adds [`Received::republished`] to it.
    pub redelivery_count: Option<u32>,
    /// How many times it went through the registration's retry topic before, as the broker's
    /// own property says (0 where there is no retry topic).
    pub republished: u32,
    /// Its place in a batched entry, if it was published in a batch.
    pub batch: Option<BatchSlot>,
    /// When the broker stored it, since the Unix epoch (on a virtual clock: since it started).
    pub publish_time: Option<Duration>,
    /// When the producer says the event happened, if it set one.
    pub event_time: Option<Duration>,
    /// What only an unusual delivery carries; `None` for every other, so that what is moved
    /// for each stays small.
    pub unusual: Option<Box<Unusual>>,
}

/// What only some deliveries carry.
#[derive(Default)]
pub struct Unusual {
    /// Why the client could not read the message (a compression it cannot undo, corrupt
    /// bytes), if it could not: `payload` is the message as the broker stored it, and the
    /// handler is not called ([`Rejection::Unreadable`](ruststream::Rejection)).
    pub unreadable: Option<String>,
    /// What the broker's own ports carry for themselves (a chunk's place in its message,
    /// say); the driver never looks.
    pub extension: Option<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Unusual {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unusual")
            .field("unreadable", &self.unreadable)
            .field("extension", &self.extension.is_some())
            .finish()
    }
}

impl<Id> Received<Id> {
    /// A delivery of `payload` from `topic`, with no properties, key, count or times.
    pub fn new(id: Id, payload: Payload, topic: Arc<str>) -> Self {
        Received {
            id,
            payload,
            properties: Properties::Owned(Vec::new()),
            topic,
            key: None,
            redelivery_count: None,
            republished: 0,
            batch: None,
            publish_time: None,
            event_time: None,
            unusual: None,
        }
    }

    /// The same delivery under another id (a port adapter's, such as the one of a message
    /// joined from chunks that stands for all of them).
    pub fn with_id<J>(self, id: impl FnOnce(Id) -> J) -> Received<J> {
        Received {
            id: id(self.id),
            payload: self.payload,
            properties: self.properties,
            topic: self.topic,
            key: self.key,
            redelivery_count: self.redelivery_count,
            republished: self.republished,
            batch: self.batch,
            publish_time: self.publish_time,
            event_time: self.event_time,
            unusual: self.unusual,
        }
    }

    /// Why the client could not read it, if it could not.
    #[inline]
    pub fn unreadable(&self) -> Option<&str> {
        self.unusual.as_ref()?.unreadable.as_deref()
    }

    /// Mark it unreadable, for `reason`.
    pub fn set_unreadable(&mut self, reason: String) {
        self.unusual.get_or_insert_with(Box::default).unreadable = Some(reason);
    }

    /// The message as handlers and layers see it, its id as `message_id` makes it.
    #[inline(always)]
    pub fn incoming(&self, message_id: impl Fn(&Id) -> ruststream::MessageId) -> Incoming<'_> {
        Incoming::new(&self.payload, &self.properties, &self.topic)
            .with_key(self.key.as_deref())
            .with_redelivery_count(self.redelivery_count)
            .with_message_id(message_id(&self.id))
            .with_times(self.publish_time, self.event_time)
    }
}

impl<Id: Clone + PartialEq> Envelope for Received<Id> {
    type Id = Id;

    #[inline(always)]
    fn id(&self) -> &Id {
        &self.id
    }

    #[inline(always)]
    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    #[inline(always)]
    fn batch(&self) -> Option<BatchSlot> {
        self.batch
    }

    #[inline(always)]
    fn redelivery_count(&self) -> Option<u32> {
        self.redelivery_count
    }

    #[inline(always)]
    fn republished(&self) -> u32 {
        self.republished
    }

    #[inline(always)]
    fn set_redelivery_count(&mut self, count: Option<u32>) {
        self.redelivery_count = count;
    }

    #[inline(always)]
    fn bytes(&self) -> usize {
        self.payload.len()
    }
}
