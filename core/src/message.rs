//! A delivered message as handlers and extractors see it, whatever the broker, and the port
//! a handler publishes through.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

pub use crate::publishing::Publishing;

/// Message headers: name/value pairs, in the order the message carries them. For Pulsar these
/// are the message properties, so other clients read and write the same values.
pub type Headers = Vec<(String, String)>;

/// One encoded message to publish, with what the producer may say about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Record {
    /// The encoded payload.
    pub payload: Vec<u8>,
    /// The headers (Pulsar: properties).
    pub headers: Headers,
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
}

impl Record {
    /// A record with this payload, no headers and no key.
    pub fn new(payload: impl Into<Vec<u8>>) -> Self {
        Record {
            payload: payload.into(),
            ..Record::default()
        }
    }

    /// Add a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Set the key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Set the event time, since the Unix epoch.
    pub fn with_event_time(mut self, since_epoch: Duration) -> Self {
        self.event_time = Some(since_epoch);
        self
    }

    /// Deliver no sooner than `delay` after publishing (Shared and KeyShared).
    pub fn deliver_after(mut self, delay: Duration) -> Self {
        self.deliver_after = Some(delay);
        self
    }

    /// Deliver no sooner than `since_epoch` (Shared and KeyShared).
    pub fn deliver_at(mut self, since_epoch: Duration) -> Self {
        self.deliver_at = Some(since_epoch);
        self
    }
}

/// A borrowed view of one delivery: what a handler's parameters are extracted from.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Incoming<'a> {
    /// The encoded payload.
    pub payload: &'a [u8],
    /// The headers (Pulsar: properties).
    pub headers: &'a [(String, String)],
    /// The fully qualified topic the message came from.
    pub topic: &'a str,
    /// The partitioning / ordering key, if the message has one.
    pub key: Option<&'a str>,
    /// How many times the broker delivered this message before (0 on the first delivery, and
    /// always 0 on subscription types that keep no count), or `None` where the client does
    /// not tell.
    pub redelivery_count: Option<u32>,
    /// The broker's publishing port, for the `Publisher` parameter.
    pub publisher: Option<&'a alloc::sync::Arc<dyn Publish>>,
    /// The broker's id of the message, printed on demand (for Pulsar
    /// `ledger:entry:partition`, plus `:index` for a message of a batch): only a handler that
    /// asks for its `MessageId` pays for the text. `None` where the broker gave none.
    pub message_id: Option<&'a (dyn core::fmt::Display + Sync)>,
    /// When the broker stored the message, since the Unix epoch (on a virtual clock, since it
    /// started), where the client tells.
    pub publish_time: Option<Duration>,
    /// When the producer says the event happened, since the Unix epoch, if it set one.
    pub event_time: Option<Duration>,
}

impl core::fmt::Debug for Incoming<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Incoming")
            .field("topic", &self.topic)
            .field(
                "message_id",
                &self.message_id.map(alloc::string::ToString::to_string),
            )
            .field("key", &self.key)
            .field("redelivery_count", &self.redelivery_count)
            .field("payload_len", &self.payload.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Incoming<'a> {
    /// A view over the given parts, with no key and no redelivery count.
    pub fn new(payload: &'a [u8], headers: &'a [(String, String)], topic: &'a str) -> Self {
        Incoming {
            payload,
            headers,
            topic,
            key: None,
            redelivery_count: None,
            publisher: None,
            message_id: None,
            publish_time: None,
            event_time: None,
        }
    }

    /// The same view with the broker's message id.
    pub fn with_message_id(mut self, id: &'a (dyn core::fmt::Display + Sync)) -> Self {
        self.message_id = Some(id);
        self
    }

    /// The same view with the publish and event times.
    pub fn with_times(mut self, publish: Option<Duration>, event: Option<Duration>) -> Self {
        self.publish_time = publish;
        self.event_time = event;
        self
    }

    /// The same view with a key.
    pub fn with_key(mut self, key: Option<&'a str>) -> Self {
        self.key = key;
        self
    }

    /// The same view with a redelivery count.
    pub fn with_redelivery_count(mut self, count: Option<u32>) -> Self {
        self.redelivery_count = count;
        self
    }

    /// The same view with a publishing port.
    pub fn with_publisher(mut self, publisher: Option<&'a alloc::sync::Arc<dyn Publish>>) -> Self {
        self.publisher = publisher;
        self
    }

    /// The value of header `name`, if present.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a broker offers handlers for publishing: one message to one topic, awaiting the
/// broker's receipt. Returns the message id as the broker prints it.
///
/// An implementation that stores the message at the call (an in-process broker) returns
/// [`Publishing::done`], and the message is published even if the future is never awaited;
/// one that waits for a receipt returns [`Publishing::waiting`].
pub trait Publish: Send + Sync {
    /// Publish `record` to `topic`.
    fn publish<'a>(&'a self, topic: &'a str, record: Record) -> Publishing<'a, String>;

    /// Publish `record` to `topic`, awaiting the broker's receipt, for a caller that does not
    /// read the message id: a broker that prints ids on demand need not print this one.
    /// Overriding it is optional; this default publishes and drops the id.
    fn publish_without_id<'a>(&'a self, topic: &'a str, record: Record) -> Publishing<'a, ()> {
        self.publish(topic, record).map(drop)
    }
}
