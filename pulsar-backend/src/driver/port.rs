//! What a subscription driver needs from a consumer, whichever transport is behind it.

use std::future::Future;
use std::task::{Context, Poll};

use ruststream::app::BoxError;

use std::sync::Arc;

use ruststream::MessageId;

use super::{BatchSlot, EntryPosition};

/// A message's body and properties that the transport keeps and shares with each delivery of
/// it (the in-process Pulsar's stored message): handing a delivery over copies neither.
pub(crate) trait SharedMessage: std::fmt::Debug + Send + Sync {
    /// The body.
    fn payload(&self) -> &[u8];
    /// The properties.
    fn properties(&self) -> &[(String, String)];
}

/// A delivery's payload as the transport holds it: moved from the client's buffer, or shared
/// with the in-process Pulsar's stored message. Either way no copy is made to hand it over.
#[derive(Debug, Clone)]
pub(crate) enum Payload {
    /// The client's own buffer (pulsar-rs).
    Owned(Vec<u8>),
    /// Shared with the stored message (in process).
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

impl<Id: std::fmt::Display> Received<Id> {
    /// The properties of a copy of this delivery published to another topic (the retry or
    /// the dead-letter topic): its own less those named in `replaced` (which the copy sets
    /// anew), plus `REAL_TOPIC` (where it came from) and `ORIGIN_MESSAGE_ID` (its id there),
    /// unless present: a copy of a copy keeps where it first came from.
    pub(crate) fn copy_properties(&self, replaced: &[&str]) -> Vec<(String, String)> {
        use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};
        let mut properties: Vec<(String, String)> = self
            .properties
            .iter()
            .filter(|(name, _)| !replaced.contains(&name.as_str()))
            .cloned()
            .collect();
        for (name, value) in [
            (REAL_TOPIC, self.topic.to_string()),
            (ORIGIN_MESSAGE_ID, self.id.to_string()),
        ] {
            if !properties.iter().any(|(k, _)| k == name) {
                properties.push((name.to_owned(), value));
            }
        }
        properties
    }
}

impl<Id> Received<Id> {
    /// The same delivery under another id (a port adapter's, such as the one of a chunked
    /// message that stands for all its chunks).
    pub(crate) fn with_id<J>(self, id: impl FnOnce(Id) -> J) -> Received<J> {
        Received {
            id: id(self.id),
            payload: self.payload,
            properties: self.properties,
            topic: self.topic,
            key: self.key,
            redelivery_count: self.redelivery_count,
            batch: self.batch,
            publish_time: self.publish_time,
            event_time: self.event_time,
            unusual: self.unusual,
        }
    }

    /// Its place in a chunked message, if it is one chunk of one.
    #[inline]
    pub(crate) fn chunk(&self) -> Option<&ruststream_pulsar_model::Chunk> {
        self.unusual.as_ref()?.chunk.as_ref()
    }

    /// Why the client could not read it, if it could not.
    #[inline]
    pub(crate) fn unreadable(&self) -> Option<&str> {
        self.unusual.as_ref()?.unreadable.as_deref()
    }

    /// Take its chunk metadata away (a delivery that is not, or no longer, a chunk).
    pub(crate) fn take_chunk(&mut self) -> Option<ruststream_pulsar_model::Chunk> {
        self.unusual.as_mut()?.chunk.take()
    }

    /// Take how its whole message is compressed away (once undone).
    pub(crate) fn take_compressed(&mut self) -> Option<Compressed> {
        self.unusual.as_mut()?.compressed.take()
    }

    /// Mark it unreadable, for `reason`.
    pub(crate) fn set_unreadable(&mut self, reason: String) {
        self.unusual.get_or_insert_with(Box::default).unreadable = Some(reason);
    }
}

/// A delivery's properties as the transport holds them: built from the client's message, or
/// shared with the in-process Pulsar's stored message (no copy per delivery).
#[derive(Debug, Clone)]
pub(crate) enum Properties {
    /// Built for this delivery (pulsar-rs), or none.
    Owned(Vec<(String, String)>),
    /// Shared with the stored message (in process).
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

/// One delivery as the driver receives it.
#[derive(Debug)]
pub(crate) struct Received<Id> {
    pub(crate) id: Id,
    pub(crate) payload: Payload,
    pub(crate) properties: Properties,
    /// The message's topic, shared: the same for every message of a consumer but a partitioned
    /// topic's.
    pub(crate) topic: Arc<str>,
    pub(crate) key: Option<String>,
    /// The broker's count (on a batched entry, the entry's), where the transport tells it.
    pub(crate) redelivery_count: Option<u32>,
    /// Its place in a batched entry, if it was published in a batch.
    pub(crate) batch: Option<BatchSlot>,
    /// When the broker stored it, since the Unix epoch (in process: since the clock started).
    pub(crate) publish_time: Option<std::time::Duration>,
    /// When the producer says the event happened, if it set one.
    pub(crate) event_time: Option<std::time::Duration>,
    /// What only a chunk or an unreadable message carries; `None` for every other delivery.
    pub(crate) unusual: Option<Box<Unusual>>,
}

/// What only some deliveries carry, kept apart so that every other delivery, moved several
/// times between the port, the chunk joiner, the driver and its slot, is smaller to move.
#[derive(Debug, Default)]
pub(crate) struct Unusual {
    /// Its place in a chunked message (PIP-37), if it is one chunk of one: such deliveries are
    /// joined (the `chunked` port adapter) before the driver sees them.
    pub(crate) chunk: Option<ruststream_pulsar_model::Chunk>,
    /// Why the client could not read the message (a compression it cannot undo, corrupt
    /// bytes, a batch that does not parse), if it could not: `payload` is then the entry as
    /// the broker stored it, and the handler is not called (`Rejection::Unreadable`).
    pub(crate) unreadable: Option<String>,
    /// For a chunk handed over as stored: how its whole message is compressed, to undo once
    /// the chunks are joined (a producer compresses a chunked message before it splits it).
    pub(crate) compressed: Option<Compressed>,
}

impl Unusual {
    /// The box for a delivery with these, or `None` when it has none of them.
    pub(crate) fn of(
        chunk: Option<ruststream_pulsar_model::Chunk>,
        unreadable: Option<String>,
        compressed: Option<Compressed>,
    ) -> Option<Box<Unusual>> {
        (chunk.is_some() || unreadable.is_some() || compressed.is_some()).then(|| {
            Box::new(Unusual {
                chunk,
                unreadable,
                compressed,
            })
        })
    }
}

/// How a chunked message is compressed, as each of its chunks says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compressed {
    /// Pulsar's `CompressionType`, as the metadata carries it.
    pub(crate) codec: i32,
    /// The whole message's size once decompressed, if the producer said it.
    pub(crate) uncompressed_size: Option<u32>,
}

