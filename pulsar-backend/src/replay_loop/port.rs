//! What the replay's loop asks of a transport.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::BoxError;
use ruststream::message::Message;
use ruststream::replay::ReplayEnd;
use ruststream::{MessageId, PublishError};

/// The entry a message is stored in: what a whole-entry acknowledgement settles.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EntryKey {
    /// The topic (the partition's, on a partitioned topic), fully qualified.
    pub(crate) topic: Arc<str>,
    pub(crate) ledger: u64,
    pub(crate) entry: u64,
}

/// A message read from the dead-letter topic.
#[derive(Debug)]
pub(crate) struct Dead<Id> {
    /// What the transport acknowledges it with.
    pub(crate) id: Id,
    /// Its id as printed (`ledger:entry:partition[:index]`).
    pub(crate) message_id: MessageId,
    pub(crate) entry: EntryKey,
    /// Its index in its batched entry and the entry's size, for a message of a batch.
    pub(crate) batch: Option<(u32, u32)>,
    pub(crate) payload: Vec<u8>,
    pub(crate) key: Option<String>,
    pub(crate) properties: Vec<(String, String)>,
    pub(crate) event_time: Option<Duration>,
}

/// What reading the dead-letter topic gave.
#[derive(Debug)]
pub(crate) enum Next<Id> {
    Message(Dead<Id>),
    /// Nothing more to read, and why.
    End(ReplayEnd),
}

/// A transport's side of a replay: one subscription to the dead-letter topic and a publisher.
pub(crate) trait DeadLetters: Send {
    /// What an acknowledgement names.
    type Id: Clone + Send + Sync;

    /// The dead-letter topic, fully qualified.
    fn topic(&self) -> &str;

    /// Whether a message of a batched entry can be acknowledged on its own.
    fn acks_batch_index(&self) -> bool;

    /// The next message, or the end. Dropped at any await point when a stop comes.
    fn next(&mut self) -> impl Future<Output = Result<Next<Self::Id>, BoxError>> + Send;

    /// Publish `copy` and wait for the broker's receipt.
    fn publish(
        &mut self,
        copy: Message,
    ) -> impl Future<Output = Result<MessageId, PublishError>> + Send;

    /// Acknowledge the message `id` (with `index`, `(index, batch size)`: that message of its
    /// batch only; without: its whole entry), and complete once the broker has the
    /// acknowledgement.
    fn ack(
        &mut self,
        id: &Self::Id,
        index: Option<(u32, u32)>,
    ) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// Leave the subscription: what was not acknowledged goes back to it.
    fn close(self) -> impl Future<Output = ()> + Send;
}
