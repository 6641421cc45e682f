//! The subscription machine: everything one subscription decides, as one sans-IO state machine.
//!
//! A subscription's driver owns a consumer and runs handlers; every decision in between is
//! made here, without I/O, without a clock and without an executor:
//!
//! | decision | where |
//! |---|---|
//! | whether another delivery may be taken (concurrency, receiver queue, unanswered commits) | [`SubscriptionMachine::wants_delivery`] |
//! | whether a delivery is handled, dead-lettered, or let go (a batch sibling in hand or settled, a late copy) | [`SubscriptionMachine::arrive`] |
//! | per-key order: a delivery waits while one of its key runs (and, with ordered retries, while one of its key waits for a retry) | [`SubscriptionMachine::start`], `key_order.rs` |
//! | what an outcome becomes (the completion table), the backoff's delay | [`SubscriptionMachine::finish`], [`crate::completion`] |
//! | `retry_after` waits: a negative acknowledgement held until its deadline | `settler.rs` |
//! | a copy to the dead-letter or the retry topic, ordered, then settled on its answer | [`SubscriptionMachine::finish`] ([`Settlement::Republish`]), [`SubscriptionMachine::answered`] |
//! | an acknowledgement held until the handler's publishes are confirmed | `publishes.rs` |
//! | a batched entry's acknowledgement held until all of it is settled | `entries.rs` |
//! | a batch handler's batches: gathered by max messages, bytes and wait, one admission each | [`SubscriptionMachine::gather`], [`SubscriptionMachine::poll_batch`], `gather.rs` |
//! | which consumer calls to make, in which order | [`SubscriptionMachine::poll_call`] |
//! | when the next wait ends | [`SubscriptionMachine::poll_timeout`] |
//! | when a delivery stops counting as in flight | [`SubscriptionMachine::poll_release`] |
//!
//! The driver is the loop around it: it feeds deliveries ([`SubscriptionMachine::arrive`],
//! [`SubscriptionMachine::start`]), ended handlers ([`SubscriptionMachine::finish`]) and
//! publish answers ([`SubscriptionMachine::answered`]), starts what
//! [`SubscriptionMachine::poll_start`] lets start, publishes the copies `finish` orders,
//! then makes the calls [`SubscriptionMachine::poll_call`] yields at `now`, arms one timer for
//! [`SubscriptionMachine::poll_timeout`], and only then lets go of the deliveries
//! [`SubscriptionMachine::poll_release`] names, so that "nothing in flight" implies every call
//! was made and every deadline has its timer.

mod call;
mod entries;
mod gather;
mod key_order;
mod publishes;
mod settler;
#[cfg(test)]
mod tests;
mod transaction;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

pub use call::Call;
pub use entries::{BatchPlace, BatchSlot, EntryPosition};
pub(crate) use settler::Settler;

use crate::batch_policy::BatchPolicy;
use crate::completion::{
    Completion, Republish, Settlement, SettlementError, OUT_OF_ATTEMPTS, UNDECODABLE,
};
use crate::publish::{Origin, Token};
use crate::{HandlerOutcome, Instant, SubscriptionRules, SubscriptionType};
use entries::{Arrival as EntryArrival, EntryLedger};
pub use gather::Gathered;
use gather::Gathering;
use key_order::KeyOrder;
use publishes::{AtEnd, Held, Ledger, Verdict};
pub use transaction::Joined;
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
    /// batch-index level ([`Call::AckIndex`]).
    pub batch_index_acks: bool,
    /// Whether a delivery that ends in a retry keeps its key (where deliveries of one key run
    /// in order): the key's later deliveries are held until the retried message comes back
    /// and runs, or [`RETRY_RETURN_GRACE`] after it was due.
    pub ordered_retries: bool,
    /// Whether the registration declared a dead-letter topic: `dead_letter(reason)`, a
    /// payload that does not decode and a message out of attempts are copied there.
    pub dead_letter_topic: bool,
    /// Whether the registration declared a retry topic: `retry_later(d)` is copied there.
    pub retry_topic: bool,
    /// For a batch handler, how its deliveries are gathered into batches
    /// ([`SubscriptionMachine::gather`], [`SubscriptionMachine::poll_batch`]): the
    /// concurrency then counts batches.
    pub batch: Option<BatchPolicy>,
    /// For a transactional registration ([`crate::transaction`]), how its deliveries run in
    /// transactions: an acknowledgement becomes [`Call::Commit`], any other end
    /// [`Call::Abort`] first.
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

