//! A topic: its entries, in publish order, and its subscriptions.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use ruststream::Instant;

use crate::subscription::Subscription;
use crate::transaction_buffer::TransactionBuffer;
use crate::{Content, MessageId, OutgoingMessage, Retention, StoredMessage};

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
    /// The schema registered on it, by the first producer or consumer that declared one.
    pub(crate) schema: Option<ruststream::Schema>,
    /// Its open transactions' entries, and so how far its subscriptions may read.
    pub(crate) txn_buffer: TransactionBuffer,
}

/// A topic's entries. An entry is what the broker stores, acknowledges and redelivers as one:
/// a message published alone, or every message of a producer's batch (Pulsar writes a batch as
/// one BookKeeper entry and tracks acknowledgements by entry unless batch-index
/// acknowledgement is enabled, which the model does not do: Apache Pulsar 4.0.7's default is
/// `acknowledgmentAtBatchIndexLevelEnabled = false`).
///
/// Under [`Retention::KeepAll`](crate::Retention::KeepAll) it holds every entry ever
/// published. Under [`Retention::UntilAcknowledged`](crate::Retention::UntilAcknowledged)
/// entries leave from the front ([`Store::trim`]) and a retained entry's messages may be freed
/// ([`Store::free`]); entry ids keep counting from the topic's first entry either way.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// The retained messages, in order; the messages of an entry are adjacent.
    messages: Vec<StoredMessage>,
    /// For each retained entry, the range of its messages, counted from the topic's first
    /// message (subtract `first_message` to index `messages`).
    entries: Vec<Range<usize>>,
    /// The id of the first retained entry (of `entries[0]`).
    first_entry: u64,
    /// How many messages were trimmed from the front: the number of `messages[0]`.
    first_message: usize,
    /// Every entry before this one has been freed (or trimmed).
    freed_until: u64,
    /// What a freed message's `content` is: one empty content for the whole topic.
    freed: Option<Arc<Content>>,
    /// Contents freed and not dropped yet: each publish drops one (see [`BURIED_AT_MOST`]).
    buried: VecDeque<Arc<Content>>,
    /// How many entries were left without a message, trimmed since or not: transaction
    /// markers and aborted transactions' entries ([`Store::is_hollow`]). While none, dispatch
    /// looks at no entry's length.
    hollow: u64,
}

/// How many freed contents a topic keeps to drop at its next publishes, one a publish, rather
/// than at once. A message's payload and content are allocated where it is published and were
/// dropped where it is acknowledged: on another thread, a publish window of a thousand at a
/// time (`run --embedded --publish`), past the allocator's per-thread cache. Dropped one a
/// publish, they are freed on the publisher's thread just before it allocates the next
/// message's, which reuses them. Past this many a freed content is
/// dropped at once, so what a topic holds stays bounded when nothing is published.
const BURIED_AT_MOST: usize = 1024;

/// Freed records are removed from the front once at least this many wait, and at least
/// [`TRIM_RATIO`] times as many as the records after them: a removal moves those down.
const TRIM_AT_LEAST: u64 = 64;

/// See [`TRIM_AT_LEAST`]: a topic moves at most one record per `TRIM_RATIO` messages on
/// average, and holds at most `TRIM_RATIO` freed records (without payload) per live one.
const TRIM_RATIO: u64 = 4;

impl Store {
    /// The number of entries ever published (the next entry's id).
    pub(crate) fn len(&self) -> u64 {
        self.first_entry + self.entries.len() as u64
    }

    /// The messages of one held entry (one, or the whole batch).
    pub(crate) fn entry(&self, entry: u64) -> &[StoredMessage] {
        debug_assert!(
            entry >= self.first_entry,
            "entry {entry} was trimmed (the first held is {}): only entries every \
             subscription acknowledged are, and none of those is read",
            self.first_entry
        );
        let range = &self.entries[(entry - self.first_entry) as usize];
        &self.messages[range.start - self.first_message..range.end - self.first_message]
    }

    /// The messages held before entry `entry`, and those from it on.
    pub(crate) fn split_at_entry(&self, entry: u64) -> (&[StoredMessage], &[StoredMessage]) {
        let at = if entry >= self.len() {
            self.messages.len()
        } else if entry < self.first_entry {
            0
        } else {
            self.entries[(entry - self.first_entry) as usize].start - self.first_message
        };
        self.messages.split_at(at)
    }

