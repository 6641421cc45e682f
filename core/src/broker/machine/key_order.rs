//! Which deliveries may run now: the per-key ordering rule of a subscription.
//!
//! Handlers of one subscription run concurrently. On a KeyShared subscription, though, two
//! deliveries with the same key must not overlap: the second starts only when the first is
//! settled, so per-key order holds end to end. [`KeyOrder`] is that rule as a pure state
//! machine; the subscription machine asks it whether a delivery may start and tells it when one
//! finished. Deliveries without a key start at once.
//!
//! With ordered retries, a delivery that ends in a retry keeps its key: the key's later
//! deliveries stay held until the retried message comes back (the same id) and runs, so they
//! are handed over in the order they were published. If it has not come back by a deadline
//! (it went to another consumer, say), the key is let go and the held ones run. Deliveries
//! held behind a key that waits are *parked*: they wait for time, or for another delivery,
//! not for a handler of this service, so they stop counting as in flight until they start.

use alloc::collections::{BTreeMap, VecDeque};

use crate::Instant;

/// A delivery held behind its key: its id, the delivery, and whether it is parked (held while
/// the key waits for a retried message, and so no longer counted as in flight).
type Held<I, D> = (I, D, bool);

/// One busy key: the deliveries held behind it, in arrival order, and the retried message it
/// waits for, if it waits for one.
#[derive(Debug)]
struct Busy<I, D> {
    waiting: VecDeque<Held<I, D>>,
    /// The id of the retried message that owns the key, and when to stop waiting for it.
    awaiting: Option<(I, Instant)>,
}

impl<I, D> Busy<I, D> {
    fn new() -> Self {
        Busy {
            waiting: VecDeque::new(),
            awaiting: None,
        }
    }
}

/// Holds back deliveries whose key is busy.
#[derive(Debug)]
pub(crate) struct KeyOrder<K, I, D> {
    /// Keys with a running delivery (or one that awaits a retried message), and the
    /// deliveries waiting behind it in arrival order.
    busy: BTreeMap<K, Busy<I, D>>,
    held: usize,
    /// Keys that wait for a retried message.
    awaiting: usize,
}

impl<K: Ord + Clone, I, D> Default for KeyOrder<K, I, D> {
    fn default() -> Self {
        KeyOrder {
            busy: BTreeMap::new(),
            held: 0,
            awaiting: 0,
        }
    }
}

impl<K: Ord + Clone, I: PartialEq, D> KeyOrder<K, I, D> {
    /// No key busy.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether a delivery with `key` and `id` may start now: the key is marked busy and
    /// `true`; or the key waits for this very message (a retry come back), which takes it
    /// over and `true`; or the key is busy and `false` (then [`KeyOrder::hold`] it). The
    /// delivery itself is not moved.
    pub(crate) fn try_start<Q>(&mut self, key: &Q, id: &I) -> bool
    where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized + alloc::borrow::ToOwned<Owned = K>,
    {
        match self.busy.get_mut(key) {
            None => {
                self.busy.insert(key.to_owned(), Busy::new());
                true
            }
            Some(busy) => match &busy.awaiting {
                Some((awaited, _)) if awaited == id => {
                    busy.awaiting = None;
                    self.awaiting -= 1;
                    true
                }
                _ => false,
            },
        }
    }

