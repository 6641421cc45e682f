//! A message to publish, a delivered message as handlers and extractors see it, whatever the
//! broker, and the port a handler publishes through.

use alloc::borrow::Cow;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;

pub use crate::message_id::{MessageId, MessageIdError};
use crate::outgoing::{EncodeError, Outgoing};
use crate::Compression;

/// A message to publish: where to, the encoded payload, and what the producer may say about
/// it. Build one with [`Message::new`] (bytes to a topic) or [`Message::of`] (a typed value to
/// its `#[outgoing(name)]` topic), then set options:
///
/// ```
/// use std::time::Duration;
/// use ruststream::message::Message;
///
/// let message = Message::new("refunds", br#"{"id":7}"#.to_vec())
///     .property("tenant", "acme")
///     .key("card-7")
///     .deliver_after(Duration::from_secs(30));
/// assert_eq!(message.topic, "refunds");
/// ```
///
/// Every way to publish takes one ([`IntoMessage`]): a `Message`, or a reference to a typed
/// value, published to its own topic with no options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Message {
    /// The topic, short (in the broker's namespace) or fully qualified. A `&'static str` (an
    /// `#[outgoing]` type's topic) is kept without a copy.
    pub topic: Cow<'static, str>,
    /// The encoded payload.
    pub payload: Vec<u8>,
    /// The message properties: name/value pairs, in order (what other Pulsar clients read and
    /// write as properties).
    pub properties: Vec<(String, String)>,
    /// The partitioning / ordering key.
    pub key: Option<String>,
    /// When the event happened, since the Unix epoch (Pulsar: `event_time`).
    pub event_time: Option<Duration>,
    /// Delayed delivery: not before this long after publishing. Pulsar honours it on Shared
    /// and KeyShared subscriptions and delivers at once on Exclusive and Failover.
    pub deliver_after: Option<Duration>,
    /// Delayed delivery at a time since the Unix epoch (on a virtual clock: since it started);
    /// `deliver_after` wins if both are set.
    pub deliver_at: Option<Duration>,
    /// The schema the producer registers on the topic ([`Outgoing::schema`] for
    /// [`Message::of`]); messages to one topic with different schemas go through different
    /// producers.
    pub schema: Option<crate::schema::Schema>,
    /// How the payload is compressed on the wire; `None` leaves it to the handler's
    /// registration or the broker's default (uncompressed unless one says otherwise). Set by
    /// [`Message::of`] from an `#[outgoing(compression = "..")]` type.
    pub compression: Option<Compression>,
    /// How the producer batches it; `None` leaves it to the broker's setting. Set by
    /// [`Message::of`] from an `#[outgoing(batching = "..")]` type.
    pub batching: Option<crate::batching::Batching>,
}

impl Message {
    /// `payload` (already encoded) to `topic`, with no properties and no key.
    pub fn new(topic: impl Into<Cow<'static, str>>, payload: impl Into<Vec<u8>>) -> Self {
        Message {
            topic: topic.into(),
            payload: payload.into(),
            ..Message::default()
        }
    }

    /// `value` encoded as its type says (JSON unless `#[outgoing(codec = ..)]` says otherwise),
    /// to its `#[outgoing(name)]` topic.
    pub fn of<T: Outgoing + ?Sized>(value: &T) -> Result<Self, EncodeError> {
        let mut message = Message::new(T::TOPIC, value.encode()?);
        message.schema = T::schema();
        message.compression = T::COMPRESSION;
        message.batching = T::BATCHING;
        Ok(message)
    }

    /// `value` as JSON, to `topic`: for a type that is not `#[outgoing]`, or another topic.
    pub fn json<T: serde::Serialize + ?Sized>(
        topic: impl Into<Cow<'static, str>>,
        value: &T,
    ) -> Result<Self, EncodeError> {
        let payload = serde_json::to_vec(value).map_err(|e| EncodeError::new::<T>("JSON", e))?;
        Ok(Message::new(topic, payload))
    }

    /// Register `schema` on the topic when publishing (see [`crate::schema`]).
    pub fn schema(mut self, schema: crate::schema::Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// To `topic` instead.
    pub fn to(mut self, topic: impl Into<Cow<'static, str>>) -> Self {
        self.topic = topic.into();
        self
    }

    /// With one more property.
    pub fn property(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((name.into(), value.into()));
        self
    }

    /// With the partitioning / ordering key `key`.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// With the time the event happened, since the Unix epoch.
    pub fn event_time(mut self, since_epoch: Duration) -> Self {
        self.event_time = Some(since_epoch);
        self
    }

    /// Compress the payload with `codec` on the wire ([`Compression::None`] to send it
    /// uncompressed where a default says otherwise).
    pub fn compression(mut self, codec: Compression) -> Self {
        self.compression = Some(codec);
        self
    }

    /// Batch it as `batching` says, rather than as the broker's setting does.
    pub fn batching(mut self, batching: crate::batching::Batching) -> Self {
        self.batching = Some(batching);
        self
    }

    /// Delivered no sooner than `delay` after publishing (Shared and KeyShared).
    pub fn deliver_after(mut self, delay: Duration) -> Self {
        self.deliver_after = Some(delay);
        self
    }

    /// Delivered no sooner than `since_epoch` (Shared and KeyShared).
    pub fn deliver_at(mut self, since_epoch: Duration) -> Self {
        self.deliver_at = Some(since_epoch);
        self
    }
}

/// The one topic `messages` go to, for a batch (`None` for no message).
///
/// # Errors
///
/// [`MixedBatch`](crate::PublishError::MixedBatch) when they name more than one.
pub fn batch_topic(messages: &[Message]) -> Result<Option<&str>, crate::PublishError> {
    let Some(first) = messages.first() else {
        return Ok(None);
    };
    match messages.iter().find(|m| m.topic != first.topic) {
        Some(other) => Err(crate::PublishError::MixedBatch {
            first: first.topic.to_string(),
            other: other.topic.to_string(),
        }),
        None => Ok(Some(&first.topic)),
    }
}

/// What can be published: a [`Message`], or a reference to a value of an `#[outgoing]` type
/// (encoded, to its own topic).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be published",
    label = "not a message",
    note = "publish a `Message` (`Message::new(topic, bytes)`, `Message::of(&value)?` with \
            options), or `&value` of a type that derives `Outgoing`"
)]
pub trait IntoMessage {
    /// The message, or why the value could not be encoded.
    fn into_message(self) -> Result<Message, EncodeError>;
}

impl IntoMessage for Message {
    fn into_message(self) -> Result<Message, EncodeError> {
        Ok(self)
    }
}

impl<T: Outgoing + ?Sized> IntoMessage for &T {
    fn into_message(self) -> Result<Message, EncodeError> {
        Message::of(self)
    }
}