    /// Whether `entry` holds no message: a transaction's commit or abort marker, or an entry
    /// of an aborted transaction. The dispatcher acknowledges such an entry as it reads it and
    /// sends nothing (`AbstractBaseDispatcher.filterEntriesForConsumer`: `isTxnMarker`,
    /// `isTxnAborted`).
    #[inline]
    pub(crate) fn is_hollow(&self, entry: u64) -> bool {
        self.hollow > 0 && self.entry(entry).is_empty()
    }

    /// Append an entry without messages: a transaction marker.
    pub(crate) fn append_marker(&mut self) -> u64 {
        let entry = self.len();
        let at = self.first_message + self.messages.len();
        self.entries.push(at..at);
        self.hollow += 1;
        entry
    }

    /// Drop the messages of `entry`, which an aborted transaction wrote: no subscription will
    /// ever be sent them, and a reader of the topic never sees them (the broker keeps them in
    /// its ledger and filters them at every read, `isTxnAborted`). The entry stays, empty, and
    /// keeps its id; the messages after it move down.
    pub(crate) fn drop_messages(&mut self, entry: u64) {
        if entry < self.first_entry || entry >= self.len() {
            return;
        }
        let i = (entry - self.first_entry) as usize;
        let range = self.entries[i].clone();
        let n = range.len();
        if n == 0 {
            return;
        }
        let start = range.start - self.first_message;
        self.messages.drain(start..start + n);
        self.entries[i] = range.start..range.start;
        for later in &mut self.entries[i + 1..] {
            later.start -= n;
            later.end -= n;
        }
        self.hollow += 1;
    }

    /// The first entry not freed, and the entries after it that were freed: where a
    /// subscription made now at the earliest position starts, and what it finds settled.
    pub(crate) fn earliest(&self) -> (u64, Vec<u64>) {
        let start = self.freed_until.max(self.first_entry);
        let Some(freed) = &self.freed else {
            return (start, Vec::new());
        };
        let freed = (start..self.len())
            .filter(|&entry| {
                self.entry(entry)
                    .first()
                    .is_some_and(|m| Arc::ptr_eq(&m.content, freed))
            })
            .collect();
        (start, freed)
    }

    /// Free the payload, properties and key of every message of `entry` (no more subscription
    /// needs them); its record stays until [`Store::trim`]. Deliveries already made keep
    /// their own reference to the content. The payload and properties are dropped at one of
    /// the next publishes (see [`BURIED_AT_MOST`]).
    pub(crate) fn free(&mut self, entry: u64) {
        if entry < self.freed_until.max(self.first_entry) || entry >= self.len() {
            return;
        }
        let range = self.entries[(entry - self.first_entry) as usize].clone();
        let freed = self
            .freed
            .get_or_insert_with(|| Arc::new(Content::default()));
        for message in
            &mut self.messages[range.start - self.first_message..range.end - self.first_message]
        {
            if !Arc::ptr_eq(&message.content, freed) {
                let content = std::mem::replace(&mut message.content, Arc::clone(freed));
                message.key = None;
                if self.buried.len() < BURIED_AT_MOST {
                    if self.buried.capacity() == 0 {
                        self.buried.reserve_exact(BURIED_AT_MOST);
                    }
                    self.buried.push_back(content);
                }
            }
        }
    }

    /// Drop the content freed longest ago, if one waits (see [`BURIED_AT_MOST`]).
    fn drop_buried(&mut self) {
        self.buried.pop_front();
    }

