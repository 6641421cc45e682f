//! What the machine asks its driver to do.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use super::{BatchSlot, Gathered};
use crate::broker::Token;
use crate::completion::{Completion, Republish, SettlementError};
use crate::outcome::HandlerOutcome;
use crate::publish::PublishError;
use crate::MessageId;

/// One thing for the driver to do, from [`SubscriptionMachine::poll`]
/// (or [`SubscriptionMachine::receive`], for a delivery that starts as it arrives).
///
/// Exhaustive on purpose, unlike the crate's other public enums: a driver matches every
/// command, so that one added here fails to compile in each driver until it carries it out,
/// rather than compiling and never reaching the broker.
///
/// [`SubscriptionMachine::poll`]: super::SubscriptionMachine::poll
/// [`SubscriptionMachine::receive`]: super::SubscriptionMachine::receive
#[derive(Debug)]
pub enum Command<Id, D, K, T> {
    /// Run the handler: its layers, then the handler on the deliveries its plan lets it have.
    /// Each delivery's end comes back as [`Event::Finished`](super::Event::Finished). (Boxed:
    /// a delivery that starts as it arrives comes through [`Admit::Start`] instead, and the
    /// commands stay small to move.)
    Invoke(alloc::boxed::Box<Invoke<D, T>>),
    /// Acknowledge the message (Pulsar: `ack_with_id`). The driver may group the
    /// acknowledgements due together into one call.
    Ack(Id),
    /// Acknowledge one message of a batched entry that is not finished yet, at batch-index
    /// level: `ack_set` has a bit set for every index of the entry not settled yet, 64 a word,
    /// as Pulsar's batch-index acknowledgement (PIP-54) takes it.
    AckIndex {
        /// The message.
        id: Id,
        /// How many messages its entry holds.
        size: core::num::NonZeroU32,
        /// The indexes still to acknowledge.
        ack_set: Vec<i64>,
    },
    /// Ask for the message again (Pulsar: `nack_with_id`). Groupable as acknowledgements are.
    Nack(Id),
    /// Publish the copy of a delivery to another topic; its answer comes back as
    /// [`Event::Answered`](super::Event::Answered) with [`Origin::Republish`](crate::broker::Origin::Republish).
    Republish(alloc::boxed::Box<Republishing<K, T>>),
    /// How a delivery ended, once the machine knows (a copy answered, a backoff resolved, an
    /// outcome refused): for the layers' `completed` hooks and the lines about it.
    Completed(alloc::boxed::Box<Completed<Id, K>>),
    /// Open a transaction; the answer comes back as [`Event::Opened`](super::Event::Opened).
    Open {
        /// How the machine names it.
        txn: TxnId,
        /// How long the broker lets it stay open.
        timeout: Duration,
    },
    /// Acknowledge `acks` in the transaction and commit it: what was published in it, and the
    /// acknowledgements, become visible together. A message of a batched entry is acknowledged
    /// at its index alone where its slot is given ([`BatchSlot::only_this`]). The answer comes
    /// back as [`Event::Committed`](super::Event::Committed).
    Commit(alloc::boxed::Box<Commit<Id, T>>),
    /// Abort the transaction: nothing published in it becomes visible.
    Abort(T),
    /// The delivery counts as in flight again (a parked one starts, a commit is sent for it).
    Acquire(Id),
    /// The delivery no longer counts as in flight: release it once the calls due with it were
    /// made (a driver that groups calls releases after making them).
    Release(Id),
    /// Something to tell the operator about.
    Notice(Notice<Id>),
}

/// What becomes of a delivery that arrived, from
/// [`SubscriptionMachine::receive`](super::SubscriptionMachine::receive).
#[derive(Debug)]
pub enum Admit<T> {
    /// Run it now, as this says (the driver keeps the delivery).
    Start(Start<T>),
    /// Hand it to the machine ([`SubscriptionMachine::keep`](super::SubscriptionMachine::keep)),
    /// which holds it and hands it back as an [`Invoke`] when it may run.
    Keep,
    /// Let it go: the machine made the call due for it, if one is, and releases it.
    Drop,
}

