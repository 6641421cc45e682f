//! Why a replay did not run, or stopped short.

use alloc::string::String;

use super::ReplaySummary;
use crate::boxed::BoxError;

/// A dead-letter replay could not run (or could not go on).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The broker has no dead-letter replay.
    #[error(
        "the {broker} broker has no dead-letter replay: `dead-letter replay` works with a \
         broker that dead-letters (Pulsar)"
    )]
    Unsupported {
        /// The broker's kind.
        broker: &'static str,
    },
    /// The app has no broker that can replay.
    #[error("the app has no broker with a dead-letter replay; add one with `with_broker`")]
    NoBroker,
    /// A topic name that the broker cannot use.
    #[error("`{topic}` ({what}) is not a topic name: {reason}")]
    InvalidTopic {
        /// The name as given.
        topic: String,
        /// Which one it is (`--from`, `--to`, a `REAL_TOPIC`).
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// Connecting, or subscribing to the dead-letter topic, failed.
    #[error("the {broker} broker could not start the replay: {source}")]
    Connect {
        /// The broker's kind.
        broker: &'static str,
        /// What failed.
        source: BoxError,
    },
    /// The dead-letter topic's consumer failed while reading; what was moved stays moved.
    #[error(
        "reading the dead-letter topic failed: {source}. So far: {summary}. What was moved \
         stays moved; run the replay again to continue"
    )]
    Read {
        /// What failed.
        source: BoxError,
        /// What was done before.
        summary: ReplaySummary,
    },
}