    /// No subscription needs any entry before `until` any more: free them, and drop their
    /// records once enough are waiting (see [`TRIM_AT_LEAST`]).
    pub(crate) fn trim(&mut self, until: u64) {
        let until = until.min(self.len());
        while self.freed_until < until {
            let entry = self.freed_until;
            self.free(entry);
            self.freed_until += 1;
        }
        let dead = until.saturating_sub(self.first_entry);
        let live = self.len() - until;
        if dead < TRIM_AT_LEAST.max(live.saturating_mul(TRIM_RATIO)) {
            return;
        }
        let dead = dead as usize;
        let messages = self.entries[dead - 1].end - self.first_message;
        self.entries.drain(..dead);
        self.messages.drain(..messages);
        self.first_entry = until;
        self.first_message += messages;
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
            schema: None,
            txn_buffer: TransactionBuffer::default(),
        }
    }

    /// The first entry its subscriptions may not read yet (see [`TransactionBuffer`]).
    #[inline]
    pub(crate) fn readable(&self) -> u64 {
        self.txn_buffer.readable(self.store.len())
    }

    /// Store a message alone in the next entry.
    pub(crate) fn append(&mut self, message: OutgoingMessage, now: Instant) -> MessageId {
        let entry_id = self.store.len();
        let start = self.store.first_message + self.store.messages.len();
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
        let start = self.store.first_message + self.store.messages.len();
        let batch_size = Some(messages.len() as u32);
        let ids = messages
            .into_iter()
            .enumerate()
            .map(|(index, message)| {
                self.store_message(message, entry_id, Some(index as i32), batch_size, now)
            })
            .collect();
        let end = self.store.first_message + self.store.messages.len();
        self.store.entries.push(start..end);
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
        self.store.drop_buried();
        self.store.messages.push(StoredMessage {
            id,
            content: Arc::new(
                match message.unreadable {
                    None => Content::new(message.payload, message.properties),
                    Some(reason) => {
                        Content::unreadable(message.payload, message.properties, reason)
                    }
                }
                .with_chunk(message.chunk),
            ),
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

    /// `entry` was acknowledged on one subscription: under `retention`, free it if every
    /// subscription has now settled it, then let go of what no subscription needs.
    pub(crate) fn released(&mut self, entry: u64, retention: Retention) {
        let Some(until) = self.needed_from(retention) else {
            return;
        };
        // An entry before `until` is freed by the trim; one after it, only if every
        // subscription acknowledged it individually.
        if entry >= until && self.subscriptions.values().all(|s| s.is_settled(entry)) {
            self.store.free(entry);
        }
        self.store.trim(until);
    }

    /// Under `retention`, free and trim the entries no subscription needs (see
    /// [`Topic::needed_from`]).
    pub(crate) fn retain(&mut self, retention: Retention) {
        if let Some(until) = self.needed_from(retention) {
            self.store.trim(until);
        }
    }

    /// [`Topic::retain`] after a publish, which moves no cursor: only a topic without
    /// subscription has anything to let go of then.
    pub(crate) fn retain_after_publish(&mut self, retention: Retention) {
        if self.subscriptions.is_empty() {
            self.retain(retention);
        }
    }

    /// The first entry some subscription may still need, if `retention` frees any: the
    /// lowest mark-delete position, or on a topic without subscription the first of the
    /// entries the policy keeps.
    fn needed_from(&self, retention: Retention) -> Option<u64> {
        let Retention::UntilAcknowledged {
            without_subscription,
        } = retention
        else {
            return None;
        };
        Some(
            self.subscriptions
                .values()
                .map(|s| s.mark_delete)
                .min()
                .unwrap_or_else(|| self.len().saturating_sub(without_subscription)),
        )
    }

    /// Where a subscription made now with `position` starts, and the entries after that it
    /// finds already settled: those the retention freed (nothing is left of them to read).
    pub(crate) fn start_of(&self, position: crate::InitialPosition) -> (u64, Vec<u64>) {
        match position {
            crate::InitialPosition::Latest => (self.len(), Vec::new()),
            crate::InitialPosition::Earliest => self.store.earliest(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A freed message's content is dropped at a later publish, one a publish, and at most
    /// [`BURIED_AT_MOST`] wait: past them, a freed content is dropped at once.
    #[test]
    fn freed_contents_wait_for_the_next_publishes_and_no_more_than_the_bound() {
        let now = Instant::from_elapsed(Duration::ZERO);
        let mut topic = Topic::new(1, -1, now);
        let total = BURIED_AT_MOST as u64 + 10;
        for n in 0..total {
            let id = topic.append(OutgoingMessage::new(format!("m{n}")), now);
            assert_eq!(id.entry_id, n);
        }
        let kept = Arc::clone(&topic.store.messages[0].content);
        for entry in 0..total {
            topic.store.free(entry);
        }
        assert!(topic
            .store
            .messages
            .iter()
            .all(|m| m.content.payload().is_empty()));
        assert_eq!(topic.store.buried.len(), BURIED_AT_MOST);
        // The first freed content is the first dropped: the delivery that still holds it is
        // then its only owner.
        assert_eq!(Arc::strong_count(&kept), 2);
        topic.append(OutgoingMessage::new("next"), now);
        assert_eq!(topic.store.buried.len(), BURIED_AT_MOST - 1);
        assert_eq!(Arc::strong_count(&kept), 1);
    }
}
