//! Which deliveries may run now: the per-key ordering rule of a subscription.
//!
//! Handlers of one subscription run concurrently. On a KeyShared subscription, though, two
//! deliveries with the same key must not overlap: the second starts only when the first is
//! settled, so per-key order holds end to end. [`KeyOrder`] is that rule as a pure state
//! machine; the subscription machine asks it whether a delivery may start and tells it when one
//! finished. Deliveries without a key start at once.

use alloc::collections::{BTreeMap, VecDeque};

/// Holds back deliveries whose key is busy.
#[derive(Debug)]
pub struct KeyOrder<K, D> {
    /// Keys with a running delivery, and the deliveries waiting behind it in arrival order.
    busy: BTreeMap<K, VecDeque<D>>,
    held: usize,
}

impl<K: Ord + Clone, D> Default for KeyOrder<K, D> {
    fn default() -> Self {
        KeyOrder {
            busy: BTreeMap::new(),
            held: 0,
        }
    }
}

impl<K: Ord + Clone, D> KeyOrder<K, D> {
    /// No key busy.
    pub fn new() -> Self {
        Self::default()
    }

    /// A delivery arrived with `key`. Returns it back if it may start now; otherwise it is held
    /// until the deliveries of the same key before it have finished.
    pub fn arrive(&mut self, key: Option<K>, delivery: D) -> Option<D> {
        let Some(key) = key else {
            return Some(delivery);
        };
        match self.busy.get_mut(&key) {
            Some(waiting) => {
                waiting.push_back(delivery);
                self.held += 1;
                None
            }
            None => {
                self.busy.insert(key, VecDeque::new());
                Some(delivery)
            }
        }
    }

    /// Whether a delivery with `key` may start now: the key is marked busy and `true`, or the
    /// key is busy and `false` (then [`KeyOrder::hold`] it). The delivery itself is not moved.
    pub fn try_start<Q>(&mut self, key: &Q) -> bool
    where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized + alloc::borrow::ToOwned<Owned = K>,
    {
        if self.busy.contains_key(key) {
            return false;
        }
        self.busy.insert(key.to_owned(), VecDeque::new());
        true
    }

    /// Hold `delivery` behind the running one of its busy `key` ([`KeyOrder::try_start`] said
    /// no), until that one finishes.
    pub fn hold<Q>(&mut self, key: &Q, delivery: D)
    where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        if let Some(waiting) = self.busy.get_mut(key) {
            waiting.push_back(delivery);
            self.held += 1;
        }
    }

    /// The running delivery of `key` finished. Returns the next delivery of that key, which
    /// may start now, if one was held.
    pub fn finish<Q>(&mut self, key: Option<&Q>) -> Option<D>
    where
        K: core::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let key = key?;
        let waiting = self.busy.get_mut(key)?;
        match waiting.pop_front() {
            Some(next) => {
                self.held -= 1;
                Some(next)
            }
            None => {
                self.busy.remove(key);
                None
            }
        }
    }

    /// How many deliveries are held back.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Give up every held delivery (the service is stopping); they are returned so the caller
    /// can account for them.
    pub fn drain(&mut self) -> impl Iterator<Item = D> + '_ {
        self.held = 0;
        core::mem::take(&mut self.busy).into_values().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn deliveries_without_key_start_at_once() {
        let mut k: KeyOrder<&str, u32> = KeyOrder::new();
        assert_eq!(k.arrive(None, 1), Some(1));
        assert_eq!(k.arrive(None, 2), Some(2));
        assert_eq!(k.held(), 0);
    }

    #[test]
    fn same_key_waits_for_the_one_before_and_keeps_arrival_order() {
        let mut k = KeyOrder::new();
        assert_eq!(k.arrive(Some("a"), 1), Some(1));
        assert_eq!(
            k.arrive(Some("b"), 2),
            Some(2),
            "other keys run concurrently"
        );
        assert_eq!(k.arrive(Some("a"), 3), None);
        assert_eq!(k.arrive(Some("a"), 4), None);
        assert_eq!(k.held(), 2);
        assert_eq!(k.finish(Some(&"a")), Some(3));
        assert_eq!(k.finish(Some(&"a")), Some(4));
        assert_eq!(k.finish(Some(&"a")), None);
        assert_eq!(k.arrive(Some("a"), 5), Some(5), "the key is free again");
        assert_eq!(k.finish(Some(&"b")), None);
        assert_eq!(k.held(), 0);
    }

    #[test]
    fn drain_returns_every_held_delivery() {
        let mut k = KeyOrder::new();
        k.arrive(Some(1), 'a');
        k.arrive(Some(1), 'b');
        k.arrive(Some(2), 'c');
        k.arrive(Some(2), 'd');
        let mut drained: Vec<char> = k.drain().collect();
        drained.sort_unstable();
        assert_eq!(drained, ['b', 'd']);
        assert_eq!(k.held(), 0);
    }
}
