//! The subscription machine: everything one subscription decides, as one sans-IO state machine.
//!
//! A subscription's driver owns a consumer, runs handlers and carries out I/O; every decision
//! in between is made here, without I/O, without a clock and without an executor. The driver
//! speaks to it through eight methods, in quinn-proto's shape: what happened goes in, what to
//! do comes out, with the next deadline.
//!
//! | method | the driver |
//! |---|---|
//! | [`SubscriptionMachine::wants_delivery`] | asks before it takes the next delivery from its consumer |
//! | [`SubscriptionMachine::receive`] | shows it a delivery: run it now, hand it over to be held, or let it go ([`Admit`]) |
//! | [`SubscriptionMachine::keep`] | hands over a delivery the machine holds (behind its key, for its batch, for its transaction) |
//! | [`SubscriptionMachine::handle`] | tells an [`Event`]: a delivery's end, a publish answered, a transaction opened or committed, idle, stop |
//! | [`SubscriptionMachine::poll`] | takes the next [`Command`] until none is left: invoke, ack, nack, republish, open, commit, abort, acquire, release |
//! | [`SubscriptionMachine::poll_timeout`] | arms its one timer for the next deadline |
//! | [`SubscriptionMachine::status`] | reads what is held, for gauges and to know when a stop is done |
//! | [`SubscriptionMachine::config`] | reads how the subscription runs |
//!
//! What is decided where:
//!
//! | decision | where |
//! |---|---|
//! | whether another delivery may be taken (concurrency, held keys, unanswered commits) | [`SubscriptionMachine::wants_delivery`] |
//! | whether a delivery is handled, dead-lettered, or let go (a batch sibling in hand or settled, a late copy), and its one attempt count (copies through the retry topic included) | `receive.rs` |
//! | per-key order: a delivery waits while one of its key runs (and, with ordered retries, while one of its key waits for a retry) | `receive.rs`, `key_order.rs` |
//! | what runs for a delivery: a transaction that did not open, out of attempts, a layer's answer, unreadable, the handler | [`Plan::step`] |
//! | what an outcome becomes (the completion table), the backoff's delay, the copy to the dead-letter or retry topic, and when the layers hear of it | `finish.rs`, [`crate::completion`] |
//! | `retry_after` waits: a negative acknowledgement held until its deadline | `settler.rs` |
//! | an acknowledgement held until the handler's publishes (and the copy) are confirmed | `publishes.rs` |
//! | a batched entry's acknowledgement held until all of it is settled | `entries.rs` |
//! | a batch handler's batches: gathered by max messages, bytes and wait, one admission each | `gather.rs` |
//! | a transactional registration's transactions: opened, joined, committed or aborted, a copy's own | `transaction.rs` |
//! | which command comes next, and when a delivery stops counting as in flight | `poll.rs` |
//!
//! A driver's loop: feed each event, then take commands until [`SubscriptionMachine::poll`]
//! answers `None`; make the consumer calls (those due together as one), arm the timer for
//! [`SubscriptionMachine::poll_timeout`], and only then release what [`Command::Release`]
//! named, so that "nothing in flight" implies every call was made and every deadline has its
//! timer.

mod call;
mod command;
mod entries;
mod envelope;
mod event;
mod finish;
mod gather;
mod key_order;
mod poll;
#[cfg(test)]
mod property;
mod publishes;
mod receive;
mod settler;
mod status;
#[cfg(test)]
mod tests;
mod transaction;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

pub(crate) use call::Call;
pub use command::{
    Admit, Command, Commit, CommitFailure, Completed, Invoke, Members, Notice, Plan, Republishing,
    Start, Step, Txn, TxnId,
};
pub use entries::{BatchPlace, BatchSlot, EntryPosition};
pub use envelope::Envelope;
pub use event::{Event, Finished, Tail};
pub use gather::Gathered;
pub(crate) use settler::Settler;
pub use status::Status;

use crate::batch_policy::BatchPolicy;
use crate::{Instant, SubscriptionRules, SubscriptionType};
use entries::EntryLedger;
use gather::Gathering;
use key_order::KeyOrder;
use publishes::Ledger;
use transaction::Transactions;

