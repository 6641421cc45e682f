//! What the driver tells the machine.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{CommitFailure, Delivered, Gathered, TxnId};
use crate::broker::{Origin, Token};
use crate::completion::Completion;
use crate::publish::PublishError;
use crate::{Instant, MessageId};

/// Something that happened to a subscription, for [`SubscriptionMachine::handle`]
/// (a delivery that arrives goes to [`SubscriptionMachine::receive`] instead, which may start
/// it at once).
///
/// [`SubscriptionMachine::handle`]: super::SubscriptionMachine::handle
/// [`SubscriptionMachine::receive`]: super::SubscriptionMachine::receive
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<Id, D, K, T> {
    /// One delivery of an invocation ended (a batch's, each on its own).
    Finished(Finished<Id, K>),
    /// A batch handler's batch ended, after each of its deliveries' [`Event::Finished`]: its
    /// list, emptied, for the next batch to be gathered in (allocated once, not per batch).
    BatchDone(Vec<Gathered<D>>),
    /// A publish was answered: one a handler made for delivery `token`, or the copy the
    /// machine ordered for it.
    Answered {
        /// The delivery it was made for.
        token: Token,
        /// Whose publish it was.
        origin: Origin,
        /// Stored, with its id, or why not.
        result: Result<MessageId, PublishError>,
    },
    /// A transaction the machine asked for ([`Command::Open`](super::Command::Open)) is open,
    /// or could not be opened (why).
    Opened {
        /// Which.
        txn: TxnId,
        /// The transaction, or why it could not be opened.
        result: Result<T, Arc<str>>,
    },
    /// A commit ([`Command::Commit`](super::Command::Commit)) was answered.
    Committed {
        /// Which.
        txn: TxnId,
        /// Committed, or why not.
        result: Result<(), CommitFailure>,
    },
    /// The driver is about to wait for its next event: deliveries that wait for time (a
    /// batch's max wait, a key's retried message) stop counting as in flight.
    Idle,
    /// The service stops: take no more, start nothing held, hand over what is gathered in
    /// partial batches, commit the open transaction once its deliveries ended.
    Stop,
    /// The service's grace period is over: stop waiting for publishes' answers and
    /// `retry_after` deadlines; those messages stay unacknowledged and come back.
    Abandon,
}

/// How one delivery's handling ended, as the driver tells the machine.
#[derive(Debug)]
pub struct Finished<Id, K> {
    /// The delivery's token ([`Invoke::token`](super::Invoke::token), plus its place in a
    /// batch).
    pub token: Token,
    /// The delivery.
    pub delivered: Delivered<Id>,
    /// How it ended, after the layers' `after` hooks (a backoff is resolved here, by the
    /// registration's policy).
    pub completion: Completion,
    /// When it ended: a `retry_after` wait counts from it.
    pub at: Instant,
    /// How many messages its handler published (counted until it ended; none in a
    /// transaction, whose commit waits for them).
    pub publishes: u32,
    /// Its attempt count: its redelivery count as the machine set it
    /// ([`Envelope::set_redelivery_count`](super::Envelope::set_redelivery_count)); 0 where
    /// the broker keeps none.
    pub attempt: u32,
    /// What only some deliveries carry; one pointer, so that what every delivery carries
    /// stays small.
    pub tail: Option<alloc::boxed::Box<Tail<K>>>,
}

/// What only some finished deliveries carry.
#[derive(Debug)]
pub struct Tail<K> {
    /// Its key, where the subscription keeps per-key order ([`MachineConfig::key_ordered`](super::MachineConfig::key_ordered)).
    pub key: Option<String>,
    /// What the driver kept of it, where its end was not final
    /// ([`Completion::is_final`]): the machine copies from it and hands it back with
    /// [`Command::Completed`](super::Command::Completed). A driver may also keep one for a
    /// final end (to log in the delivery's span); it comes back where there is something to
    /// say.
    pub kept: Option<K>,
}