/// How a delivery that runs now runs.
#[derive(Debug, Clone)]
pub struct Start<T> {
    /// Its token: what the answers of its publishes name, and its
    /// [`Event::Finished`](super::Event::Finished).
    pub token: Token,
    /// What it is due.
    pub plan: Plan,
    /// The transaction its handler publishes in.
    pub txn: Txn<T>,
}

/// A handler invocation: one delivery, or a batch handler's batch.
#[derive(Debug)]
pub struct Invoke<D, T> {
    /// The token of its first delivery; the others are numbered on from it. What the answers
    /// of its publishes name, and each delivery's [`Event::Finished`](super::Event::Finished).
    pub token: Token,
    /// Its deliveries.
    pub members: Members<D>,
    /// The transaction its handler publishes in, for a transactional registration.
    pub txn: Txn<T>,
}

/// The transaction an invocation, or a copy, runs in.
#[derive(Debug, Clone)]
pub enum Txn<T> {
    /// None: the registration is not transactional. A handler's publishes are counted for
    /// its deliveries, whose acknowledgements wait for them.
    Outside,
    /// This one, open: what is published in it is not counted for the deliveries, as the
    /// commit waits for it.
    In(T),
    /// Its transaction could not be opened (why): nothing is published, and each delivery
    /// ends as `retry()` would ([`Step::NotOpened`]).
    NotOpened(Arc<str>),
}

impl<T> Txn<T> {
    /// Why its transaction could not be opened, if it could not.
    #[inline]
    pub fn not_opened(&self) -> Option<&str> {
        match self {
            Txn::NotOpened(why) => Some(why),
            _ => None,
        }
    }
}

/// The deliveries of one invocation.
#[derive(Debug)]
pub enum Members<D> {
    /// One delivery, for a handler of one message.
    One(D, Plan),
    /// A batch handler's batch, in the order its deliveries were gathered; each with its
    /// plan. Hand the list back with [`Event::BatchDone`](super::Event::BatchDone) once the
    /// batch ended.
    Batch(Vec<Gathered<D>>),
}

/// What a delivery is due as it starts: decided by the machine, completed by the layers'
/// answer and the transport's reading of it ([`Plan::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// The handler, unless a layer answers for it, or the transport could not read it.
    Handle,
    /// Nothing: it came back once more than `max_attempts` allows, whatever a layer answers.
    /// It ends as [`Completion::OutOfAttempts`], which the machine copies to the dead-letter
    /// topic.
    OutOfAttempts,
}

/// What runs for one delivery, from [`Plan::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// Call the handler.
    Call,
    /// A layer answered before the handler: the delivery ends with this outcome, and the
    /// handler is not called.
    Answered(HandlerOutcome),
    /// Out of attempts: [`Completion::OutOfAttempts`].
    OutOfAttempts,
    /// The transport could not read the message: it ends as a payload that does not decode
    /// ([`Completion::Undecodable`], with the transport's reason).
    Unreadable,
    /// Its transaction could not be opened: it ends as `retry()`, with this reason.
    NotOpened(&'a str),
}

impl Plan {
    /// What runs for a delivery of this plan once the layers' `before` hooks ran:
    /// `not_opened` is why its transaction could not be opened ([`Txn::not_opened`]), `answer`
    /// what a layer answered instead of the handler, and `unreadable` whether the transport
    /// could not read the message. The order is the completion table's: a transaction that
    /// did not open, then attempts spent, then a layer's answer, then an unreadable message,
    /// then the handler.
    #[inline]
    pub fn step(
        self,
        not_opened: Option<&str>,
        answer: Option<HandlerOutcome>,
        unreadable: bool,
    ) -> Step<'_> {
        if let Some(why) = not_opened {
            return Step::NotOpened(why);
        }
        match (self, answer) {
            (Plan::Handle, None) if !unreadable => Step::Call,
            (Plan::Handle, Some(outcome)) => Step::Answered(outcome),
            (Plan::Handle, None) => Step::Unreadable,
            (Plan::OutOfAttempts, _) => Step::OutOfAttempts,
        }
    }
}

