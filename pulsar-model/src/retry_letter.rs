//! The properties of a message republished to a retry topic (a durable `retry_later`).
//!
//! The names are the Java client's (`RetryMessageUtil`, written by `reconsumeLater`), so that a
//! Java consumer with `enableRetry` reads a ruststream retry copy as its own, and ruststream
//! reads the Java client's: the copy also carries [`crate::REAL_TOPIC`] and
//! [`crate::ORIGIN_MESSAGE_ID`], as a dead-letter copy does.

/// How many times the message was republished to the retry topic: `1` on the first copy, one
/// more on each copy of a copy. Added to the broker's redelivery count, it makes the one
/// attempt count that `max_attempts` limits.
pub const RECONSUMETIMES: &str = "RECONSUMETIMES";

/// The delay the copy was published with, in milliseconds.
pub const DELAY_TIME: &str = "DELAY_TIME";

/// The number of times a message was republished to a retry topic, as its properties say: `0`
/// without [`RECONSUMETIMES`] or with a value that is not a number (a copy written by hand).
pub fn reconsume_times<'a>(properties: impl IntoIterator<Item = (&'a str, &'a str)>) -> u32 {
    properties
        .into_iter()
        .find(|(name, _)| *name == RECONSUMETIMES)
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_read_from_its_property() {
        assert_eq!(reconsume_times([("a", "b")]), 0, "none");
        assert_eq!(reconsume_times([("a", "b"), (RECONSUMETIMES, "3")]), 3);
        assert_eq!(
            reconsume_times([(RECONSUMETIMES, " 2 ")]),
            2,
            "as Java trims"
        );
        assert_eq!(reconsume_times([(RECONSUMETIMES, "x")]), 0, "not a number");
    }
}
