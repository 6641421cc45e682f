//! What to move, where, and how.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use super::{PropertyFilter, Rate};

/// The subscription a replay reads the dead-letter topic with, unless
/// [`ReplayOptions::subscription`] names another: its own (Shared, from the earliest
/// message), so that the handlers' subscriptions of the dead-letter topic are left as they
/// are, and a replay that was stopped or killed continues where it left off. (Its name is
/// older than `dead-letter replay`'s and is kept: a broker keeps the subscription's position
/// under it, and another name would start a replay over from the earliest message.)
pub const DEFAULT_REPLAY_SUBSCRIPTION: &str = "ruststream-redrive";

/// How long a replay on a server waits for the next message, once the messages it can tell
/// were there at its start are read or cannot be told, before it ends
/// ([`ReplayEnd::Quiet`](super::ReplayEnd::Quiet)).
pub const DEFAULT_QUIET: Duration = Duration::from_secs(3);

/// What a dead-letter replay moves, where to, and how.
///
/// ```
/// use std::num::NonZeroU32;
/// use ruststream::replay::{Rate, ReplayOptions};
///
/// let options = ReplayOptions::new("refunds-dlq")
///     .filter("DEAD_LETTER_REASON=timeout".parse()?)
///     .limit(100)
///     .rate(Rate::per_second(NonZeroU32::new(50).unwrap()));
/// assert_eq!(options.to, None, "each message back to the topic it came from");
/// # Ok::<(), ruststream::replay::FilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// The dead-letter topic, short (in the broker's namespace) or fully qualified.
    pub from: String,
    /// Where every message goes; `None`: to the topic it came from, named by its
    /// `REAL_TOPIC` property (a message without one is skipped and left where it is).
    pub to: Option<String>,
    /// Move only messages matching every one of these; the others stay.
    pub filters: Vec<PropertyFilter>,
    /// Move at most this many (messages skipped by a filter do not count).
    pub limit: Option<u64>,
    /// Move at most this fast.
    pub rate: Option<Rate>,
    /// Read and report what would move, publishing and acknowledging nothing.
    pub dry_run: bool,
    /// The subscription the dead-letter topic is read with
    /// ([`DEFAULT_REPLAY_SUBSCRIPTION`]).
    pub subscription: String,
    /// How long to wait for one more message before ending ([`DEFAULT_QUIET`]).
    pub quiet: Duration,
    /// Acknowledge each message of a batched entry on its own as soon as it is moved, instead
    /// of the entry once all of it is moved; `None` keeps the broker's own setting. Only for a
    /// broker that acknowledges at batch-index level (Pulsar:
    /// `acknowledgmentAtBatchIndexLevelEnabled=true`): one that does not would take such an
    /// acknowledgement for the whole entry, and the entry's other messages would be lost.
    pub batch_index_acks: Option<bool>,
}

impl ReplayOptions {
    /// Move every message of `from` back where it came from.
    pub fn new(from: impl Into<String>) -> Self {
        ReplayOptions {
            from: from.into(),
            to: None,
            filters: Vec::new(),
            limit: None,
            rate: None,
            dry_run: false,
            subscription: DEFAULT_REPLAY_SUBSCRIPTION.into(),
            quiet: DEFAULT_QUIET,
            batch_index_acks: None,
        }
    }

    /// Move every message to `topic` instead.
    pub fn to(mut self, topic: impl Into<String>) -> Self {
        self.to = Some(topic.into());
        self
    }

    /// Move only the messages that also match `filter`.
    pub fn filter(mut self, filter: PropertyFilter) -> Self {
        self.filters.push(filter);
        self
    }

    /// Move at most `messages`.
    pub fn limit(mut self, messages: u64) -> Self {
        self.limit = Some(messages);
        self
    }

    /// Move at most at `rate`.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Only report what would move.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Read with subscription `name` instead of [`DEFAULT_REPLAY_SUBSCRIPTION`].
    pub fn subscription(mut self, name: impl Into<String>) -> Self {
        self.subscription = name.into();
        self
    }

    /// Wait `quiet` for one more message before ending, instead of [`DEFAULT_QUIET`].
    pub fn quiet(mut self, quiet: Duration) -> Self {
        self.quiet = quiet;
        self
    }

    /// Acknowledge each message of a batched entry on its own (see the field).
    pub fn batch_index_acks(mut self, enabled: bool) -> Self {
        self.batch_index_acks = Some(enabled);
        self
    }

    /// Whether a message with `properties` is to be moved: it matches every filter.
    pub fn selects(&self, properties: &[(String, String)]) -> bool {
        self.filters.iter().all(|f| f.matches(properties))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_filter_must_match() {
        let options = ReplayOptions::new("dlq")
            .filter(PropertyFilter::new("a", "1"))
            .filter(PropertyFilter::new("b", "2"));
        let props = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert!(options.selects(&props(&[("b", "2"), ("a", "1"), ("c", "3")])));
        assert!(!options.selects(&props(&[("a", "1")])));
        assert!(ReplayOptions::new("dlq").selects(&[]), "no filter: all");
    }
}