    /// Hold `delivery` behind the running (or awaited) one of its busy `key`
    /// ([`KeyOrder::try_start`] said no), until that one finishes: `Ok(parked)`, parked if the
    /// key waits for a retried message. A delivery whose id is held already (a copy the
    /// broker sent again, as a Failover rewind does) is not held twice: it is returned, to be
    /// let go.
    pub(crate) fn hold<Q>(&mut self, key: &Q, id: I, delivery: D) -> Result<bool, D>
    where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let Some(busy) = self.busy.get_mut(key) else {
            return Err(delivery);
        };
        if busy.waiting.iter().any(|(held, _, _)| *held == id) {
            return Err(delivery);
        }
        let parked = busy.awaiting.is_some();
        busy.waiting.push_back((id, delivery, parked));
        self.held += 1;
        Ok(parked)
    }

    /// The running delivery of `key` finished. Returns the next delivery of that key, which
    /// may start now, if one was held, and whether it was parked.
    pub(crate) fn finish<Q>(&mut self, key: Option<&Q>) -> Option<(D, bool)>
    where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let key = key?;
        let busy = self.busy.get_mut(key)?;
        if busy.awaiting.is_some() {
            return None;
        }
        match busy.waiting.pop_front() {
            Some((_, next, parked)) => {
                self.held -= 1;
                Some((next, parked))
            }
            None => {
                self.busy.remove(key);
                None
            }
        }
    }

    /// The running delivery of `key` (message `id`) ended in a retry: the key stays busy,
    /// its held deliveries stay held, until `id` comes back ([`KeyOrder::try_start`]) or
    /// `until` passes ([`KeyOrder::poll_expired`]). The held deliveries not parked yet are
    /// parked now: `parked` is called with each one's id.
    pub(crate) fn await_return<Q>(
        &mut self,
        key: &Q,
        id: I,
        until: Instant,
        mut parked: impl FnMut(&I),
    ) where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if let Some(busy) = self.busy.get_mut(key) {
            if busy.awaiting.replace((id, until)).is_none() {
                self.awaiting += 1;
            }
            for (held, _, is_parked) in busy.waiting.iter_mut().filter(|h| !h.2) {
                *is_parked = true;
                parked(held);
            }
        }
    }

    /// Park every held delivery not parked yet (`parked` is called with each one's id): what
    /// it waits behind waits for time (a batch being gathered), not for a handler.
    pub(crate) fn park_all(&mut self, mut parked: impl FnMut(&I)) {
        for busy in self.busy.values_mut() {
            for (held, _, is_parked) in busy.waiting.iter_mut().filter(|h| !h.2) {
                *is_parked = true;
                parked(held);
            }
        }
    }

    /// When the earliest wait for a retried message ends, if a key waits for one.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.busy
            .values()
            .filter_map(|busy| busy.awaiting.as_ref().map(|(_, until)| *until))
            .min()
    }

    /// A key whose retried message did not come back by `now` is let go: its next held
    /// delivery is returned (with whether it was parked), to start now (it owns the key), or
    /// the key is freed. Call until `None`.
    pub(crate) fn poll_expired(&mut self, now: Instant) -> Option<(D, bool)> {
        loop {
            let key = self
                .busy
                .iter()
                .find_map(|(key, busy)| match &busy.awaiting {
                    Some((_, until)) if *until <= now => Some(key.clone()),
                    _ => None,
                })?;
            let busy = self.busy.get_mut(&key)?;
            busy.awaiting = None;
            self.awaiting -= 1;
            match busy.waiting.pop_front() {
                Some((_, next, parked)) => {
                    self.held -= 1;
                    return Some((next, parked));
                }
                None => {
                    self.busy.remove(&key);
                }
            }
        }
    }

    /// How many deliveries are held back.
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// How many keys wait for a retried message.
    pub(crate) fn awaiting(&self) -> usize {
        self.awaiting
    }

    /// Give up every held delivery (the service is stopping); they are returned, with whether
    /// each was parked, so the caller can account for them.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (D, bool)> + '_ {
        self.held = 0;
        self.awaiting = 0;
        core::mem::take(&mut self.busy)
            .into_values()
            .flat_map(|busy| busy.waiting.into_iter().map(|(_, d, parked)| (d, parked)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use core::time::Duration;

    fn at(secs: u64) -> Instant {
        Instant::from_elapsed(Duration::from_secs(secs))
    }

    #[test]
    fn same_key_waits_for_the_one_before_and_keeps_arrival_order() {
        let mut k: KeyOrder<alloc::string::String, u32, char> = KeyOrder::new();
        assert!(k.try_start("a", &1));
        assert!(k.try_start("b", &2), "other keys run concurrently");
        assert!(!k.try_start("a", &3));
        assert_eq!(k.hold("a", 3, 'c'), Ok(false));
        assert!(!k.try_start("a", &4));
        assert_eq!(k.hold("a", 4, 'd'), Ok(false));
        assert_eq!(k.held(), 2);
        assert_eq!(k.finish(Some("a")), Some(('c', false)));
        assert_eq!(k.finish(Some("a")), Some(('d', false)));
        assert_eq!(k.finish(Some("a")), None);
        assert!(k.try_start("a", &5), "the key is free again");
        assert_eq!(k.finish(Some("b")), None);
        assert_eq!(k.held(), 0);
    }

    #[test]
    fn a_retried_message_keeps_its_key_until_it_comes_back() {
        let mut k: KeyOrder<alloc::string::String, u32, char> = KeyOrder::new();
        assert!(k.try_start("a", &1));
        assert!(!k.try_start("a", &2));
        assert_eq!(k.hold("a", 2, 'b'), Ok(false), "behind a running one");
        let mut parked = Vec::new();
        k.await_return("a", 1, at(60), |id| parked.push(*id));
        assert_eq!(parked, [2], "parked once the key waits");
        assert_eq!(k.awaiting(), 1);
        assert_eq!(
            k.finish(Some("a")),
            None,
            "nothing released while 1 is away"
        );
        assert!(!k.try_start("a", &3));
        assert_eq!(k.hold("a", 3, 'c'), Ok(true), "parked at once");
        assert!(k.try_start("b", &9), "other keys flow");
        assert!(
            k.try_start("a", &1),
            "the retried message takes its key back"
        );
        assert_eq!(k.awaiting(), 0);
        assert_eq!(
            k.finish(Some("a")),
            Some(('b', true)),
            "then the ones held behind it"
        );
        assert_eq!(k.finish(Some("a")), Some(('c', true)));
        assert_eq!(k.finish(Some("a")), None);
        assert_eq!(k.next_deadline(), None);
    }

    #[test]
    fn a_copy_held_already_is_not_held_twice() {
        let mut k: KeyOrder<alloc::string::String, u32, char> = KeyOrder::new();
        assert!(k.try_start("a", &1));
        assert_eq!(k.hold("a", 2, 'b'), Ok(false));
        assert_eq!(k.hold("a", 2, 'B'), Err('B'), "the second copy is let go");
        assert_eq!(k.held(), 1);
    }

    #[test]
    fn a_retry_that_does_not_come_back_lets_the_key_go_at_its_deadline() {
        let mut k: KeyOrder<alloc::string::String, u32, char> = KeyOrder::new();
        assert!(k.try_start("a", &1));
        k.await_return("a", 1, at(60), |_| {});
        assert_eq!(k.hold("a", 2, 'b'), Ok(true));
        assert_eq!(k.hold("a", 3, 'c'), Ok(true));
        assert_eq!(k.next_deadline(), Some(at(60)));
        assert_eq!(k.poll_expired(at(59)), None);
        assert_eq!(
            k.poll_expired(at(60)),
            Some(('b', true)),
            "the first held one owns the key"
        );
        assert_eq!(k.poll_expired(at(60)), None);
        assert_eq!(k.finish(Some("a")), Some(('c', true)));
        assert_eq!(k.finish(Some("a")), None);
        assert!(k.try_start("a", &1), "free");
    }

    #[test]
    fn drain_returns_every_held_delivery() {
        let mut k: KeyOrder<u8, u32, char> = KeyOrder::new();
        for (key, id, d) in [(1, 1, 'a'), (1, 2, 'b'), (2, 3, 'c'), (2, 4, 'd')] {
            if !k.try_start(&key, &id) {
                assert_eq!(k.hold(&key, id, d), Ok(false));
            }
        }
        k.await_return(&1, 1, at(5), |_| {});
        let mut drained: Vec<(char, bool)> = k.drain().collect();
        drained.sort_unstable();
        assert_eq!(drained, [('b', true), ('d', false)]);
        assert_eq!((k.held(), k.awaiting()), (0, 0));
    }
}
