//! The subscription machine: everything one subscription decides, as one sans-IO state machine.
//!
//! A subscription's driver owns a consumer and runs handlers; every decision in between is
//! made here, without I/O, without a clock and without an executor:
//!
//! | decision | where |
//! |---|---|
//! | whether another delivery may be taken (concurrency, receiver queue) | [`SubscriptionMachine::wants_delivery`] |
//! | whether a delivery is handled, dead-lettered, or let go (a batch sibling in hand or settled, a late copy) | [`SubscriptionMachine::arrive`] |
//! | per-key order: a delivery waits while one of its key runs (and, with ordered retries, while one of its key waits for a retry) | [`SubscriptionMachine::start`], [`key_order`] |
//! | what an outcome becomes (the completion table) and `retry_after` waits | [`SubscriptionMachine::finish`], [`crate::completion`] |
//! | a batched entry's acknowledgement held until all of it is settled | [`entries`] |
//! | which consumer calls to make, in which order | [`SubscriptionMachine::poll_call`] |
//! | when the next wait ends | [`SubscriptionMachine::poll_timeout`] |
//! | when a delivery stops counting as in flight | [`SubscriptionMachine::poll_release`] |
//!
//! The driver is the loop around it: it feeds deliveries ([`SubscriptionMachine::arrive`],
//! [`SubscriptionMachine::start`]) and ended handlers ([`SubscriptionMachine::finish`]), then
//! makes the calls [`SubscriptionMachine::poll_call`] yields at `now`, arms one timer for
//! [`SubscriptionMachine::poll_timeout`], and only then lets go of the deliveries
//! [`SubscriptionMachine::poll_release`] names, so that "nothing in flight" implies every call
//! was made and every deadline has its timer.

mod call;
pub mod entries;
pub mod key_order;
#[cfg(test)]
mod tests;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

pub use call::Call;
pub use entries::{BatchPlace, BatchSlot, EntryPosition};
pub use key_order::KeyOrder;

use crate::completion::{Action, Completion, Settlement, SettlementError, Settler};
use crate::{Instant, SubscriptionRules, SubscriptionType};
use entries::{Arrival as EntryArrival, EntryLedger};

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

impl MachineConfig {
    /// One handler at a time, no per-key order, no dead-letter topic, no index acks.
    pub fn new(concurrency: usize) -> Self {
        MachineConfig {
            concurrency: concurrency.max(1),
            key_ordered: false,
            max_attempts: None,
            batch_index_acks: false,
            ordered_retries: false,
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
    /// It is out of attempts: publish it to the dead-letter topic instead
    /// ([`SubscriptionMachine::start`] it all the same; its end is
    /// [`Completion::DeadLettered`], or no outcome if publishing failed).
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

/// One subscription's state: the completion table with its waits, the batch ledger, per-key
/// order, admission and release (see the [module documentation](self)).
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
    /// Where a message id's entry is, as the transport knows it.
    entry_of: fn(&Id) -> EntryPosition,
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
            entry_of,
        }
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
    #[inline]
    pub fn wants_delivery(&self) -> bool {
        let held = self.keys.held();
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

    /// A started delivery ended at `at` with `completion`: settle it by the completion table.
    /// Returns the decision (for logs and counters; on error the delivery is left unsettled).
    /// The calls it implies come from [`SubscriptionMachine::poll_call`], at once or when
    /// their wait ends; the delivery is released after them. Where the subscription keeps
    /// per-key order, [`SubscriptionMachine::next_of_key`] then gives the delivery of the same
    /// key to run next, if one waits.
    ///
    /// With ordered retries, a delivery of `key` that ends in a retry (or in no outcome, on a
    /// subscription with an ack timeout) keeps the key until it comes back.
    #[inline]
    pub fn finish(
        &mut self,
        delivered: Delivered<Id>,
        completion: Completion,
        at: Instant,
        key: Option<&str>,
    ) -> Result<Settlement, SettlementError> {
        self.running = self.running.saturating_sub(1);
        let id = delivered.id.clone();
        let batch = delivered.batch;
        let settlement = self.settler.complete(delivered, completion, at);
        if let (true, true, Some(key)) = (self.config.ordered_retries, self.config.key_ordered, key)
        {
            let due = match &settlement {
                Ok(Settlement::Nack) => Some(at),
                Ok(Settlement::NackAt(deadline)) => Some(*deadline),
                Ok(Settlement::Leave) | Err(_) => self
                    .settler
                    .rules()
                    .ack_timeout()
                    .map(|timeout| at.saturating_add(timeout)),
                _ => None,
            };
            if let Some(due) = due {
                let until = due.saturating_add(RETRY_RETURN_GRACE);
                let releases = &mut self.releases;
                self.keys
                    .await_return(key, id.clone(), until, |held| releases.push(held.clone()));
            }
        }
        // Let go of without a call: its batched entry's redelivery may hand it over again. (A
        // `NackAt` is still in hand: a sibling's redelivery must not hand it over.)
        if let (Some(place), Ok(Settlement::Leave) | Err(_)) = (batch, &settlement) {
            self.entries.put_back(place.in_entry((self.entry_of)(&id)));
        }
        self.releases.push(id);
        settlement
    }

    /// The delivery of `key` to run next, now that the one before it finished (where the
    /// subscription keeps per-key order): it counts as running from now. `true` with it says
    /// it was parked: it counts as in flight again from now (acquire it).
    #[inline]
    pub fn next_of_key(&mut self, key: Option<&str>) -> Option<(D, bool)> {
        if !self.config.key_ordered {
            return None;
        }
        let next = self.keys.finish(key);
        if next.is_some() {
            self.running += 1;
        }
        next
    }

    /// The next consumer call to make at `now`, if any: acknowledgements of late copies and of
    /// finished entries first, then the completion table's calls in completion order, then the
    /// waits that ended, earliest first. A message of a batched entry is acknowledged only with
    /// the last of its entry (until then, at index level where configured); a retry of a
    /// message whose entry is on its way back already makes no call.
    #[inline]
    pub fn poll_call(&mut self, now: Instant) -> Option<Call<Id>> {
        loop {
            if let Some(call) = self.calls.pop_front() {
                return Some(call);
            }
            match self.settler.poll_action(now)? {
                Action::Ack(Delivered { id, batch: None }) => return Some(Call::Ack(id)),
                Action::Ack(Delivered {
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
                Action::Nack(Delivered { id, batch }) => {
                    let entry_pending = batch.is_some_and(|place| {
                        !self.entries.retry(place.in_entry((self.entry_of)(&id)))
                    });
                    if !entry_pending {
                        return Some(Call::Nack(id));
                    }
                }
            }
        }
    }

    /// When the earliest `retry_after` wait ends, if one waits. Calls not yet taken by
    /// [`SubscriptionMachine::poll_call`] do not count: poll until it answers `None` first.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let waits = self.settler.next_deadline();
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

    /// Handlers running now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Deliveries in a `retry_after` wait.
    pub fn waiting(&self) -> usize {
        self.settler.waiting()
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
