//! How a producer groups messages into broker entries.

use core::time::Duration;

/// How a producer batches the messages it publishes: several messages sent close together
/// share one broker entry, which costs the broker (and the network) far less per message than
/// an entry each. The defaults are the Java client's: at most 1,000 messages and 128 KiB an
/// entry, and a message waits at most 1 ms for others to join it.
///
/// Set on the broker for every publish (`PulsarBroker::batching`), or per `#[outgoing]` type
/// (`#[outgoing(batching = "off")]`, `"key_based"`), or per message
/// ([`Message::batching`](crate::message::Message::batching)). A message with a delivery time
/// is never batched (the broker honours delayed delivery per entry), nor is a chunk.
///
/// ```
/// use std::time::Duration;
/// use ruststream::publish::Batching;
///
/// let batching = Batching::default().max_delay(Duration::from_millis(5)).key_based();
/// assert_eq!(batching.delay(), Duration::from_millis(5));
/// assert!(batching.is_key_based() && batching.is_enabled());
/// assert!(!Batching::off().is_enabled());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Batching {
    enabled: bool,
    key_based: bool,
    max_messages: u32,
    max_bytes: u32,
    max_delay: Duration,
}

impl Default for Batching {
    /// The Java client's defaults ([`Batching::new`]).
    fn default() -> Self {
        Batching::new()
    }
}

impl Batching {
    /// The Java client's defaults: on, at most 1,000 messages and 128 KiB an entry, 1 ms.
    pub const fn new() -> Self {
        Batching {
            enabled: true,
            key_based: false,
            max_messages: 1_000,
            max_bytes: 128 * 1024,
            max_delay: Duration::from_millis(1),
        }
    }

    /// No batching: each message is an entry of its own.
    pub const fn off() -> Self {
        Batching {
            enabled: false,
            ..Batching::new()
        }
    }

    /// Messages with different keys never share an entry: what a Key_Shared subscription
    /// needs for each key's messages to reach one consumer (the broker dispatches a batched
    /// entry by its first message's key). Costs more entries where keys vary a lot.
    pub const fn key_based(mut self) -> Self {
        self.key_based = true;
        self
    }

    /// At most `messages` messages an entry (at least 1).
    pub const fn max_messages(mut self, messages: u32) -> Self {
        self.max_messages = if messages == 0 { 1 } else { messages };
        self
    }

    /// An entry is sent once its payloads reach `bytes` bytes.
    pub const fn max_bytes(mut self, bytes: u32) -> Self {
        self.max_bytes = if bytes == 0 { 1 } else { bytes };
        self
    }

    /// A message waits at most `delay` for others to join its entry.
    pub const fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Whether messages are batched at all.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Whether only messages with the same key share an entry.
    pub fn is_key_based(&self) -> bool {
        self.key_based
    }

    /// The most messages an entry holds.
    pub fn messages(&self) -> u32 {
        self.max_messages
    }

    /// The payload bytes at which an entry is sent.
    pub fn bytes(&self) -> u32 {
        self.max_bytes
    }

    /// How long a message waits for others.
    pub fn delay(&self) -> Duration {
        self.max_delay
    }
}
