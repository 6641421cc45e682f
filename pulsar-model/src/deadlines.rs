//! Keys waiting for a deadline, earliest first: what the broker keeps for delayed deliveries.
//! Every operation is O(log n), so that a clock step over many waiting messages costs what it
//! fires, not what waits. (The client's ack timeouts, whose deadlines come in order, keep a
//! cheaper index of their own: `ack_timeout.rs`.)

use std::collections::{BTreeMap, BTreeSet};

use ruststream::Instant;

/// Keys with one deadline each, ordered by deadline (ties by key).
#[derive(Debug, Clone)]
pub(crate) struct Deadlines<K: Ord + Copy> {
    by_key: BTreeMap<K, Instant>,
    by_time: BTreeSet<(Instant, K)>,
}

impl<K: Ord + Copy> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            by_key: BTreeMap::new(),
            by_time: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Copy> Deadlines<K> {
    /// `key` is due at `at`, replacing any deadline it had.
    pub(crate) fn insert(&mut self, key: K, at: Instant) {
        if let Some(old) = self.by_key.insert(key, at) {
            self.by_time.remove(&(old, key));
        }
        self.by_time.insert((at, key));
    }

    /// `key` is no longer due.
    pub(crate) fn remove(&mut self, key: K) {
        if let Some(at) = self.by_key.remove(&key) {
            self.by_time.remove(&(at, key));
        }
    }

    /// The earliest deadline.
    pub(crate) fn earliest(&self) -> Option<Instant> {
        self.by_time.first().map(|&(at, _)| at)
    }

    /// Take out every key whose deadline passes `due` (`at <= limit` when `inclusive`, else
    /// `at < limit`), earliest first.
    pub(crate) fn take_due(&mut self, limit: Instant, inclusive: bool) -> Vec<K> {
        let mut due = Vec::new();
        while let Some(&(at, key)) = self.by_time.first() {
            if at > limit || (at == limit && !inclusive) {
                break;
            }
            self.by_time.pop_first();
            self.by_key.remove(&key);
            due.push(key);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> Instant {
        Instant::from_elapsed(Duration::from_millis(ms))
    }

    #[test]
    fn keys_come_out_in_deadline_order_and_a_new_deadline_replaces_the_old() {
        let mut d = Deadlines::default();
        d.insert(1, at(30));
        d.insert(2, at(10));
        d.insert(3, at(20));
        d.insert(1, at(5));
        assert_eq!(d.earliest(), Some(at(5)));
        d.insert(4, at(1));
        d.remove(4);
        d.remove(4);
        assert_eq!(d.earliest(), Some(at(5)), "4 is gone");
        assert_eq!(d.take_due(at(20), false), vec![1, 2]);
        assert_eq!(d.take_due(at(20), true), vec![3]);
        assert!(d.by_key.is_empty());
        assert_eq!(d.earliest(), None);
    }
}
