//! What a batch handler may know of each message besides its payload.

use alloc::string::String;

use crate::handler::Incoming;
use crate::MessageId;

/// The messages of a batch as delivered, in the order of the payloads the handler was given:
/// `batch.key(i)` is the key of `payloads[i]`. A parameter of a batch handler
/// (`batch: Batch<'_>`), for the ids, keys, properties and redelivery counts.
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    messages: &'a [Incoming<'a>],
    /// For each payload, its message's place in `messages`.
    index: &'a [usize],
}

impl core::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> Batch<'a> {
    /// The payloads' messages: `index[i]` is where payload `i`'s message is in `messages`.
    pub(crate) fn new(messages: &'a [Incoming<'a>], index: &'a [usize]) -> Self {
        Batch { messages, index }
    }

    /// How many messages the handler was given.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether it was given none (never, for a handler that runs).
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Message `i` as delivered, all its parts.
    pub fn get(&self, i: usize) -> Option<&'a Incoming<'a>> {
        self.index.get(i).map(|&at| &self.messages[at])
    }

    /// Every message, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a Incoming<'a>> + 'a {
        let messages = self.messages;
        self.index.iter().map(move |&at| &messages[at])
    }

    /// Message `i`'s id, where the broker gave one.
    pub fn message_id(&self, i: usize) -> Option<MessageId> {
        self.get(i).and_then(|m| m.message_id)
    }

    /// Message `i`'s key, if it has one.
    pub fn key(&self, i: usize) -> Option<&'a str> {
        self.get(i).and_then(|m| m.key)
    }

    /// Message `i`'s properties (empty past the end).
    pub fn properties(&self, i: usize) -> &'a [(String, String)] {
        self.get(i).map_or(&[], |m| m.properties)
    }

    /// How many times the broker delivered message `i` before, where the client tells.
    pub fn redelivery_count(&self, i: usize) -> Option<u32> {
        self.get(i).and_then(|m| m.redelivery_count)
    }
}
