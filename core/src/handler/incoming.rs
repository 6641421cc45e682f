//! A delivered message as handlers and extractors see it, whatever the broker.

use alloc::string::String;
use core::time::Duration;

use crate::message::MessageId;
use crate::publish::outbox::HandlerPort;

/// A borrowed view of one delivery: what a handler's parameters are extracted from.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Incoming<'a> {
    /// The encoded payload.
    pub payload: &'a [u8],
    /// The message properties.
    pub properties: &'a [(String, String)],
    /// The fully qualified topic the message came from.
    pub topic: &'a str,
    /// The partitioning / ordering key, if the message has one.
    pub key: Option<&'a str>,
    /// How many times the broker delivered this message before (0 on the first delivery, and
    /// always 0 on subscription types that keep no count), or `None` where the client does
    /// not tell.
    pub redelivery_count: Option<u32>,
    /// The broker's publishing port for the `Publisher` parameter, with where the delivery's
    /// publishes are counted (inside a subscription's driver), so that its acknowledgement
    /// waits for them.
    pub publisher: Option<&'a HandlerPort<'a>>,
    /// The broker's id of the message, `None` where the broker gave none.
    pub message_id: Option<MessageId>,
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
            .field("message_id", &self.message_id)
            .field("key", &self.key)
            .field("redelivery_count", &self.redelivery_count)
            .field("payload_len", &self.payload.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Incoming<'a> {
    /// A view over the given parts, with no key and no redelivery count.
    pub fn new(payload: &'a [u8], properties: &'a [(String, String)], topic: &'a str) -> Self {
        Incoming {
            payload,
            properties,
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
    pub fn with_message_id(mut self, id: MessageId) -> Self {
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
    pub fn with_publisher(mut self, publisher: Option<&'a HandlerPort<'a>>) -> Self {
        self.publisher = publisher;
        self
    }

    /// The value of property `name`, if present.
    pub fn property(&self, name: &str) -> Option<&'a str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}