/// A delivery as it arrives, for [`SubscriptionMachine::arrive`].
#[derive(Debug)]
pub struct Arrival<'a, Id> {
    /// The transport's id.
    pub id: &'a Id,
    /// Its place in a batched entry, if it was published in a batch.
    pub batch: Option<BatchSlot>,
    /// The broker's redelivery count, where the transport tells it.
    pub redelivery_count: Option<u32>,
}

/// What becomes of a delivery that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admission {
    /// Hand it to the handler ([`SubscriptionMachine::start`]).
    Handle,
    /// It is out of attempts: do not call the handler ([`SubscriptionMachine::start`] it all
    /// the same, for its key's order, and end it as [`Completion::OutOfAttempts`]: the
    /// machine orders its copy to the dead-letter topic).
    DeadLetter,
    /// Let it go: a copy of a batched message already in hand or settled here. The machine
    /// releases it (and acknowledges a late copy of a finished entry again).
    Skip,
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

/// How a started delivery ended, for [`SubscriptionMachine::finish`].
#[derive(Debug)]
pub struct Ended<'k, Id> {
    /// The delivery.
    pub delivered: Delivered<Id>,
    /// How its handler ended (a backoff is resolved here, by the registration's policy).
    pub completion: Completion,
    /// When it ended: a `retry_after` wait counts from it.
    pub at: Instant,
    /// Its key, where the subscription keeps per-key order.
    pub key: Option<&'k str>,
    /// Its token, which the answers of its publishes name.
    pub token: Token,
    /// How many messages its handler published (counted until it ended).
    pub publishes: u32,
    /// Its attempt count: the deliveries of its message before this one (the broker's count,
    /// plus the copies it went through on a retry topic). The backoff's delay and a retry
    /// copy's count are drawn from it.
    pub attempt: u32,
}

/// One subscription's state: the completion table with its waits, the batch ledger, per-key
/// order, the publishes a settlement waits for, admission and release (see the
/// [module documentation](self)).
///
/// `Id` is the transport's message id, `D` a delivery the driver hands to a handler: the
/// machine holds deliveries only while their key is busy.
#[derive(Debug)]
pub struct SubscriptionMachine<Id, D> {
    config: MachineConfig,
    settler: Settler<Delivered<Id>>,
    entries: EntryLedger<Id>,
    keys: KeyOrder<String, Id, D>,
    /// Handlers running (started, not finished).
    running: usize,
    /// Calls ready before the settler's: acknowledgements of late copies, and of a whole
    /// entry once its last message is settled.
    calls: VecDeque<Call<Id>>,
    /// Deliveries out of the handlers' hands, released after the calls due for them.
    releases: Vec<Id>,
    /// Deliveries whose acknowledgement waits for their publishes' answers.
    publishes: Ledger<Id>,
    /// A transactional registration's transactions: their deliveries, and the commits asked
    /// for and not answered yet.
    transactions: Transactions<Id>,
    /// Deliveries to start now (their key was let go), with whether each was parked.
    startable: VecDeque<(D, bool)>,
    /// For a batch handler, the deliveries gathered for its next batch.
    gathering: Option<Gathering<D>>,
    /// Where a message id's entry is, as the transport knows it.
    entry_of: fn(&Id) -> EntryPosition,
    /// A number drawn from a message id, the same for the same id: the backoff's jitter.
    seed_of: fn(&Id) -> u64,
}

