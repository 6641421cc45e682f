//! Gathering a batch handler's deliveries into batches.
//!
//! A delivery that may run (admitted, its key free) waits here until its batch is cut: when
//! the queue holds the policy's max messages or max bytes, when the first of it has waited the
//! max wait, or, partial, when the subscription stops. A batch is one admission: at most the
//! concurrency's number of batches run at once, and the queue is filled meanwhile.

use alloc::vec::Vec;

use super::Plan;
use crate::batch_policy::BatchPolicy;
use crate::Instant;

/// A delivery gathered for a batch: handed over as it is kept, so that a batch is the
/// gathering's own storage and no delivery is copied on the way.
#[derive(Debug)]
pub struct Gathered<D> {
    /// The delivery.
    pub delivery: D,
    /// What it is due.
    pub plan: Plan,
    /// Whether it was parked while it waited (the machine acquires it again as its batch is
    /// handed over).
    pub(crate) parked: bool,
    /// Its payload's size.
    bytes: usize,
    /// When it was gathered.
    at: Instant,
}

/// The deliveries gathered for the next batch, and the batches running.
#[derive(Debug)]
pub(crate) struct Gathering<D> {
    policy: BatchPolicy,
    /// Each delivery with its payload's size, when it was gathered, and whether it was parked
    /// (released while it waits for time: acquired again when its batch is handed over).
    queue: Vec<Gathered<D>>,
    /// An emptied batch list, for the queue to take when it is empty and has no room.
    spare: Vec<Gathered<D>>,
    /// Whether a delivery gathered since the last [`Gathering::park`] is not parked.
    unparked: bool,
    /// The payload bytes in `queue`.
    bytes: usize,
    /// Batches handed over and not done.
    running: usize,
    /// The subscription stops: partial batches go at once.
    draining: bool,
}

impl<D> Gathering<D> {
    pub(crate) fn new(policy: BatchPolicy) -> Self {
        Gathering {
            policy,
            queue: Vec::new(),
            spare: Vec::new(),
            bytes: 0,
            running: 0,
            draining: false,
            unparked: false,
        }
    }

