//! A topic: its messages, in publish order, and its subscriptions.

use std::collections::BTreeMap;

use ruststream::Instant;

use crate::subscription::Subscription;
use crate::{MessageId, OutgoingMessage, StoredMessage};

/// One persistent topic. Pulsar creates topics on first use (`allowAutoTopicCreation`
/// defaults to true), and so does the model, on a publish or a subscribe.
#[derive(Debug)]
pub(crate) struct Topic {
    /// The one ledger of this topic.
    pub(crate) ledger_id: u64,
    /// The partition index its message ids carry, `-1` if not a partition.
    pub(crate) partition: i32,
    /// Every message ever published, at the index of its entry id.
    pub(crate) messages: Vec<StoredMessage>,
    /// Durable subscriptions by name.
    pub(crate) subscriptions: BTreeMap<String, Subscription>,
}

impl Topic {
    pub(crate) fn new(ledger_id: u64, partition: i32) -> Self {
        Topic {
            ledger_id,
            partition,
            messages: Vec::new(),
            subscriptions: BTreeMap::new(),
        }
    }

    /// Store a message; it gets the next entry id.
    pub(crate) fn append(&mut self, message: OutgoingMessage, now: Instant) -> MessageId {
        let id = MessageId {
            ledger_id: self.ledger_id,
            entry_id: self.messages.len() as u64,
            partition: self.partition,
        };
        self.messages.push(StoredMessage {
            id,
            payload: message.payload.into(),
            properties: message.properties,
            key: message.key,
            publish_time: now,
        });
        id
    }

    /// The entry a message id names in this topic, if it names one.
    pub(crate) fn entry_of(&self, id: &MessageId) -> Option<u64> {
        (id.ledger_id == self.ledger_id && id.entry_id < self.messages.len() as u64)
            .then_some(id.entry_id)
    }

    pub(crate) fn len(&self) -> u64 {
        self.messages.len() as u64
    }
}
