//! `--rate N/s`: how fast dead-lettered messages are moved back.

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::fmt;
use core::num::NonZeroU32;
use core::str::FromStr;
use core::time::Duration;

/// At most `count` messages moved per `per` (a second or a minute), evenly spaced: so that the
/// service reading the topic is not flooded by a backlog it failed on once already. Written
/// `N/s`, `N/min` or `N` (a second).
///
/// ```
/// use std::time::Duration;
/// use ruststream::replay::Rate;
///
/// let rate: Rate = "200/s".parse()?;
/// assert_eq!(rate.interval(), Duration::from_millis(5));
/// assert_eq!("30/min".parse::<Rate>()?.interval(), Duration::from_secs(2));
/// # Ok::<(), ruststream::replay::RateError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    count: NonZeroU32,
    per: Duration,
}

impl Rate {
    /// At most `count` messages a second.
    pub fn per_second(count: NonZeroU32) -> Self {
        Rate {
            count,
            per: Duration::from_secs(1),
        }
    }

    /// At most `count` messages a minute.
    pub fn per_minute(count: NonZeroU32) -> Self {
        Rate {
            count,
            per: Duration::from_secs(60),
        }
    }

    /// The time between the starts of two moves.
    pub fn interval(&self) -> Duration {
        self.per / self.count.get()
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.per == Duration::from_secs(60) {
            "min"
        } else {
            "s"
        };
        write!(f, "{}/{unit}", self.count)
    }
}

/// A rate that is not `N/s`, `N/min` or `N` with `N` a whole number above 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{given}` is not a rate: write N/s, N/min or N (a second), N a whole number from 1 to \
     4294967295, e.g. `--rate 100/s`"
)]
pub struct RateError {
    given: String,
}

impl FromStr for Rate {
    type Err = RateError;

    fn from_str(text: &str) -> Result<Self, RateError> {
        let error = || RateError {
            given: text.to_owned(),
        };
        let (count, unit) = text.trim().split_once('/').unwrap_or((text.trim(), "s"));
        let count = count.trim().parse::<NonZeroU32>().map_err(|_| error())?;
        match unit.trim() {
            "s" | "sec" => Ok(Rate::per_second(count)),
            "m" | "min" => Ok(Rate::per_minute(count)),
            _ => Err(error()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn the_forms_it_reads() {
        let per_second = |n| Rate::per_second(NonZeroU32::new(n).unwrap());
        assert_eq!("100/s".parse(), Ok(per_second(100)));
        assert_eq!("100".parse(), Ok(per_second(100)));
        assert_eq!(" 7 / sec ".parse(), Ok(per_second(7)));
        assert_eq!(
            "30/min".parse(),
            Ok(Rate::per_minute(NonZeroU32::new(30).unwrap()))
        );
        assert_eq!("30/m".parse::<Rate>().unwrap().to_string(), "30/min");
        assert_eq!(per_second(3).to_string(), "3/s");
        assert_eq!(per_second(3).interval(), Duration::from_nanos(333_333_333));
    }

    #[test]
    fn a_wrong_rate_says_how_to_write_one() {
        for given in ["0/s", "-1", "fast", "10/h", "1.5/s", "", "10/"] {
            let error = given.parse::<Rate>().unwrap_err().to_string();
            assert!(error.contains(&alloc::format!("`{given}`")), "{error}");
            assert!(error.contains("N/s, N/min or N"), "{error}");
        }
    }
}
