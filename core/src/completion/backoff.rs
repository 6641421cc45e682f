//! A registration's backoff: the delay of a retry chosen by the attempt, not by the handler.

use core::fmt;
use core::time::Duration;

/// How long a retry waits, by attempt: `initial × multiplier^n` for the delivery counted `n`
/// (0 for the first), never above `max`, shortened by up to `jitter` of itself so that
/// messages that failed together do not all come back together.
///
/// [`Backoff::fixed`] waits the same each time; [`Backoff::exponential`] doubles up to a cap,
/// as the Java client's `MultiplierRedeliveryBackoff` does. A handler uses it with
/// `HandlerOutcome::backoff()` (the wait in the service, as `retry_after`) or
/// `HandlerOutcome::backoff_later()` (on the retry topic, as `retry_later`).
///
/// ```
/// use std::time::Duration;
/// use ruststream::completion::Backoff;
///
/// let policy = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(30));
/// let delays: Vec<u64> = (0..7).map(|n| policy.delay(n, 0).as_secs()).collect();
/// assert_eq!(delays, [1, 2, 4, 8, 16, 30, 30]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    multiplier: f64,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    /// `delay` every time.
    pub const fn fixed(delay: Duration) -> Self {
        Backoff {
            initial: delay,
            multiplier: 1.0,
            max: delay,
            jitter: 0.0,
        }
    }

    /// `initial`, doubled at each attempt, up to `max`.
    pub const fn exponential(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            multiplier: 2.0,
            max,
            jitter: 0.0,
        }
    }

    /// Grow by `factor` at each attempt instead of 2 (at least 1).
    pub const fn multiplier(mut self, factor: f64) -> Self {
        self.multiplier = factor;
        self
    }

    /// Shorten each delay by a share of it drawn between 0 and `fraction` (0 to 1), so that
    /// the delay stays within `[d × (1 − fraction), d]` and never exceeds the cap.
    pub const fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction;
        self
    }

    /// The longest delay the policy gives: its cap.
    pub const fn longest(&self) -> Duration {
        self.max
    }

    /// The delay before the delivery after the one counted `attempt` (0 for the first
    /// delivery). `seed` draws the jitter: the same seed gives the same delay, so runs on a
    /// virtual clock repeat exactly (the driver takes it from the message id).
    pub fn delay(&self, attempt: u32, seed: u64) -> Duration {
        let mut delay = self.initial.min(self.max);
        for _ in 0..attempt {
            if delay >= self.max || self.multiplier <= 1.0 {
                break;
            }
            delay = match Duration::try_from_secs_f64(delay.as_secs_f64() * self.multiplier) {
                Ok(grown) => grown.min(self.max),
                Err(_) => self.max,
            };
        }
        if self.jitter > 0.0 {
            // splitmix64: a well-spread draw from any seed, without a random source.
            let mut z = seed.wrapping_add(u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let share = (z >> 11) as f64 / (1u64 << 53) as f64 * self.jitter.min(1.0);
            delay = delay.mul_f64(1.0 - share);
        }
        delay
    }

    /// What is wrong with the policy, if anything: checked at registration.
    pub fn check(&self) -> Result<(), BackoffError> {
        let bad = |why| Err(BackoffError { policy: *self, why });
        if self.initial.is_zero() {
            return bad("its first delay is 0 s, which is `retry()`: give it a first delay");
        }
        if self.max < self.initial {
            return bad("its cap is below its first delay: raise the cap");
        }
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            return bad("its multiplier must be a number of at least 1");
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return bad("its jitter must be a share between 0 and 1");
        }
        Ok(())
    }
}

/// A backoff policy that cannot work, with why and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffError {
    /// The policy as declared.
    pub policy: Backoff,
    /// What is wrong, and the fix.
    pub why: &'static str,
}

impl fmt::Display for BackoffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Backoff {
            initial,
            multiplier,
            max,
            jitter,
        } = self.policy;
        write!(
            f,
            "the backoff from {initial:?} times {multiplier} up to {max:?} with jitter \
             {jitter} cannot work: {}",
            self.why
        )
    }
}

impl core::error::Error for BackoffError {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn fixed_waits_the_same_each_time() {
        let policy = Backoff::fixed(SEC * 5);
        for attempt in [0, 1, 7, u32::MAX] {
            assert_eq!(policy.delay(attempt, 42), SEC * 5);
        }
    }

    #[test]
    fn exponential_grows_by_its_multiplier_up_to_the_cap() {
        let policy = Backoff::exponential(Duration::from_millis(250), SEC * 2);
        let delays: Vec<u128> = (0..6).map(|n| policy.delay(n, 0).as_millis()).collect();
        assert_eq!(delays, [250, 500, 1000, 2000, 2000, 2000]);
        let triple = Backoff::exponential(SEC, SEC * 100).multiplier(3.0);
        assert_eq!(triple.delay(3, 0), SEC * 27);
        assert_eq!(triple.delay(u32::MAX, 0), SEC * 100, "no overflow");
    }

    #[test]
    fn jitter_shortens_within_its_share_and_repeats_for_a_seed() {
        let policy = Backoff::exponential(SEC * 10, SEC * 60).jitter(0.5);
        for seed in 0..200 {
            let d = policy.delay(1, seed);
            assert!(d <= SEC * 20 && d >= SEC * 10, "{d:?}");
            assert_eq!(d, policy.delay(1, seed), "the same seed, the same delay");
        }
        let spread: alloc::collections::BTreeSet<Duration> =
            (0..200).map(|seed| policy.delay(1, seed)).collect();
        assert!(spread.len() > 150, "draws differ by seed: {}", spread.len());
    }

    #[test]
    fn a_policy_that_cannot_work_is_named_with_the_fix() {
        assert!(Backoff::exponential(SEC, SEC * 10).check().is_ok());
        let below = Backoff::exponential(SEC * 10, SEC).check().unwrap_err();
        assert_eq!(
            below.to_string(),
            "the backoff from 10s times 2 up to 1s with jitter 0 cannot work: its cap is below \
             its first delay: raise the cap"
        );
        assert!(Backoff::fixed(Duration::ZERO).check().is_err());
        assert!(Backoff::fixed(SEC).multiplier(0.5).check().is_err());
        assert!(Backoff::fixed(SEC).multiplier(f64::NAN).check().is_err());
        assert!(Backoff::fixed(SEC).jitter(1.5).check().is_err());
    }
}
