//! The completion table's waits: settlements become consumer calls, the delayed ones at their
//! deadline.

use alloc::collections::{BinaryHeap, VecDeque};
use core::cmp::Ordering;

use super::Call;
#[cfg(test)]
use crate::completion::{Completion, SettlementError};
use crate::completion::{Settlement, SubscriptionRules};
use crate::Instant;

/// Turns settlements into consumer calls ([`Call::Ack`] and [`Call::Nack`]; never
/// [`Call::AckIndex`], which the subscription machine makes itself), holding delayed negative
/// acknowledgements until their deadline.
///
/// The subscription machine feeds it every settlement with [`Settler::apply`], then drains
/// [`Settler::poll_call`]; it arms its timer for [`Settler::next_deadline`] when nothing is
/// ready. It never reads a clock and never performs I/O, so it runs unchanged under a test's
/// virtual clock.
///
/// Waits are kept in a binary heap ordered by deadline (ties in completion order), so a
/// completion costs `O(log n)` in the number of waiting deliveries and the driver needs one
/// timer for all of them. Its buffers grow to the largest backlog seen and are then reused:
/// in steady state, settling a delivery does not allocate.
#[derive(Debug)]
pub(crate) struct Settler<Id> {
    rules: SubscriptionRules,
    /// The immediate calls, each as its delivery and whether it is acknowledged (else
    /// negatively): smaller than a [`Call`], which has room for a batch-index acknowledgement
    /// the settler never makes.
    ready: VecDeque<(Id, bool)>,
    waits: BinaryHeap<Wait<Id>>,
    next_seq: u64,
}

impl<Id> Settler<Id> {
    /// A machine for one subscription.
    pub(crate) fn new(rules: SubscriptionRules) -> Self {
        Settler {
            rules,
            ready: VecDeque::new(),
            waits: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// The rules it settles by.
    pub(crate) fn rules(&self) -> &SubscriptionRules {
        &self.rules
    }

    /// Record how the handling of delivery `id` ended, at `now`.
    ///
    /// Returns the decision; the calls it implies are then available from
    /// [`Settler::poll_call`], immediately or once their deadline is reached. On error the
    /// delivery is left unsettled and nothing is queued for it. (The subscription machine
    /// decides itself and calls [`Settler::apply`]; the completion table's tests use this.)
    #[cfg(test)]
    pub(crate) fn complete(
        &mut self,
        id: Id,
        completion: Completion,
        now: Instant,
    ) -> Result<Settlement, SettlementError> {
        let settlement = self.rules.settle(completion, now)?;
        self.apply(id, settlement);
        Ok(settlement)
    }

    /// Queue the calls of `settlement`, decided already, for delivery `id`: an
    /// acknowledgement or a negative one now, one at a deadline, or none
    /// ([`Settlement::Leave`]; a [`Settlement::Republish`] settles later, once its copy is
    /// answered, and queues none now either).
    #[inline(always)]
    pub(crate) fn apply(&mut self, id: Id, settlement: Settlement) {
        match settlement {
            Settlement::Ack => self.ready.push_back((id, true)),
            Settlement::Nack => self.ready.push_back((id, false)),
            Settlement::NackAt(deadline) => {
                let seq = self.next_seq;
                self.next_seq = self.next_seq.wrapping_add(1);
                self.waits.push(Wait { deadline, seq, id });
            }
            Settlement::Leave | Settlement::Republish(_) => {}
        }
    }

    /// The next call to make at `now`, if any: first the immediate ones in completion order,
    /// then the delayed ones whose deadline is not after `now`, earliest first.
    #[inline]
    pub(crate) fn poll_call(&mut self, now: Instant) -> Option<Call<Id>> {
        if let Some((id, ack)) = self.ready.pop_front() {
            return Some(match ack {
                true => Call::Ack(id),
                false => Call::Nack(id),
            });
        }
        if self.waits.peek().is_some_and(|w| w.deadline <= now) {
            return self.waits.pop().map(|w| Call::Nack(w.id));
        }
        None
    }

    /// When the earliest waiting delivery is due, or `None` if nothing waits. Immediate calls
    /// not yet taken by [`Settler::poll_call`] do not count: poll until it answers `None`
    /// first.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.waits.peek().map(|w| w.deadline)
    }

    /// How many deliveries are in a `retry_after` wait.
    pub(crate) fn waiting(&self) -> usize {
        self.waits.len()
    }

    /// The service is stopping: every `retry_after` wait is cut short and yields no call.
    ///
    /// Returns the deliveries whose wait was abandoned, so the driver can log them; they stay
    /// unacknowledged and the broker brings them back (after the ack timeout, or when the
    /// consumer disconnects). Immediate calls already queued are kept: a stopping driver still
    /// flushes them.
    pub(crate) fn abandon_waits(&mut self) -> impl Iterator<Item = Id> + '_ {
        self.waits.drain().map(|w| w.id)
    }
}

impl<Id> Settler<super::Delivered<Id>> {
    /// The next immediate call, where it acknowledges a whole message (not one of a batched
    /// entry, whose acknowledgement the entry ledger holds): the common one, taken first.
    #[inline(always)]
    pub(crate) fn pop_ack_of_whole(&mut self) -> Option<Id> {
        match self.ready.front() {
            Some((delivered, true)) if delivered.batch.is_none() => {
                self.ready.pop_front().map(|(delivered, _)| delivered.id)
            }
            _ => None,
        }
    }
}

/// A delivery waiting for its delayed negative acknowledgement.
#[derive(Debug)]
struct Wait<Id> {
    deadline: Instant,
    seq: u64,
    id: Id,
}

impl<Id> PartialEq for Wait<Id> {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline && self.seq == other.seq
    }
}

impl<Id> Eq for Wait<Id> {}

impl<Id> PartialOrd for Wait<Id> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<Id> Ord for Wait<Id> {
    /// Reversed, so that `BinaryHeap`, a max-heap, yields the earliest deadline first and, on
    /// equal deadlines, the earliest completion.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .deadline
            .cmp(&self.deadline)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}
