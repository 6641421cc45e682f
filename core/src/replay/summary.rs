//! What a replay did, in figures.

use core::fmt;
use core::time::Duration;

/// Why a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayEnd {
    /// Every message the dead-letter topic held for the subscription when the replay started
    /// was read.
    Drained,
    /// No message came for this long (what the replay could not tell from the broker).
    Quiet(Duration),
    /// [`ReplayOptions::limit`](super::ReplayOptions::limit) messages were moved.
    Limit,
    /// The stop signal came.
    Stopped,
}

impl fmt::Display for ReplayEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayEnd::Drained => f.write_str("every message there was at the start was read"),
            ReplayEnd::Quiet(quiet) => write!(f, "no message came for {quiet:?}"),
            ReplayEnd::Limit => f.write_str("the limit was reached"),
            ReplayEnd::Stopped => f.write_str("stopped on request, after the message in flight"),
        }
    }
}

/// What a replay did: how many messages it moved, left, failed on, and how many a later
/// replay may move a second time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplaySummary {
    /// Copied (confirmed) and acknowledged, or in a dry run, would have been.
    pub moved: u64,
    /// Left in place: they do not match the filters.
    pub skipped_by_filter: u64,
    /// Left in place: no topic they came from, and no `--to`.
    pub skipped_without_topic: u64,
    /// Left in place: their copy was not confirmed.
    pub failed: u64,
    /// Copied (confirmed) but not acknowledged: still on the dead-letter topic, so a later
    /// replay moves them again.
    pub duplicates_possible: u64,
    /// Whether nothing was published or acknowledged.
    pub dry_run: bool,
    /// Why it ended.
    pub end: ReplayEnd,
}

impl ReplaySummary {
    /// Nothing done yet.
    pub fn new(dry_run: bool) -> Self {
        ReplaySummary {
            moved: 0,
            skipped_by_filter: 0,
            skipped_without_topic: 0,
            failed: 0,
            duplicates_possible: 0,
            dry_run,
            end: ReplayEnd::Drained,
        }
    }
}

impl fmt::Display for ReplaySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moved = if self.dry_run { "would move" } else { "moved" };
        write!(
            f,
            "{moved} {}, skipped by filter {}, skipped without REAL_TOPIC {}, failed {}, \
             duplicates possible {}; ended: {}",
            self.moved,
            self.skipped_by_filter,
            self.skipped_without_topic,
            self.failed,
            self.duplicates_possible,
            self.end
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn the_summary_line_names_every_figure() {
        let mut summary = ReplaySummary::new(false);
        summary.moved = 998;
        summary.failed = 2;
        summary.end = ReplayEnd::Quiet(Duration::from_secs(3));
        assert_eq!(
            summary.to_string(),
            "moved 998, skipped by filter 0, skipped without REAL_TOPIC 0, failed 2, \
             duplicates possible 0; ended: no message came for 3s"
        );
        assert!(ReplaySummary::new(true)
            .to_string()
            .starts_with("would move 0,"));
    }
}