/// A subscription's consumer, owned by exactly one driver task.
///
/// A consumer also accounts for work in flight: a delivery counts from the moment it is
/// received until the driver releases it ([`ConsumerPort::release`]), exactly once, after
/// the calls made for it at that time. Settlement calls do not count: a message can be
/// settled after its release (a `retry_after` wait's nack, a batched entry acknowledged with
/// its last message), and no map of ids is needed to tell a first call from a later one.
pub(crate) trait ConsumerPort: Send + 'static {
    /// The transport's message id. It prints as the broker prints it
    /// (`ledger:entry:partition`, plus `:index` for a message of a batch), when something
    /// asks: a log line, a handler's `MessageId`, a dead-letter copy.
    type Id: Clone + PartialEq + Send + Sync + std::fmt::Display + 'static;

    /// The entry that holds the message `id`: what the broker acknowledges and redelivers.
    fn entry(id: &Self::Id) -> EntryPosition;

    /// The id as ruststream hands it out (a handler's `MessageId`).
    fn message_id(id: &Self::Id) -> MessageId;

    /// The next delivery; `None` once the consumer is closed for good.
    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received<Self::Id>>>;

    /// Acknowledge `ids` (never empty), in as few broker commands as the transport can: the
    /// acknowledgements due at one flush leave together (pulsar-rs: one `CommandAck` per
    /// topic, a batched entry once).
    fn ack(&mut self, ids: &[Self::Id]) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// Whether settled messages of an unfinished batched entry are also acknowledged at
    /// batch-index level ([`ConsumerPort::ack_batch_index`]).
    fn acks_batch_index(&self) -> bool {
        false
    }

    /// Acknowledge the message at batch-index level: `ack_set` has a bit set for every index
    /// of its entry not settled yet (64 a word), as Pulsar's batch-index acknowledgement takes
    /// it. Called only where [`ConsumerPort::acks_batch_index`] says so.
    fn ack_batch_index(
        &mut self,
        _id: &Self::Id,
        _slot: BatchSlot,
        _ack_set: Vec<i64>,
    ) -> impl Future<Output = Result<(), BoxError>> + Send {
        async { Ok(()) }
    }

    /// Ask for `ids` (never empty) to be redelivered, in as few broker commands as the
    /// transport can (pulsar-rs: one `CommandRedeliverUnacknowledgedMessages` per topic).
    fn nack(&mut self, ids: &[Self::Id]) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// The deliveries `ids`, received earlier and gathered into a batch, go to the handler
    /// now: their ack timeouts, if the consumer has one, start again from now, so that a
    /// message's time to be settled does not shrink by the time its batch took to fill.
    fn restart_ack_timeout<'a>(&mut self, ids: impl Iterator<Item = &'a Self::Id>)
    where
        Self::Id: 'a;

    /// Acknowledge the messages `acks` in `txn`, each at its index alone where its slot says
    /// it is one message of a batched entry ([`BatchSlot::only_this`]), then commit `txn`.
    /// The future borrows nothing, so that the driver goes on while the commit runs. Called
    /// only for a transactional registration, on a transport that opened its transactions; a
    /// transport without any fails it.
    fn commit(
        &mut self,
        txn: &crate::transaction::Transaction,
        acks: Vec<(Self::Id, Option<BatchSlot>)>,
    ) -> ruststream::handler::BoxFuture<'static, Result<(), BoxError>> {
        let _ = (txn, acks);
        Box::pin(async { Err("this transport has no transactions".into()) })
    }

    /// The delivery `id` left the driver's hands: it no longer counts as in flight. Called
    /// exactly once per delivery received (per copy, where one id is received twice), after
    /// the settlement calls due for it then, if any.
    fn release(&mut self, id: &Self::Id);

    /// The delivery `id`, released while it was parked behind its key (waiting for a retried
    /// message to come back), starts now; or its transaction's commit was sent: it counts as
    /// in flight again until its next [`ConsumerPort::release`].
    fn acquire(&mut self, id: &Self::Id);

    /// Close the consumer; its unacknowledged messages go back to the subscription.
    fn close(self) -> impl Future<Output = ()> + Send;
}
