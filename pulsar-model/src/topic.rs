//! A topic: its entries, in publish order, and its subscriptions.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use ruststream::Instant;

use crate::subscription::Subscription;
use crate::{Content, MessageId, OutgoingMessage, StoredMessage};

/// One persistent topic. Pulsar creates topics on first use (`allowAutoTopicCreation`
/// defaults to true), and so does the model, on a publish or a subscribe.
#[derive(Debug)]
pub(crate) struct Topic {
    /// The one ledger of this topic.
    pub(crate) ledger_id: u64,
    /// The partition index its message ids carry, `-1` if not a partition.
    pub(crate) partition: i32,
    /// When it was created (first used, or created as a partition).
    pub(crate) created: Instant,
    /// What was published, entry by entry.
    pub(crate) store: Store,
    /// Durable subscriptions by name.
    pub(crate) subscriptions: BTreeMap<String, Subscription>,
}

/// A topic's entries. An entry is what the broker stores, acknowledges and redelivers as one:
/// a message published alone, or every message of a producer's batch (Pulsar writes a batch as
/// one BookKeeper entry and tracks acknowledgements by entry unless batch-index
/// acknowledgement is enabled, which the model does not do: Apache Pulsar 4.0.7's default is
/// `acknowledgmentAtBatchIndexLevelEnabled = false`).
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// Every message ever published, in order; the messages of an entry are adjacent.
    messages: Vec<StoredMessage>,
    /// For each entry id, the range of its messages in `messages`.
    entries: Vec<Range<usize>>,
}

impl Store {
    /// The number of entries.
    pub(crate) fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The messages of one entry (one, or the whole batch).
    pub(crate) fn entry(&self, entry: u64) -> &[StoredMessage] {
        &self.messages[self.entries[entry as usize].clone()]
    }

    /// Every message, in publish order.
    pub(crate) fn messages(&self) -> &[StoredMessage] {
        &self.messages
    }
}

impl Topic {
    pub(crate) fn new(ledger_id: u64, partition: i32, created: Instant) -> Self {
        Topic {
            ledger_id,
            partition,
            created,
            store: Store::default(),
            subscriptions: BTreeMap::new(),
        }
    }

    /// Store a message alone in the next entry.
    pub(crate) fn append(&mut self, message: OutgoingMessage, now: Instant) -> MessageId {
        let entry_id = self.store.len();
        let start = self.store.messages.len();
        let id = self.store_message(message, entry_id, None, None, now);
        self.store.entries.push(start..start + 1);
        id
    }

    /// Store `messages` as one batched entry: each gets the next entry id and its index in the
    /// batch, as a batching producer's messages do.
    pub(crate) fn append_batch(
        &mut self,
        messages: Vec<OutgoingMessage>,
        now: Instant,
    ) -> Vec<MessageId> {
        let entry_id = self.store.len();
        let start = self.store.messages.len();
        let batch_size = Some(messages.len() as u32);
        let ids = messages
            .into_iter()
            .enumerate()
            .map(|(index, message)| {
                self.store_message(message, entry_id, Some(index as i32), batch_size, now)
            })
            .collect();
        self.store.entries.push(start..self.store.messages.len());
        ids
    }

    /// Store one message of entry `entry_id` (not yet in `entries`).
    fn store_message(
        &mut self,
        message: OutgoingMessage,
        entry_id: u64,
        batch_index: Option<i32>,
        batch_size: Option<u32>,
        now: Instant,
    ) -> MessageId {
        let id = MessageId {
            ledger_id: self.ledger_id,
            entry_id,
            partition: self.partition,
            batch_index,
        };
        self.store.messages.push(StoredMessage {
            id,
            content: Arc::new(Content::new(message.payload, message.properties)),
            key: message.key,
            publish_time: now,
            batch_size,
            event_time: message.event_time,
            deliver_at: message.deliver_at,
        });
        id
    }

    /// The entry a message id names in this topic, if it names one.
    pub(crate) fn entry_of(&self, id: &MessageId) -> Option<u64> {
        (id.ledger_id == self.ledger_id && id.entry_id < self.store.len()).then_some(id.entry_id)
    }

    pub(crate) fn len(&self) -> u64 {
        self.store.len()
    }
}