/// How a subscription runs, besides its completion rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineConfig {
    /// How many handlers run at once.
    pub concurrency: usize,
    /// Whether deliveries of one key run one at a time, in arrival order (always on KeyShared).
    pub key_ordered: bool,
    /// Deliveries a message may have, the first included, before it goes to the dead-letter
    /// topic instead of the handler; `None` without a dead-letter topic.
    pub max_attempts: Option<u32>,
    /// Whether a settled message of an unfinished batched entry is also acknowledged at
    /// batch-index level ([`Command::AckIndex`]).
    pub batch_index_acks: bool,
    /// Whether a delivery that ends in a retry keeps its key (where deliveries of one key run
    /// in order): the key's later deliveries are held until the retried message comes back
    /// and runs, or [`RETRY_RETURN_GRACE`] after it was due.
    pub ordered_retries: bool,
    /// Whether the registration declared a dead-letter topic: `dead_letter(reason)`, a
    /// payload that does not decode and a message out of attempts are copied there.
    pub dead_letter_topic: bool,
    /// Whether the registration declared a retry topic: `retry_later(d)` is copied there, and
    /// a delivery's attempt count includes the copies it went through
    /// ([`Envelope::republished`]).
    pub retry_topic: bool,
    /// For a batch handler, how its deliveries are gathered into batches: the concurrency
    /// then counts batches.
    pub batch: Option<BatchPolicy>,
    /// For a transactional registration ([`crate::transaction`]), how its deliveries run in
    /// transactions: an acknowledgement becomes [`Command::Commit`], any other end
    /// [`Command::Abort`] first.
    pub transactional: Option<crate::transaction::TransactionPolicy>,
}

/// How long after a retried message was due back (at once for `retry`, after its delay for
/// `retry_after`, after the ack timeout for no outcome) the deliveries held behind it wait for
/// it, with ordered retries. Past it the message went elsewhere (another consumer took its
/// key, the consumer reconnected), and the key is let go, so that nothing waits for ever.
pub const RETRY_RETURN_GRACE: Duration = Duration::from_secs(30);

/// With ordered retries, how many deliveries may be held while keys wait for their retried
/// messages before no more are taken: the retried messages must still be received, so held
/// ones do not count against the concurrency then, but they are bounded.
pub const HELD_WHILE_AWAITING: usize = 1024;

/// A transactional registration takes no delivery while this many commits, or as many as its
/// concurrency if that is more, are unanswered. A commit is I/O, not a handler: a registration
/// that runs one handler at a time (Exclusive, Failover) still overlaps a commit with the next
/// deliveries, but the transactions open at once stay bounded whatever the receiver queue holds.
pub const COMMITS_IN_FLIGHT: usize = 32;

impl MachineConfig {
    /// One handler at a time, no per-key order, no dead-letter topic, no index acks.
    pub fn new(concurrency: usize) -> Self {
        MachineConfig {
            concurrency: concurrency.max(1),
            key_ordered: false,
            max_attempts: None,
            batch_index_acks: false,
            ordered_retries: false,
            dead_letter_topic: false,
            retry_topic: false,
            batch: None,
            transactional: None,
        }
    }
}

/// A delivery as the completion table knows it: the transport's id and its place in a
/// batched entry (whose entry the id tells). Kept small: a delivery waiting in `retry_after`
/// is one of these.
#[derive(Debug, Clone)]
pub struct Delivered<Id> {
    /// The transport's id.
    pub id: Id,
    /// Its place in a batched entry.
    pub batch: Option<BatchPlace>,
}

/// A delivery held by the machine (behind its key, or for a running batch), with its plan.
type Pending<D> = (D, Plan);