impl<Id: Clone + PartialEq, D> SubscriptionMachine<Id, D> {
    /// A machine for a subscription with `rules` and `config`; `entry_of` tells the entry of
    /// a message id.
    pub fn new(
        rules: SubscriptionRules,
        config: MachineConfig,
        entry_of: fn(&Id) -> EntryPosition,
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
            releases: Vec::new(),
            publishes: Ledger::new(),
            transactions: Transactions::new(config.transactional),
            startable: VecDeque::new(),
            gathering: config.batch.map(Gathering::new),
            entry_of,
            seed_of: |_| 0,
        }
    }

    /// The same machine drawing the backoff's jitter from a message id with `seed_of` (the
    /// same id, the same delay: a run repeats exactly). Without it every jitter draws 0.
    pub fn with_seed(mut self, seed_of: fn(&Id) -> u64) -> Self {
        self.seed_of = seed_of;
        self
    }

    /// How it runs.
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

    /// A delivery arrived: whether to handle it, dead-letter it, or let it go (see
    /// [`Admission`]). It takes the delivery by reference; only [`SubscriptionMachine::start`]
    /// moves it.
    #[inline]
    pub fn arrive(&mut self, arrival: &Arrival<'_, Id>) -> Admission {
        if let Some(slot) = arrival.batch {
            match self.entries.arrive(slot) {
                EntryArrival::Handle => {}
                EntryArrival::Finished => {
                    self.calls.push_back(Call::Ack(arrival.id.clone()));
                    self.releases.push(arrival.id.clone());
                    return Admission::Skip;
                }
                EntryArrival::Settled | EntryArrival::InHand => {
                    self.releases.push(arrival.id.clone());
                    return Admission::Skip;
                }
            }
        }
        match (self.config.max_attempts, arrival.redelivery_count) {
            // pulsar-rs's rule, `redelivery_count >= max_redeliver_count`: the handler sees a
            // message exactly `max_attempts` times.
            (Some(max), Some(count)) if count > 0 && count >= max => Admission::DeadLetter,
            _ => Admission::Handle,
        }
    }

    /// Whether a delivery that [`SubscriptionMachine::arrive`] admitted (`admission`), with
    /// its `key`, runs now: `true` counts it as running; `false` means a delivery of its key
    /// runs (where the subscription keeps per-key order), and the delivery must be
    /// [`SubscriptionMachine::hold`]: the [`SubscriptionMachine::finish`] of that one returns
    /// it (with its admission). A move to the dead-letter topic waits for its key too, so
    /// that the key's messages keep their order whatever becomes of each; with ordered
    /// retries a retried message that comes back (`id`) takes back the key it kept. The
    /// delivery is not moved in (it is large, and most start at once).
    #[inline]
    pub fn start(&mut self, admission: Admission, key: Option<&str>, id: &Id) -> bool {
        if self.config.key_ordered && admission != Admission::Skip {
            if let Some(key) = key {
                if !self.keys.try_start(key, id) {
                    return false;
                }
            }
        }
        self.running += 1;
        true
    }

    /// Hold `delivery` (message `id`) behind the running delivery of its `key`
    /// ([`SubscriptionMachine::start`] said it does not run now). A copy of a delivery held
    /// already is returned instead: let it go (it is released like a skipped one). Held
    /// behind a key that waits for a retried message, it is parked: released now (it waits
    /// for time, not for a handler), and to be acquired again when it starts.
    pub fn hold(&mut self, key: &str, id: &Id, delivery: D) -> Option<D> {
        match self.keys.hold(key, id.clone(), delivery) {
            Ok(false) => None,
            Ok(true) => {
                self.releases.push(id.clone());
                None
            }
            Err(copy) => {
                self.releases.push(id.clone());
                Some(copy)
            }
        }
    }

    /// A started delivery ended: settle it by the completion table. Returns the decision (for
    /// logs and counters; on error the delivery is left unsettled).
    ///
    /// - A backoff becomes `retry_after(d)` or `retry_later(d)`, `d` the registration's
    ///   delay for the delivery's attempt.
    /// - `dead_letter(reason)`, a payload that does not decode and a delivery out of attempts
    ///   go to the dead-letter topic, `retry_later(d)` to the retry topic, where the
    ///   registration declared one: the decision is [`Settlement::Republish`], and the caller
    ///   publishes that copy with [`Outbox::copy`](crate::publish::Outbox::copy) of the
    ///   delivery's token. It is acknowledged once [`SubscriptionMachine::answered`] says the
    ///   copy is confirmed, and left unsettled if it failed.
    /// - An acknowledgement waits until every message its handler published is confirmed
    ///   (`publishes.rs`); a publish that failed makes it a negative acknowledgement.
    ///
    /// The calls come from [`SubscriptionMachine::poll_call`], at once or when their wait
    /// ends; the delivery is released after them. Where the subscription keeps per-key order,
    /// the next delivery of its key is then startable ([`SubscriptionMachine::poll_start`]).
    /// With ordered retries, a delivery that ends in a retry (or in no outcome, on a
    /// subscription with an ack timeout), or waits for its publishes, keeps its key until it
    /// comes back or is settled.
    #[inline(always)]
    pub fn finish(&mut self, ended: Ended<'_, Id>) -> Result<Settlement, SettlementError> {
        if self.config.transactional.is_some() {
            return self.finish_in_transaction(ended);
        }
        let Ended {
            delivered,
            completion,
            at,
            key,
            token,
            publishes,
            attempt,
        } = ended;
        self.running = self.running.saturating_sub(1);
        // The common end: an acknowledgement, and no publish to wait for. Nothing below would
        // change it (no backoff to resolve, no copy, no refusal, no key kept), so it is settled
        // at once.
        if publishes == 0 && matches!(completion, Completion::Returned(HandlerOutcome::Ack)) {
            let id = delivered.id.clone();
            self.settler.apply(delivered, Settlement::Ack);
            self.releases.push(id);
            self.let_key_go(key);
            return Ok(Settlement::Ack);
        }
        let completion = self.resolve(completion, attempt, &delivered.id);
        let at_end = match publishes {
            0 => AtEnd::NOTHING,
            _ => self.publishes.ended(token, publishes),
        };
        let (republish, settlement) = self.settlement_of(completion, at_end, at, attempt);
        // Held: for its copy, or for its handler's publishes where it would be acknowledged.
        let waits =
            republish.is_some() || (at_end.unanswered && matches!(settlement, Ok(Settlement::Ack)));
        if waits {
            let keeps_key = self.config.ordered_retries && self.config.key_ordered;
            let held = Held {
                delivered,
                key: key.filter(|_| keeps_key).map(String::from),
            };
            self.publishes.hold(token, held, republish);
            if !keeps_key {
                self.let_key_go(key);
            }
            return settlement;
        }
        self.apply_settlement(delivered, &settlement, at, key);
        settlement
    }

    /// Settle `delivered`, which ended at `at`, by `settlement` now (nothing it waits for):
    /// the call it makes, the wait for its return with ordered retries, its release, its key.
    #[inline(always)]
    fn apply_settlement(
        &mut self,
        delivered: Delivered<Id>,
        settlement: &Result<Settlement, SettlementError>,
        at: Instant,
        key: Option<&str>,
    ) {
        let id = self.settle_released(delivered, settlement, at, key);
        self.releases.push(id);
    }

    /// [`Self::apply_settlement`] for a delivery released already (one that acknowledged in
    /// a transaction, and waited for its commit out of the handlers' hands); its id.
    #[inline(always)]
    fn settle_released(
        &mut self,
        delivered: Delivered<Id>,
        settlement: &Result<Settlement, SettlementError>,
        at: Instant,
        key: Option<&str>,
    ) -> Id {
        let id = delivered.id.clone();
        let batch = delivered.batch;
        self.settler.apply(
            delivered,
            *settlement.as_ref().unwrap_or(&Settlement::Leave),
        );
        if let (true, true, Some(key)) = (self.config.ordered_retries, self.config.key_ordered, key)
        {
            let due = match settlement {
                Ok(Settlement::Nack) => Some(at),
                Ok(Settlement::NackAt(deadline)) => Some(*deadline),
                Ok(Settlement::Leave) | Err(_) => self.ack_timeout_from(at),
                _ => None,
            };
            if let Some(due) = due {
                self.await_return(key, id.clone(), due);
            }
        }
        // Let go of without a call: its batched entry's redelivery may hand it over again. (A
        // `NackAt` is still in hand: a sibling's redelivery must not hand it over.)
        if let (Some(place), Ok(Settlement::Leave) | Err(_)) = (batch, settlement) {
            self.entries.put_back(place.in_entry((self.entry_of)(&id)));
        }
        self.let_key_go(key);
        id
    }

    /// What a delivery that ended as `completion` (its backoff resolved) at `at`, with its
    /// publishes as `at_end`, is settled by: the copy to order, if any, and the settlement.
    #[inline(always)]
    fn settlement_of(
        &self,
        completion: Completion,
        at_end: AtEnd,
        at: Instant,
        attempt: u32,
    ) -> (Option<Republish>, Result<Settlement, SettlementError>) {
        // A publish of the handler failed: no copy, and no acknowledgement. (Asked only where
        // the registration declared a topic to copy to.)
        let copies = self.config.dead_letter_topic || self.config.retry_topic;
        let republish = match copies && !at_end.failed {
            true => self.republish(completion, attempt),
            false => None,
        };
        let settlement = match (republish, at_end.failed, completion) {
            (Some(copy), _, _) => Ok(Settlement::Republish(copy)),
            // What would have ended the message here (an acknowledgement, a copy) asks for it
            // again instead.
            (
                None,
                true,
                Completion::Returned(HandlerOutcome::DeadLetter(_) | HandlerOutcome::RetryLater(_)),
            ) => Ok(Settlement::Nack),
            (None, false, _) => self.settler.rules().settle(completion, at),
            (None, true, _) => match self.settler.rules().settle(completion, at) {
                Ok(Settlement::Ack) => Ok(Settlement::Nack),
                other => other,
            },
        };
        (republish, settlement)
    }

    /// `completion` with the registration's backoff policy applied: `backoff()` becomes
    /// `retry_after(d)` and `backoff_later()` becomes `retry_later(d)`, `d` the policy's delay
    /// for a delivery of message `id` at `attempt` (its jitter drawn from the id). What
    /// [`SubscriptionMachine::finish`] settles by; asked beforehand, it tells what a delivery
    /// ended as (for its record). Anything else is returned as it is.
    #[inline]
    pub fn resolve(&self, completion: Completion, attempt: u32, id: &Id) -> Completion {
        match completion {
            Completion::Returned(
                outcome @ (HandlerOutcome::Backoff | HandlerOutcome::BackoffLater),
            ) => Completion::Returned(self.settler.rules().resolve(
                outcome,
                attempt,
                (self.seed_of)(id),
            )),
            other => other,
        }
    }

    /// The copy `completion` calls for, where the registration declared its topic.
    fn republish(&self, completion: Completion, attempt: u32) -> Option<Republish> {
        let dead_letter = self.config.dead_letter_topic;
        match completion {
            Completion::Returned(HandlerOutcome::DeadLetter(reason)) if dead_letter => {
                Some(Republish::DeadLetter { reason })
            }
            Completion::OutOfAttempts if dead_letter => Some(Republish::DeadLetter {
                reason: OUT_OF_ATTEMPTS,
            }),
            Completion::Undecodable if dead_letter => Some(Republish::DeadLetter {
                reason: UNDECODABLE,
            }),
            Completion::Returned(HandlerOutcome::RetryLater(delay)) if self.config.retry_topic => {
                Some(Republish::RetryTopic {
                    delay,
                    count: attempt.saturating_add(1),
                })
            }
            _ => None,
        }
    }

    /// When the ack timeout brings back a message left unsettled at `at`, if there is one.
    fn ack_timeout_from(&self, at: Instant) -> Option<Instant> {
        self.settler
            .rules()
            .ack_timeout()
            .map(|timeout| at.saturating_add(timeout))
    }

    /// With ordered retries, `key` stays with message `id` until it comes back (due at `due`,
    /// plus the grace).
    fn await_return(&mut self, key: &str, id: Id, due: Instant) {
        let until = due.saturating_add(RETRY_RETURN_GRACE);
        let releases = &mut self.releases;
        self.keys
            .await_return(key, id, until, |held| releases.push(held.clone()));
    }

    /// The delivery of `key` that ran is done with it: the next one held behind it becomes
    /// startable (where the subscription keeps per-key order).
    #[inline]
    fn let_key_go(&mut self, key: Option<&str>) {
        if !self.config.key_ordered {
            return;
        }
        if let Some(next) = self.keys.finish(key) {
            self.running += 1;
            self.startable.push_back(next);
        }
    }

    /// A publish of delivery `token` was answered at `now`: confirmed (`ok`) or not; one of
    /// its handler's (`origin`), or the copy [`SubscriptionMachine::finish`] ordered. The
    /// delivery is settled once everything it waits for is answered (`publishes.rs`).
    pub fn answered(&mut self, token: Token, origin: Origin, ok: bool, now: Instant) {
        let Some((held, verdict)) = self.publishes.answered(token, origin, ok) else {
            return;
        };
        if self.config.transactional.is_some() {
            return self.answered_in_transaction(token, held, verdict, now);
        }
        let Held { delivered, key } = held;
        let id = delivered.id.clone();
        let batch = delivered.batch;
        let settlement = match verdict {
            Verdict::Ack(_) => Settlement::Ack,
            Verdict::Nack => Settlement::Nack,
            Verdict::Leave => Settlement::Leave,
        };
        self.settler.apply(delivered, settlement);
        if let Some(key) = key.as_deref() {
            // With ordered retries the key stayed with it: it keeps it until it comes back.
            let due = match verdict {
                Verdict::Ack(_) => None,
                Verdict::Nack => Some(now),
                Verdict::Leave => self.ack_timeout_from(now),
            };
            if let Some(due) = due {
                self.await_return(key, id.clone(), due);
            }
        }
        if let (Some(place), Verdict::Leave) = (batch, verdict) {
            self.entries.put_back(place.in_entry((self.entry_of)(&id)));
        }
        self.releases.push(id);
        self.let_key_go(key.as_deref());
    }

    /// A delivery to start now: its key was let go by the one before it (it counts as running
    /// from now). `true` with it says it was parked: it counts as in flight again from now
    /// (acquire it). Call until `None` after [`SubscriptionMachine::finish`] and
    /// [`SubscriptionMachine::answered`].
    #[inline]
    pub fn poll_start(&mut self) -> Option<(D, bool)> {
        self.startable.pop_front()
    }

    /// The next consumer call to make at `now`, if any: acknowledgements of late copies and of
    /// finished entries first, then the completion table's calls in completion order, then the
    /// waits that ended, earliest first. A message of a batched entry is acknowledged only with
    /// the last of its entry (until then, at index level where configured); a retry of a
    /// message whose entry is on its way back already makes no call.
    #[inline]
    pub fn poll_call(&mut self, now: Instant) -> Option<Call<Id>> {
        if self.transactions.closes_by(now) {
            self.close_transactions();
        }
        loop {
            if let Some(call) = self.calls.pop_front() {
                return Some(call);
            }
            match self.settler.poll_call(now)? {
                Call::Ack(Delivered { id, batch: None }) => return Some(Call::Ack(id)),
                Call::Ack(Delivered {
                    id,
                    batch: Some(place),
                }) => {
                    let slot = place.in_entry((self.entry_of)(&id));
                    match self.entries.settle(slot, id.clone()) {
                        Some(entry) => self.calls.extend(entry.into_iter().map(Call::Ack)),
                        None if self.config.batch_index_acks => {
                            let ack_set = self.entries.unsettled(slot);
                            return Some(Call::AckIndex { id, slot, ack_set });
                        }
                        None => {}
                    }
                }
                Call::Nack(Delivered { id, batch }) => {
                    let entry_pending = batch.is_some_and(|place| {
                        !self.entries.retry(place.in_entry((self.entry_of)(&id)))
                    });
                    if !entry_pending {
                        return Some(Call::Nack(id));
                    }
                }
                // The settler acknowledges whole messages only; a batch-index acknowledgement
                // is made above, from the entry ledger. Passed on as it is all the same.
                Call::AckIndex {
                    id: Delivered { id, .. },
                    slot,
                    ack_set,
                } => return Some(Call::AckIndex { id, slot, ack_set }),
                // Made by the machine itself, never by the settler; passed on all the same.
                Call::Commit { token, acks } => {
                    let acks = acks.into_iter().map(|(d, batch)| (d.id, batch)).collect();
                    return Some(Call::Commit { token, acks });
                }
                Call::Abort(token) => return Some(Call::Abort(token)),
            }
        }
    }

    /// When the earliest `retry_after` wait ends, if one waits. Calls not yet taken by
    /// [`SubscriptionMachine::poll_call`] do not count: poll until it answers `None` first.
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

    /// Whether keys wait for retried messages (with ordered retries): then
    /// [`SubscriptionMachine::poll_expired`] may have deliveries to start when the timer
    /// fires.
    #[inline]
    pub fn awaits_retries(&self) -> bool {
        self.keys.awaiting() > 0
    }

    /// With ordered retries, a delivery to start at `now` because the retried message its key
    /// waited for did not come back in time (see [`RETRY_RETURN_GRACE`]): it counts as running
    /// from now, and, parked, counts as in flight again (`true`: acquire it). Call until
    /// `None` when the timer fires.
    pub fn poll_expired(&mut self, now: Instant) -> Option<(D, bool)> {
        if self.keys.awaiting() == 0 {
            return None;
        }
        let next = self.keys.poll_expired(now);
        if next.is_some() {
            self.running += 1;
        }
        next
    }

    /// A delivery that no longer counts as in flight: every call due for it was made (poll
    /// [`SubscriptionMachine::poll_call`] and arm the timer of
    /// [`SubscriptionMachine::poll_timeout`] first). Each delivery that arrived is released
    /// exactly once: when it was let go, or when its handler ended.
    #[inline]
    pub fn poll_release(&mut self) -> Option<Id> {
        self.releases.pop()
    }

    /// Whether deliveries are gathered into batches (the registration's handler takes a
    /// slice): each delivery [`SubscriptionMachine::start`] lets run (and each of
    /// [`SubscriptionMachine::poll_start`] and [`SubscriptionMachine::poll_expired`]) is then
    /// [`SubscriptionMachine::gather`]ed, and handed over by [`SubscriptionMachine::poll_batch`].
    #[inline]
    pub fn gathers(&self) -> bool {
        self.gathering.is_some()
    }

    /// Gather `delivery`, whose payload is `bytes` long, at `now`, for the next batch.
    ///
    /// # Panics
    ///
    /// Where the subscription does not gather ([`SubscriptionMachine::gathers`]).
    #[inline(always)]
    pub fn gather(&mut self, delivery: D, bytes: usize, now: Instant) {
        self.gathering
            .as_mut()
            .expect("gather only where the machine gathers batches")
            .push(delivery, bytes, now);
    }

    /// The next batch to hand to the handler at `now`, if one is due: fewer batches run than
    /// the concurrency allows, and the gathered deliveries reach the policy's max messages or
    /// bytes, or the first of them waited the max wait, or the subscription stops. Call until
    /// `None` after every event; the batch runs until [`SubscriptionMachine::batch_done`],
    /// and each of its deliveries is [`SubscriptionMachine::finish`]ed on its own. A delivery
    /// that was parked ([`SubscriptionMachine::park_gathered`]) is to be acquired again.
    #[inline]
    pub fn poll_batch(&mut self, now: Instant) -> Option<Vec<Gathered<D>>> {
        let concurrency = self.config.concurrency;
        self.gathering.as_mut()?.poll(now, concurrency)
    }

    /// Before the driver waits: every gathered delivery that waits for time is parked,
    /// `release` called with each (it waits for its batch's max wait, not for a handler, so
    /// it does not count as in flight), to be acquired again when its batch is handed over;
    /// and so is every delivery held behind a key, which waits for those (its id is among the
    /// releases, [`SubscriptionMachine::poll_release`], and it is acquired again when it
    /// starts).
    pub fn park_gathered(&mut self, release: impl FnMut(&D)) {
        let Some(gathering) = &mut self.gathering else {
            return;
        };
        gathering.park(release);
        if self.keys.held() > 0 {
            let releases = &mut self.releases;
            self.keys.park_all(|held| releases.push(held.clone()));
        }
    }

    /// A batch [`SubscriptionMachine::poll_batch`] handed over is done: another may run.
    /// `storage` is the batch's list, emptied: the next batch is gathered in it (a batch's
    /// list is large; allocating one per batch would cost more than batching saves).
    pub fn batch_done(&mut self, storage: Vec<Gathered<D>>) {
        if let Some(gathering) = &mut self.gathering {
            gathering.done(storage);
        }
    }

    /// Whether a batch is due whatever the time (a full one, or any while draining): the
    /// driver asks after every event, and calls [`SubscriptionMachine::poll_batch`] only
    /// then, or when time may have made one due.
    #[inline]
    pub fn batch_full(&self) -> bool {
        let concurrency = self.config.concurrency;
        self.gathering
            .as_ref()
            .is_some_and(|g| g.due_now(concurrency))
    }

    /// Batches running, and deliveries gathered for the next (both 0 where the subscription
    /// does not gather).
    pub fn batches(&self) -> (usize, usize) {
        self.gathering
            .as_ref()
            .map_or((0, 0), |g| (g.running(), g.gathered()))
    }

    /// The service is stopping: what is gathered is handed over in partial batches, without
    /// waiting ([`SubscriptionMachine::poll_batch`]).
    pub fn drain_batches(&mut self) {
        if let Some(gathering) = &mut self.gathering {
            gathering.drain();
        }
    }

    /// Handlers running now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Deliveries in a `retry_after` wait.
    pub fn waiting(&self) -> usize {
        self.settler.waiting()
    }

    /// Deliveries whose settlement waits for their publishes' answers.
    pub fn awaiting_publishes(&self) -> usize {
        self.publishes.held()
    }

    /// Transactions not ended yet: taking deliveries, waiting for them, or whose commit was
    /// asked for ([`Call::Commit`]) and not answered ([`SubscriptionMachine::committed`]).
    pub fn committing(&self) -> usize {
        self.transactions.len()
    }

    /// The service is stopping: stop waiting for publishes' answers. The deliveries that
    /// waited make no call and are released (they stay unacknowledged and come back); how
    /// many.
    pub fn abandon_publishes(&mut self) -> usize {
        let mut count = 0;
        for held in self.publishes.abandon() {
            self.releases.push(held.delivered.id);
            count += 1;
        }
        count
    }

    /// The service is stopping: the deliveries held for their key never start. They are
    /// returned for the driver to let go of (they stay unacknowledged and come back); `true`
    /// with one says it was parked, and so released already.
    pub fn drain_held(&mut self) -> impl Iterator<Item = (D, bool)> + '_ {
        self.keys.drain()
    }

    /// The service is stopping: every `retry_after` wait is cut short and makes no call; how
    /// many were. Their messages stay unacknowledged and come back.
    pub fn abandon_waits(&mut self) -> usize {
        self.settler.abandon_waits().count()
    }
}
