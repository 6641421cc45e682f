//! A virtual clock that moves only when told.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;

use spin::Mutex;

use super::{Sleep, SleepFuture, Timer};
use crate::Instant;

/// A [`Timer`] whose time stands still until [`ManualClock::advance`] moves it.
///
/// It starts at [`Instant::ZERO`]. Advancing walks through the pending sleeps in deadline order
/// (ties in creation order): for each deadline it sets the time to exactly that deadline and
/// wakes the sleeps due then, so a task woken by a sleep sees `now()` equal to its deadline if
/// it runs before the next step. A test harness that must let woken tasks run between steps
/// uses [`ManualClock::advance_to_next_deadline`] and runs its executor between calls.
///
/// A sleep that fired counts as *unobserved* ([`ManualClock::unobserved`]) until its future is
/// dropped. A harness that waits for quiet before it moves time again uses this to know that a
/// woken task has not finished reacting yet; code that wants to be counted as busy while it
/// reacts keeps the fired sleep alive until it has done so.
///
/// Clones share one time.
#[derive(Clone, Default)]
pub struct ManualClock {
    shared: Arc<Mutex<ClockState>>,
}

#[derive(Default)]
struct ClockState {
    now: Instant,
    next_id: u64,
    /// Pending sleeps by (deadline, creation number); the waker of the task that last polled.
    sleeps: BTreeMap<(Instant, u64), Option<Waker>>,
    /// Sleeps that fired and whose future still exists, by creation number.
    fired: BTreeSet<u64>,
}

impl ManualClock {
    /// A clock at [`Instant::ZERO`] with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Move time forward by `by`, firing every sleep due on the way, in deadline order.
    pub fn advance(&self, by: Duration) {
        let target = self.now().saturating_add(by);
        self.advance_to(target);
    }

    /// Move time forward to `target` (never backwards), firing every sleep due on the way, in
    /// deadline order.
    pub fn advance_to(&self, target: Instant) {
        while self.fire_next(target).is_some() {}
        let mut state = self.shared.lock();
        if target > state.now {
            state.now = target;
        }
    }

    /// Move time to the earliest pending deadline and wake the sleeps due then. Returns that
    /// deadline, or `None` (time unchanged) if no sleep is pending.
    pub fn advance_to_next_deadline(&self) -> Option<Instant> {
        self.fire_next(Instant::MAX)
    }

    /// The earliest pending deadline, if any sleep is pending.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.shared.lock().sleeps.keys().next().map(|&(at, _)| at)
    }

    /// How many sleeps are pending: created, not yet fired and not dropped.
    pub fn pending(&self) -> usize {
        self.shared.lock().sleeps.len()
    }

    /// How many sleeps have fired but still exist: their tasks may not have reacted yet.
    pub fn unobserved(&self) -> usize {
        self.shared.lock().fired.len()
    }

    /// Fire the sleeps of the earliest deadline not after `limit`, moving time to it.
    fn fire_next(&self, limit: Instant) -> Option<Instant> {
        let (deadline, wakers) = {
            let mut state = self.shared.lock();
            let &(deadline, _) = state.sleeps.keys().next()?;
            if deadline > limit {
                return None;
            }
            if deadline > state.now {
                state.now = deadline;
            }
            // Keys are ordered by deadline first: everything due at `deadline` is in front.
            let later = state.sleeps.split_off(&(deadline, u64::MAX));
            let due = core::mem::replace(&mut state.sleeps, later);
            let mut wakers = Vec::with_capacity(due.len());
            for ((_, id), waker) in due {
                state.fired.insert(id);
                wakers.extend(waker);
            }
            (deadline, wakers)
        };
        // Woken outside the lock: a waker may poll (and so lock) at once.
        for waker in wakers {
            waker.wake();
        }
        Some(deadline)
    }
}

impl core::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("ManualClock")
            .field("now", &state.now)
            .field("pending", &state.sleeps.len())
            .finish()
    }
}

impl Timer for ManualClock {
    fn now(&self) -> Instant {
        self.shared.lock().now
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        let mut state = self.shared.lock();
        let id = state.next_id;
        state.next_id += 1;
        if deadline > state.now {
            state.sleeps.insert((deadline, id), None);
        } else {
            // Due already: it counts as fired until dropped, like one fired by `advance`.
            state.fired.insert(id);
        }
        Box::pin(ManualSleep {
            clock: self.shared.clone(),
            key: (deadline, id),
        })
    }
}

/// The future behind [`ManualClock`]'s sleeps.
struct ManualSleep {
    clock: Arc<Mutex<ClockState>>,
    key: (Instant, u64),
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.clock.lock();
        if state.now >= self.key.0 {
            if state.sleeps.remove(&self.key).is_some() {
                // Reached by `advance_to`'s final step rather than fired: count it the same.
                state.fired.insert(self.key.1);
            }
            return Poll::Ready(());
        }
        match state.sleeps.get_mut(&self.key) {
            Some(slot) => match slot {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => *slot = Some(cx.waker().clone()),
            },
            // Not reachable: a sleep leaves the map only when fired (time reached it) or when
            // dropped. Registering again keeps the contract if that ever changes.
            None => {
                state.sleeps.insert(self.key, Some(cx.waker().clone()));
            }
        }
        Poll::Pending
    }
}

