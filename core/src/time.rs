//! A point in time that no clock produced.
//!
//! The core never reads a clock: callers pass `now` in. [`Instant`] is therefore a plain
//! number, the time elapsed since an origin the caller chose (for the runtime adapters, the
//! moment the adapter was created; for [`crate::ManualClock`], zero). Instants from different
//! origins must not be compared, and nothing here can check that: keep one timer per driver.

use core::fmt;
use core::ops::{Add, AddAssign};
use core::time::Duration;

/// Time since an origin chosen by whoever drives the core, in nanoseconds.
///
/// `u64` nanoseconds last 584 years; arithmetic saturates instead of panicking, so a delay of
/// [`Duration::MAX`] means "never" rather than a crash.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// The origin itself.
    pub const ZERO: Instant = Instant { nanos: 0 };
    /// The last representable instant; used as "never".
    pub const MAX: Instant = Instant { nanos: u64::MAX };

    /// The instant `elapsed` after the origin, saturating at [`Instant::MAX`].
    pub const fn from_elapsed(elapsed: Duration) -> Self {
        let nanos = elapsed.as_nanos();
        Instant {
            nanos: if nanos > u64::MAX as u128 {
                u64::MAX
            } else {
                nanos as u64
            },
        }
    }

    /// The instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant { nanos }
    }

    /// Time since the origin.
    pub const fn elapsed_since_origin(self) -> Duration {
        Duration::from_nanos(self.nanos)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }

    /// `self + d`, or [`Instant::MAX`] if that is not representable.
    pub const fn saturating_add(self, d: Duration) -> Self {
        let d = d.as_nanos();
        if d > u64::MAX as u128 {
            return Instant::MAX;
        }
        Instant {
            nanos: self.nanos.saturating_add(d as u64),
        }
    }

    /// `self - earlier`, or zero if `earlier` is later than `self`.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.nanos.saturating_sub(earlier.nanos))
    }

    /// `self - earlier`, or `None` if `earlier` is later than `self`.
    pub const fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        match self.nanos.checked_sub(earlier.nanos) {
            Some(n) => Some(Duration::from_nanos(n)),
            None => None,
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// Saturating: see [`Instant::saturating_add`].
    fn add(self, rhs: Duration) -> Instant {
        self.saturating_add(rhs)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = self.saturating_add(rhs);
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant(+{:?})", self.elapsed_since_origin())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addition_saturates_instead_of_panicking() {
        assert_eq!(Instant::ZERO + Duration::MAX, Instant::MAX);
        assert_eq!(Instant::MAX + Duration::from_nanos(1), Instant::MAX);
        assert_eq!(
            Instant::from_elapsed(Duration::MAX),
            Instant::MAX,
            "a duration past u64 nanoseconds clamps"
        );
    }

    #[test]
    fn differences() {
        let a = Instant::from_elapsed(Duration::from_secs(3));
        let b = a + Duration::from_millis(1500);
        assert_eq!(b.saturating_duration_since(a), Duration::from_millis(1500));
        assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
        assert_eq!(a.checked_duration_since(b), None);
        assert_eq!(b.as_nanos(), 4_500_000_000);
        assert_eq!(alloc::format!("{b:?}"), "Instant(+4.5s)");
    }
}