/// One subscription's state (see the [module documentation](self)).
///
/// `D` is the driver's delivery ([`Envelope`]), which the machine holds only while it waits
/// (for its key, its batch, its transaction); `K` what the driver keeps of a delivery whose
/// end is not final (a copy is made from it, and the layers hear how it ended); `T` an open
/// transaction.
pub struct SubscriptionMachine<D: Envelope, K = (), T = ()> {
    config: MachineConfig,
    settler: Settler<Delivered<D::Id>>,
    entries: EntryLedger<D::Id>,
    keys: KeyOrder<String, D::Id, Pending<D>>,
    /// Handlers running (started, not finished), and deliveries waiting for their transaction.
    running: usize,
    /// Calls ready before the settler's: acknowledgements of late copies, and of a whole
    /// entry once its last message is settled.
    calls: VecDeque<Call<D::Id>>,
    /// Everything else ready, in the order it was decided.
    commands: VecDeque<Command<D::Id, D, K, T>>,
    /// Deliveries out of the handlers' hands, released after the calls due for them.
    releases: Vec<D::Id>,
    /// Deliveries whose acknowledgement waits for their publishes' answers.
    publishes: Ledger<D::Id, K>,
    /// A transactional registration's transactions.
    transactions: Transactions<D, K, T>,
    /// Deliveries to start now (their key was let go), with whether each was parked.
    startable: VecDeque<(Pending<D>, bool)>,
    /// For a batch handler, the deliveries gathered for its next batch.
    gathering: Option<Gathering<D>>,
    /// The next delivery's token.
    next_token: u32,
    /// Where the delivery `receive` kept goes when `keep` hands it over.
    keeping: Option<receive::Keeping>,
    /// Where a message id's entry is, as the transport knows it.
    entry_of: fn(&D::Id) -> EntryPosition,
    /// A number drawn from a message id, the same for the same id: the backoff's jitter.
    seed_of: fn(&D::Id) -> u64,
}

