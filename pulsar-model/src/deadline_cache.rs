//! The cluster's next deadline, remembered between changes.

use std::sync::atomic::{AtomicU64, Ordering};

use ruststream::Instant;

/// [`Cluster::next_deadline`](crate::Cluster::next_deadline)'s last answer, until something
/// that can move a deadline happens ([`DeadlineCache::forget`], which takes `&mut`).
///
/// Every call on the cluster asks for the next deadline, and computing it visits every
/// consumer and subscription. One relaxed atomic word rather than a `OnceLock`, whose
/// initialisation protocol would be paid on every message of the consume→ack path, while
/// the cluster stays `Sync`: readers that race compute the same
/// answer from the same state.
#[derive(Debug)]
pub(crate) struct DeadlineCache(AtomicU64);

/// Not computed since the last change.
const UNKNOWN: u64 = u64::MAX;
/// Computed: nothing waits.
const NOTHING: u64 = u64::MAX - 1;

impl Default for DeadlineCache {
    fn default() -> Self {
        DeadlineCache(AtomicU64::new(UNKNOWN))
    }
}

impl DeadlineCache {
    /// The remembered answer, or `compute`'s, remembered. An instant too far to encode (585
    /// years from the clock's start) is answered but not remembered.
    pub(crate) fn get_or(&self, compute: impl FnOnce() -> Option<Instant>) -> Option<Instant> {
        match self.0.load(Ordering::Relaxed) {
            UNKNOWN => {
                let next = compute();
                let word = next.map_or(NOTHING, Instant::as_nanos);
                if word < NOTHING || next.is_none() {
                    self.0.store(word, Ordering::Relaxed);
                }
                next
            }
            NOTHING => None,
            nanos => Some(Instant::from_nanos(nanos)),
        }
    }

    /// Something that can move a deadline happened.
    pub(crate) fn forget(&mut self) {
        *self.0.get_mut() = UNKNOWN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_until_forgotten() {
        let mut cache = DeadlineCache::default();
        let at = Instant::from_nanos(7);
        assert_eq!(cache.get_or(|| Some(at)), Some(at));
        assert_eq!(cache.get_or(|| unreachable!("remembered")), Some(at));
        cache.forget();
        assert_eq!(cache.get_or(|| None), None);
        assert_eq!(cache.get_or(|| unreachable!("remembered")), None);
    }

    #[test]
    fn an_instant_that_cannot_be_encoded_is_computed_each_time() {
        let cache = DeadlineCache::default();
        let far = Instant::from_nanos(u64::MAX);
        assert_eq!(cache.get_or(|| Some(far)), Some(far));
        assert_eq!(cache.get_or(|| None), None, "computed again");
    }
}
