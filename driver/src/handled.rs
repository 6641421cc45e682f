//! How many deliveries the drivers of one broker handed to handlers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::Waker;

/// A running count of deliveries handed to handlers, shared by a broker's drivers, with
/// wakers for whoever waits for the next one.
#[derive(Debug, Default)]
pub struct Handled {
    count: AtomicU64,
    /// Whether `waiters` has any: every delivery bumps the count, and the lock is taken only
    /// when someone waits.
    waited: AtomicBool,
    waiters: Mutex<Vec<Waker>>,
}

impl Handled {
    /// One more delivery was handed to a handler.
    #[inline]
    pub fn bump(&self) {
        self.bump_by(1);
    }

    /// `n` more deliveries went to a handler at once (a batch).
    #[inline]
    pub fn bump_by(&self, n: u64) {
        self.count.fetch_add(n, Ordering::SeqCst);
        // Both sides are SeqCst: a waiter that registers after this load saw `false` reads
        // the new count when it checks again after registering, as callers do.
        if !self.waited.load(Ordering::SeqCst) {
            return;
        }
        let waiters = {
            let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            self.waited.store(false, Ordering::SeqCst);
            std::mem::take(&mut *waiters)
        };
        for w in waiters {
            w.wake();
        }
    }

    /// Deliveries handed to handlers so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Wake `waker` at the next [`Handled::bump`].
    pub fn wake_on_next(&self, waker: &Waker) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if !waiters.iter().any(|w| w.will_wake(waker)) {
            waiters.push(waker.clone());
        }
        self.waited.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waiter_is_woken_once_by_the_next_bump() {
        let handled = Handled::default();
        let woken = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        handled.wake_on_next(&waker);
        handled.wake_on_next(&waker);
        handled.bump();
        handled.bump();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        assert_eq!(handled.count(), 2);
        handled.wake_on_next(&waker);
        handled.bump();
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            2,
            "a waiter after a bump is woken too"
        );
    }
}