impl SleepFuture for ManualSleep {
    fn reset(mut self: Pin<&mut Self>, deadline: Instant) {
        let clock = self.clock.clone();
        let mut state = clock.lock();
        let id = self.key.1;
        // The waker of the task that last polled it carries over; a fired sleep is pending
        // again (or fired at once, if the new deadline has passed).
        let waker = state.sleeps.remove(&self.key).flatten();
        state.fired.remove(&id);
        self.key = (deadline, id);
        if deadline > state.now {
            state.sleeps.insert(self.key, waker);
        } else {
            state.fired.insert(id);
        }
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        let mut state = self.clock.lock();
        state.sleeps.remove(&self.key);
        state.fired.remove(&self.key.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::sync::Arc;
    use alloc::task::Wake;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its wake-ups.
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(sleep: &mut Sleep, counter: &Arc<Counter>) -> Poll<()> {
        let waker = Waker::from(counter.clone());
        sleep.as_mut().poll(&mut Context::from_waker(&waker))
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_reset_sleep_fires_at_its_new_deadline_only() {
        let clock = ManualClock::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let mut sleep = clock.sleep(secs(10));
        assert_eq!(poll(&mut sleep, &counter), Poll::Pending);
        clock.reset(&mut sleep, Instant::ZERO + secs(30));
        assert_eq!(clock.pending(), 1, "one sleep, moved");
        clock.advance(secs(10));
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            0,
            "not at the old deadline"
        );
        assert_eq!(poll(&mut sleep, &counter), Poll::Pending);
        clock.advance(secs(20));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "woken at the new one");
        assert_eq!(poll(&mut sleep, &counter), Poll::Ready(()));
        assert_eq!(clock.unobserved(), 1);
        // A fired sleep reset to a later deadline is pending again, and no longer unobserved.
        clock.reset(&mut sleep, Instant::ZERO + secs(40));
        assert_eq!(clock.unobserved(), 0);
        assert_eq!(clock.next_deadline(), Some(Instant::ZERO + secs(40)));
        // Reset to a deadline already passed, it is due at once.
        clock.reset(&mut sleep, Instant::ZERO + secs(5));
        assert_eq!(clock.next_deadline(), None);
        assert_eq!(poll(&mut sleep, &counter), Poll::Ready(()));
        drop(sleep);
        assert_eq!(clock.unobserved(), 0);
    }

    #[test]
    fn time_stands_still_until_advanced() {
        let clock = ManualClock::new();
        assert_eq!(clock.now(), Instant::ZERO);
        clock.advance(secs(30));
        assert_eq!(clock.now(), Instant::ZERO + secs(30));
        clock.advance_to(Instant::ZERO + secs(10));
        assert_eq!(clock.now(), Instant::ZERO + secs(30), "never backwards");
    }

    #[test]
    fn a_sleep_fires_exactly_at_its_deadline_and_not_a_nanosecond_before() {
        let clock = ManualClock::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let mut sleep = clock.sleep(secs(30));
        assert_eq!(poll(&mut sleep, &counter), Poll::Pending);
        clock.advance(secs(30) - Duration::from_nanos(1));
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        assert_eq!(poll(&mut sleep, &counter), Poll::Pending);
        clock.advance(Duration::from_nanos(1));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "woken once");
        assert_eq!(poll(&mut sleep, &counter), Poll::Ready(()));
        assert_eq!(clock.pending(), 0);
        assert_eq!(clock.unobserved(), 1, "fired, its future still alive");
        drop(sleep);
        assert_eq!(clock.unobserved(), 0, "dropped: observed");
    }

    #[test]
    fn advance_stops_at_each_deadline_in_order() {
        let clock = ManualClock::new();
        let _a = clock.sleep(secs(20));
        let _b = clock.sleep(secs(5));
        let _c = clock.sleep(secs(5));
        assert_eq!(clock.next_deadline(), Some(Instant::ZERO + secs(5)));
        assert_eq!(
            clock.advance_to_next_deadline(),
            Some(Instant::ZERO + secs(5))
        );
        assert_eq!(clock.now(), Instant::ZERO + secs(5));
        assert_eq!(clock.pending(), 1, "both 5 s sleeps fired together");
        assert_eq!(
            clock.advance_to_next_deadline(),
            Some(Instant::ZERO + secs(20))
        );
        assert_eq!(clock.advance_to_next_deadline(), None);
        assert_eq!(clock.now(), Instant::ZERO + secs(20));
    }

    #[test]
    fn a_dropped_sleep_never_fires_and_holds_nothing() {
        let clock = ManualClock::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let mut sleep = clock.sleep(secs(1));
        assert_eq!(poll(&mut sleep, &counter), Poll::Pending);
        drop(sleep);
        assert_eq!(clock.pending(), 0);
        assert_eq!(clock.next_deadline(), None);
        clock.advance(secs(2));
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_sleep_in_the_past_is_ready_at_once() {
        let clock = ManualClock::new();
        clock.advance(secs(10));
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let mut sleep = clock.sleep_until(Instant::ZERO + secs(3));
        assert_eq!(clock.pending(), 0);
        assert_eq!(poll(&mut sleep, &counter), Poll::Ready(()));
    }

    #[test]
    fn the_task_that_polled_last_is_woken() {
        let clock = ManualClock::new();
        let first = Arc::new(Counter(AtomicUsize::new(0)));
        let second = Arc::new(Counter(AtomicUsize::new(0)));
        let mut sleep = clock.sleep(secs(1));
        assert_eq!(poll(&mut sleep, &first), Poll::Pending);
        assert_eq!(poll(&mut sleep, &second), Poll::Pending);
        clock.advance(secs(1));
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
    }
}