impl<D: Envelope, K: Clone, T: Clone> core::fmt::Debug for SubscriptionMachine<D, K, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SubscriptionMachine")
            .field("config", &self.config)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl<D: Envelope, K: Clone, T: Clone> SubscriptionMachine<D, K, T> {
    /// A machine for a subscription with `rules` and `config`; `entry_of` tells the entry of
    /// a message id.
    pub fn new(
        rules: SubscriptionRules,
        config: MachineConfig,
        entry_of: fn(&D::Id) -> EntryPosition,
    ) -> Self {
        let config = MachineConfig {
            key_ordered: config.key_ordered || rules.kind() == SubscriptionType::KeyShared,
            ..config
        };
        SubscriptionMachine {
            config,
            settler: Settler::new(rules),
            entries: EntryLedger::default(),
            keys: KeyOrder::new(),
            running: 0,
            calls: VecDeque::new(),
            commands: VecDeque::new(),
            releases: Vec::new(),
            publishes: Ledger::new(),
            transactions: Transactions::new(config.transactional),
            startable: VecDeque::new(),
            gathering: config.batch.map(Gathering::new),
            next_token: 0,
            keeping: None,
            entry_of,
            seed_of: |_| 0,
        }
    }

    /// The same machine drawing the backoff's jitter from a message id with `seed_of` (the
    /// same id, the same delay: a run repeats exactly). Without it every jitter draws 0.
    pub fn with_seed(mut self, seed_of: fn(&D::Id) -> u64) -> Self {
        self.seed_of = seed_of;
        self
    }

    /// How it runs.
    #[inline]
    pub fn config(&self) -> &MachineConfig {
        &self.config
    }

    /// Whether another delivery may be taken from the consumer: fewer handlers run and wait
    /// for their key than the concurrency allows.
    /// With keys waiting for retried messages, deliveries are taken while a handler may run
    /// and fewer than [`HELD_WHILE_AWAITING`] are held: a retried message must be received
    /// to come back.
    /// A transactional registration also takes none while [`COMMITS_IN_FLIGHT`] commits (or as
    /// many as the concurrency, if more) are unanswered: a delivery stops running once its
    /// handler acknowledged, and without this bound every message of the receiver queue could
    /// open a transaction.
    #[inline]
    pub fn wants_delivery(&self) -> bool {
        if self.transactions.commits_unanswered() >= self.config.concurrency.max(COMMITS_IN_FLIGHT)
        {
            return false;
        }
        let held = self.keys.held();
        if let Some(gathering) = &self.gathering {
            // Batches: the next one is gathered while others run; deliveries held for their
            // key are bounded by what the running batches and the next could hold.
            let bound = gathering.max_messages() * (self.config.concurrency + 1);
            return gathering.has_room()
                && (held < bound || (self.keys.awaiting() > 0 && held < HELD_WHILE_AWAITING));
        }
        self.running + held < self.config.concurrency
            || (self.keys.awaiting() > 0
                && self.running < self.config.concurrency
                && held < HELD_WHILE_AWAITING)
    }

    /// A delivery arrived: what becomes of it ([`Admit`]). It sets the delivery's one attempt
    /// count, and stays the driver's: the driver runs it ([`Admit::Start`]), hands it to the
    /// machine with [`SubscriptionMachine::keep`] to hold (behind its key, for its batch, for
    /// its transaction; a later [`SubscriptionMachine::poll`] hands it back as an
    /// [`Invoke`]), or lets it go ([`Admit::Drop`]: a batch sibling in hand or settled, or a
    /// late copy of a finished entry, acknowledged again). A delivery that starts at once is
    /// never moved through the machine.
    ///
    /// `now` is asked only where the time matters (a batch's first delivery, a grouped
    /// transaction), so that most deliveries read no clock.
    #[inline(always)]
    pub fn receive(&mut self, delivery: &mut D, now: impl FnOnce() -> Instant) -> Admit<T> {
        self.arrive(delivery, now)
    }

    /// Hold the delivery [`SubscriptionMachine::receive`] just answered [`Admit::Keep`] for.
    #[inline(always)]
    pub fn keep(&mut self, delivery: D) {
        self.place(delivery)
    }

    /// Something happened (see [`Event`]): decide what it means. What it calls for comes
    /// from [`SubscriptionMachine::poll`].
    #[inline(always)]
    pub fn handle(&mut self, event: Event<D::Id, D, K, T>, now: Instant) {
        match event {
            Event::Finished(finished) => self.finish(finished),
            Event::BatchDone(storage) => self.batch_done(storage),
            Event::Answered {
                token,
                origin,
                result,
            } => self.answered(token, origin, result, now),
            Event::Opened { txn, result } => self.opened(txn, result, now),
            Event::Committed { txn, result } => self.committed(txn, result, now),
            Event::Idle => self.park(),
            Event::Stop => self.stop(),
            Event::Abandon => self.abandon(),
        }
    }

    /// The next thing to do at `now` (a time read a moment ago will do: nothing is due early),
    /// if any. Take commands until `None` after every event, and at every deadline.
    #[inline(always)]
    pub fn poll(&mut self, now: Instant) -> Option<Command<D::Id, D, K, T>> {
        self.next_command(now)
    }

    /// The next deadline: a `retry_after` wait, a batch's max wait, a grouped transaction's
    /// wait, a key's wait for its retried message. Commands not yet taken by
    /// [`SubscriptionMachine::poll`] do not count: poll until it answers `None` first.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut waits = self.settler.next_deadline();
        if let Some(due) = self.transactions.deadline() {
            waits = Some(waits.map_or(due, |w| w.min(due)));
        }
        if let Some(gathering) = &self.gathering {
            if let Some(due) = gathering.deadline(self.config.concurrency) {
                waits = Some(waits.map_or(due, |w| w.min(due)));
            }
        }
        if self.keys.awaiting() == 0 {
            return waits;
        }
        match (waits, self.keys.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What it holds now, and whether commands are ready that should not wait for the next
    /// flush ([`Status::ready`]).
    #[inline(always)]
    pub fn status(&self) -> Status {
        let (batches, gathered) = self
            .gathering
            .as_ref()
            .map_or((0, 0), |g| (g.running(), g.gathered()));
        let full = (self.gathering.as_ref()).is_some_and(|g| g.full_now(self.config.concurrency));
        Status {
            ready: !self.commands.is_empty() || !self.startable.is_empty() || full,
            running: self.running,
            waiting: self.settler.waiting(),
            awaiting_publishes: self.publishes.held(),
            transactions: self.transactions.len(),
            batches,
            gathered,
            held: self.keys.held(),
        }
    }

    /// The next delivery's token.
    #[inline(always)]
    fn token(&mut self, count: u32) -> crate::broker::Token {
        let token = crate::broker::Token(self.next_token);
        self.next_token = self.next_token.wrapping_add(count);
        token
    }
}
