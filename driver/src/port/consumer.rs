//! What a driver needs from a broker's consumer.

use std::future::Future;
use std::task::{Context, Poll};

use ruststream::app::BoxError;
use ruststream::broker::machine::{BatchSlot, EntryPosition};
use ruststream::handler::BoxFuture;
use ruststream::MessageId;

use super::{CommitError, Received, Transaction};

/// A subscription's consumer, owned by exactly one driver task.
///
/// A consumer also accounts for work in flight: a delivery counts from the moment it is
/// received until the driver releases it ([`ConsumerPort::release`]), exactly once, after
/// the calls made for it at that time. Settlement calls do not count: a message can be
/// settled after its release (a `retry_after` wait's nack, a batched entry acknowledged with
/// its last message), and no map of ids is needed to tell a first call from a later one.
///
/// A port MUST:
/// - hand over each delivery once per time the broker delivered it (a redelivery is a new
///   delivery);
/// - make each call with what it is given, deciding nothing: which messages to acknowledge,
///   when, and what becomes of a commit that failed are the machine's;
/// - report a commit's failure as what it is ([`CommitError`]): a publish in the transaction
///   that failed, an acknowledgement refused, or the commit itself; and leave the transaction
///   as it is (the machine aborts it where it must).
pub trait ConsumerPort: Send + 'static {
    /// The transport's message id. It prints as the broker prints it (Pulsar:
    /// `ledger:entry:partition`, plus `:index` for a message of a batch), when something
    /// asks: a log line, a handler's `MessageId`, a dead-letter copy.
    type Id: Clone + PartialEq + Send + Sync + std::fmt::Display + 'static;

    /// The entry that holds the message `id`: what the broker acknowledges and redelivers.
    fn entry(id: &Self::Id) -> EntryPosition;

    /// The id as ruststream hands it out (a handler's `MessageId`).
    fn message_id(id: &Self::Id) -> MessageId;

    /// The next delivery; `None` once the consumer is closed for good.
    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received<Self::Id>>>;

    /// Acknowledge `ids` (never empty), in as few broker commands as the transport can: the
    /// acknowledgements due at one flush leave together.
    fn ack(&mut self, ids: &[Self::Id]) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// Whether settled messages of an unfinished batched entry are also acknowledged at
    /// batch-index level ([`ConsumerPort::ack_batch_index`]).
    fn acks_batch_index(&self) -> bool {
        false
    }

    /// Acknowledge the message at batch-index level: `ack_set` has a bit set for every index
    /// of its entry (of `size` messages) not settled yet (64 a word). Called only where
    /// [`ConsumerPort::acks_batch_index`] says so.
    fn ack_batch_index(
        &mut self,
        _id: &Self::Id,
        _size: std::num::NonZeroU32,
        _ack_set: Vec<i64>,
    ) -> impl Future<Output = Result<(), BoxError>> + Send {
        async { Ok(()) }
    }

    /// Ask for `ids` (never empty) to be redelivered, in as few broker commands as the
    /// transport can.
    fn nack(&mut self, ids: &[Self::Id]) -> impl Future<Output = Result<(), BoxError>> + Send;

    /// The deliveries `ids`, received earlier and gathered into a batch, go to the handler
    /// now: their ack timeouts, if the consumer has one, start again from now, so that a
    /// message's time to be settled does not shrink by the time its batch took to fill.
    fn restart_ack_timeout<'a>(&mut self, ids: impl Iterator<Item = &'a Self::Id>)
    where
        Self::Id: 'a;

    /// Acknowledge `acks` in `txn`, each at its index alone where its slot says so
    /// ([`BatchSlot::only_this`]), send what the transaction's publishes still hold, then
    /// commit it. The future borrows nothing, so that the driver goes on while the commit
    /// runs. A transport without transactions fails it.
    fn commit(
        &mut self,
        txn: &Transaction,
        acks: Vec<(Self::Id, Option<BatchSlot>)>,
    ) -> BoxFuture<'static, Result<(), CommitError>> {
        let _ = (txn, acks);
        Box::pin(async {
            Err(CommitError::failed(
                "this transport has no transactions".into(),
            ))
        })
    }

    /// The delivery `id` left the driver's hands: it no longer counts as in flight. Called
    /// exactly once per delivery received (per copy, where one id is received twice), after
    /// the settlement calls due for it then, if any.
    fn release(&mut self, id: &Self::Id);

    /// The delivery `id`, released while it waited (parked behind its key, gathered for a
    /// batch), starts now; or its transaction's commit was sent: it counts as in flight again
    /// until its next [`ConsumerPort::release`].
    fn acquire(&mut self, id: &Self::Id);

    /// Close the consumer; its unacknowledged messages go back to the subscription.
    fn close(self) -> impl Future<Output = ()> + Send;
}
