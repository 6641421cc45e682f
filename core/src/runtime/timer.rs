//! Reading time and waiting for a deadline.

use alloc::boxed::Box;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use crate::Instant;

/// A future that completes at a deadline, returned by [`Timer::sleep_until`].
pub type Sleep = Pin<Box<dyn SleepFuture + 'static>>;

/// The future behind a [`Sleep`]: one that can be moved to another deadline in place, so that
/// a driver re-arming its one timer does not allocate a new sleep each time.
pub trait SleepFuture: Future<Output = ()> + Send {
    /// Complete at `deadline` instead, earlier or later, as a new `sleep_until(deadline)` of the
    /// same timer would; also after the sleep completed. The task that polls it next is the one
    /// woken.
    fn reset(self: Pin<&mut Self>, deadline: Instant);
}

/// A monotonic clock with sleeps.
///
/// An implementation:
///
/// - MUST make [`Timer::now`] monotonic: a later call never returns an earlier instant.
/// - MUST measure all instants from one origin, fixed for the life of the value (and its
///   clones), so that instants it returned can be compared with each other.
/// - MUST NOT complete a sleep before [`Timer::now`] has reached its deadline: after
///   `sleep_until(t).await`, `now() >= t`.
/// - MUST complete a sleep whose deadline has passed, once polled, and wake its task when the
///   deadline is reached, without the caller polling in between.
/// - MUST let a dropped sleep go: it never wakes anything afterwards, and holds no resources.
/// - MUST accept sleeps created on any thread and polled from any task.
/// - SHOULD fire a sleep as soon as possible after its deadline; how soon is up to the runtime
///   (a virtual clock fires it exactly at the deadline).
/// - MUST make [`Timer::reset`] behave as replacing the sleep with `sleep_until(deadline)`, and
///   SHOULD do it without allocating.
pub trait Timer: Send + Sync {
    /// The current instant, from this timer's origin.
    fn now(&self) -> Instant;

    /// A future completing once [`Timer::now`] has reached `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;

    /// A future completing once `duration` has passed from now.
    fn sleep(&self, duration: Duration) -> Sleep {
        self.sleep_until(self.now().saturating_add(duration))
    }

    /// Move `sleep`, made by this timer, to `deadline` in place.
    fn reset(&self, sleep: &mut Sleep, deadline: Instant) {
        sleep.as_mut().reset(deadline);
    }

    /// How far past its deadline a sleep fires by design: the tick of a timer wheel that
    /// rounds deadlines up to it (tokio's: 1 ms). A caller that must not wait much longer than
    /// a bound (a producer's batching delay) aims this much earlier. Zero (the default) for a
    /// precise timer, and for a virtual clock, which fires exactly at the deadline.
    fn granularity(&self) -> Duration {
        Duration::ZERO
    }
}

impl<T: Timer + ?Sized> Timer for alloc::sync::Arc<T> {
    fn now(&self) -> Instant {
        (**self).now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        (**self).sleep_until(deadline)
    }

    fn reset(&self, sleep: &mut Sleep, deadline: Instant) {
        (**self).reset(sleep, deadline)
    }

    fn granularity(&self) -> Duration {
        (**self).granularity()
    }
}