    /// Whether the queue has room for another delivery.
    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        self.queue.len() < self.policy.messages().get() && self.bytes < self.policy.bytes()
    }

    /// How many deliveries a batch holds at most.
    pub(crate) fn max_messages(&self) -> usize {
        self.policy.messages().get()
    }

    /// Add `delivery` (`bytes` of payload, due `plan`), gathered now: a batch's max wait
    /// counts from its first delivery, so the clock (`now`) is read for the first only.
    #[inline(always)]
    pub(crate) fn push(
        &mut self,
        delivery: D,
        plan: Plan,
        bytes: usize,
        now: impl FnOnce() -> Instant,
    ) {
        let at = match self.queue.first() {
            Some(first) => first.at,
            None => now(),
        };
        self.bytes += bytes;
        self.unparked = true;
        if self.queue.capacity() == 0 {
            self.queue = core::mem::take(&mut self.spare);
            self.queue.reserve_exact(self.policy.messages().get());
        }
        self.queue.push(Gathered {
            delivery,
            plan,
            parked: false,
            bytes,
            at,
        });
    }

    /// When a delivery gathered now is gathered: a batch's max wait counts from its first
    /// delivery, so the clock (`now`) is read for the first only.
    #[inline]
    pub(crate) fn gathered_at(&self, now: impl FnOnce() -> Instant) -> Instant {
        match self.queue.first() {
            Some(first) => first.at,
            None => now(),
        }
    }

    /// Whether a batch is due whatever the time: one may run, and the queue is full or the
    /// subscription stops.
    #[inline]
    pub(crate) fn full_now(&self, concurrency: usize) -> bool {
        !self.queue.is_empty() && self.running < concurrency && (!self.has_room() || self.draining)
    }

    /// Whether a delivery of message `id` is gathered already.
    pub(crate) fn holds<Id: PartialEq>(&self, id: &Id) -> bool
    where
        D: super::Envelope<Id = Id>,
    {
        self.queue
            .iter()
            .any(|gathered| gathered.delivery.id() == id)
    }

    /// Whether a batch is due at `now`: one may run, and the queue is full, or its first
    /// delivery waited long enough, or the subscription stops.
    fn due(&self, now: Instant, concurrency: usize) -> bool {
        let Some(first) = self.queue.first() else {
            return false;
        };
        self.running < concurrency
            && (!self.has_room()
                || self.draining
                || now >= first.at.saturating_add(self.policy.wait()))
    }

    /// The next batch, if one is due at `now`: as many deliveries as the policy allows, in
    /// the order they were gathered (at least one, however large), each with whether it was
    /// parked. It counts as running until [`Gathering::done`].
    pub(crate) fn poll(&mut self, now: Instant, concurrency: usize) -> Option<Vec<Gathered<D>>> {
        if !self.due(now, concurrency) {
            return None;
        }
        // The common cut takes the whole queue, which holds no more than a batch: handed
        // over as it is.
        if self.queue.len() <= self.max_messages() && self.bytes <= self.policy.bytes() {
            self.bytes = 0;
            self.running += 1;
            return Some(core::mem::take(&mut self.queue));
        }
        let mut take = 0;
        let mut bytes = 0;
        for gathered in &self.queue {
            let full = take == self.max_messages()
                || (take > 0 && bytes + gathered.bytes > self.policy.bytes());
            if full {
                break;
            }
            take += 1;
            bytes += gathered.bytes;
        }
        let batch = match take == self.queue.len() {
            true => core::mem::take(&mut self.queue),
            false => self.queue.drain(..take).collect(),
        };
        self.bytes -= bytes;
        self.running += 1;
        Some(batch)
    }
    /// A batch handed over is done (every delivery of it finished); `storage` is its list,
    /// emptied, kept for a later batch.
    pub(crate) fn done(&mut self, mut storage: Vec<Gathered<D>>) {
        self.running = self.running.saturating_sub(1);
        storage.clear();
        if self.spare.capacity() == 0 {
            self.spare = storage;
        }
    }

    /// Batches running.
    pub(crate) fn running(&self) -> usize {
        self.running
    }

    /// Deliveries waiting for their batch.
    pub(crate) fn gathered(&self) -> usize {
        self.queue.len()
    }

    /// When the first delivery's wait ends, if one waits and a batch may run then.
    pub(crate) fn deadline(&self, concurrency: usize) -> Option<Instant> {
        match (self.queue.first(), self.running < concurrency) {
            (Some(first), true) => Some(first.at.saturating_add(self.policy.wait())),
            _ => None,
        }
    }

    /// Park every delivery that waits for time and was not parked yet: `release` is called
    /// with each, which is then acquired again when its batch is handed over.
    pub(crate) fn park(&mut self, mut release: impl FnMut(&D)) {
        if !core::mem::take(&mut self.unparked) {
            return;
        }
        for gathered in self.queue.iter_mut().rev() {
            if gathered.parked {
                break;
            }
            release(&gathered.delivery);
            gathered.parked = true;
        }
    }

    /// The subscription stops: what is gathered goes in partial batches, without waiting.
    pub(crate) fn drain(&mut self) {
        self.draining = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    fn policy() -> BatchPolicy {
        BatchPolicy::new(crate::nonzero!(3))
            .max_bytes(100)
            .max_wait(Duration::from_millis(250))
    }

    fn ids<D: Copy>(batch: Option<Vec<Gathered<D>>>) -> Option<Vec<(D, bool)>> {
        batch.map(|b| b.iter().map(|g| (g.delivery, g.parked)).collect())
    }

    #[test]
    fn a_full_batch_goes_at_once_and_a_partial_one_at_exactly_the_max_wait() {
        let mut gathering = Gathering::new(policy());
        for i in 0..4 {
            gathering.push(i, Plan::Handle, 1, || at(10));
        }
        assert_eq!(
            ids(gathering.poll(at(10), 2)),
            Some(alloc::vec![(0, false), (1, false), (2, false)])
        );
        let mut parked = alloc::vec::Vec::new();
        gathering.park(|d| parked.push(*d));
        gathering.park(|d| parked.push(*d));
        assert_eq!(parked, alloc::vec![3]);
        assert_eq!(gathering.deadline(2), Some(at(260)));
        assert_eq!(ids(gathering.poll(at(259), 2)), None);
        assert_eq!(
            ids(gathering.poll(at(260), 2)),
            Some(alloc::vec![(3, true)])
        );
        assert_eq!(gathering.running(), 2);
    }

    #[test]
    fn concurrency_counts_batches_and_bytes_cut_a_batch() {
        let mut gathering = Gathering::new(policy());
        gathering.push('a', Plan::Handle, 60, || at(0));
        gathering.push('b', Plan::Handle, 60, || at(0));
        assert!(!gathering.has_room());
        assert_eq!(
            ids(gathering.poll(at(0), 1)),
            Some(alloc::vec![('a', false)])
        );
        // One batch runs: the next waits for it, full or not.
        assert_eq!(ids(gathering.poll(at(1_000), 1)), None);
        assert_eq!(gathering.deadline(1), None);
        gathering.done(Vec::new());
        assert_eq!(
            ids(gathering.poll(at(1_000), 1)),
            Some(alloc::vec![('b', false)])
        );
    }

    #[test]
    fn a_stopping_subscription_hands_over_a_partial_batch_at_once() {
        let mut gathering = Gathering::new(policy());
        gathering.push(1, Plan::Handle, 1, || at(0));
        assert_eq!(ids(gathering.poll(at(0), 1)), None);
        gathering.drain();
        assert_eq!(ids(gathering.poll(at(0), 1)), Some(alloc::vec![(1, false)]));
    }
}