impl Step<'_> {
    /// What a delivery whose handler is not called ends as; `None` for [`Step::Call`], whose
    /// end is what the handler returns ([`Completion::of`]).
    #[inline]
    pub fn completion(&self) -> Option<Completion> {
        match self {
            Step::Call => None,
            Step::Answered(outcome) => Some(Completion::Returned(*outcome)),
            Step::OutOfAttempts => Some(Completion::OutOfAttempts),
            Step::Unreadable => Some(Completion::Undecodable),
            Step::NotOpened(_) => Some(Completion::Returned(HandlerOutcome::Retry)),
        }
    }

    /// Whether the handler was due: the handler ran, or was refused the message (an
    /// unreadable one, a transaction that did not open), rather than a layer answering or the
    /// attempts being spent. What [`End::by_handler`](crate::middleware::End::by_handler)
    /// says.
    #[inline]
    pub fn by_handler(&self) -> bool {
        matches!(self, Step::Call | Step::Unreadable | Step::NotOpened(_))
    }
}

/// A commit, as [`Command::Commit`] asks for it.
#[derive(Debug)]
pub struct Commit<Id, T> {
    /// How the machine names the transaction.
    pub txn: TxnId,
    /// The transaction.
    pub handle: T,
    /// The messages, each with its place in a batched entry where it is acknowledged at its
    /// index.
    pub acks: Vec<(Id, Option<BatchSlot>)>,
    /// How many messages the commit settles (an entry acknowledged whole counts each).
    pub messages: usize,
}

/// A copy of a delivery to another topic, as [`Command::Republish`] asks for it.
#[derive(Debug)]
pub struct Republishing<K, T> {
    /// The delivery's token: the copy's answer names it.
    pub token: Token,
    /// Where it goes and why.
    pub republish: Republish,
    /// What the driver kept of the delivery ([`Tail::kept`](super::Tail::kept)), to copy it
    /// from.
    pub kept: K,
    /// The transaction it is published in: a transactional registration's copy goes in one
    /// of its own, committed with the delivery's acknowledgement; where that one could not
    /// be opened, the copy fails with why (tell its receipt so).
    pub txn: Txn<T>,
}

/// How a delivery ended, as [`Command::Completed`] tells it.
#[derive(Debug)]
pub struct Completed<Id, K> {
    /// The delivery.
    pub id: Id,
    /// What the driver kept of it, if it kept anything; the layers' `completed` hooks are due
    /// now for a delivery whose end was not final as it ended.
    pub kept: Option<K>,
    /// How it ended, as the layers and the lines show it: a payload that does not decode,
    /// where no copy was made of it, is a rejection.
    pub completion: Completion,
    /// The outcome the machine refused (a `retry_after` not shorter than the ack timeout, a
    /// `dead_letter` without a dead-letter topic, ...); the delivery is left unsettled.
    pub refused: Option<SettlementError>,
    /// The copy made of it, and how the broker answered it.
    pub republished: Option<(Republish, Result<MessageId, PublishError>)>,
}

/// Something the machine tells its operator about, for the driver to log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice<Id> {
    /// With ordered retries, the retried message that delivery `Id` was held behind did not
    /// come back within [`RETRY_RETURN_GRACE`](super::RETRY_RETURN_GRACE) of when it was due
    /// (another consumer may have its key now): `Id` and the others held behind it go on
    /// without it.
    NotBack(Id),
    /// The service stops: so many `retry_after` waits were cut short; their messages stay
    /// unacknowledged and come back.
    WaitsAbandoned(usize),
    /// The service stops: so many deliveries stopped waiting for their publishes' answers;
    /// they stay unacknowledged and come back.
    PublishesAbandoned(usize),
}

/// How the machine names a transaction it asked the driver to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId(pub u32);

/// Why a commit failed, as [`Event::Committed`](super::Event::Committed) tells it: the machine
/// decides from it whether the transaction is to be aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitFailure {
    /// A message published in the transaction failed, so nothing was committed: it must be
    /// aborted (as the Java client and pulsar-rs do).
    NotSent,
    /// An acknowledgement in it was refused, so nothing was committed: it must be aborted.
    AckRefused,
    /// The commit itself failed: the broker aborted the transaction (its timeout passed), or
    /// its answer was lost.
    Failed,
}
