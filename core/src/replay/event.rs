//! One step of a replay, as it is reported.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::MessageId;

/// What a replay did with one message of the dead-letter topic (or, for [`Started`] and
/// [`Unacknowledged`], with the run): what the runner prints a line for, so that an operator
/// sees which message went where.
///
/// [`Started`]: ReplayEvent::Started
/// [`Unacknowledged`]: ReplayEvent::Unacknowledged
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayEvent {
    /// The dead-letter topic is being read.
    Started {
        /// The dead-letter topic, fully qualified.
        from: String,
        /// The subscription it is read with.
        subscription: String,
        /// Whether this is a dry run.
        dry_run: bool,
    },
    /// The copy is on `to` (the broker confirmed it) and the original was acknowledged.
    Moved {
        /// The message's id on the dead-letter topic.
        id: MessageId,
        /// Where its copy went.
        to: String,
        /// The copy's id.
        copy: MessageId,
    },
    /// Dry run: the message would be moved to `to`.
    WouldMove {
        /// The message's id on the dead-letter topic.
        id: MessageId,
        /// Where it would go.
        to: String,
    },
    /// The message does not match the filters: left where it is.
    Filtered {
        /// The message's id on the dead-letter topic.
        id: MessageId,
    },
    /// The message names no topic it came from, and none was given: left where it is.
    NoTarget {
        /// The message's id on the dead-letter topic.
        id: MessageId,
    },
    /// The copy was not confirmed: the original is left where it is (a copy whose receipt
    /// was lost may be on `to` all the same).
    Failed {
        /// The message's id on the dead-letter topic.
        id: MessageId,
        /// Where its copy was to go.
        to: String,
        /// Why.
        error: String,
    },
    /// Copies confirmed whose originals could not be acknowledged: a later replay moves them
    /// again.
    Unacknowledged {
        /// The originals' ids on the dead-letter topic.
        ids: Vec<MessageId>,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for ReplayEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayEvent::Started {
                from,
                subscription,
                dry_run,
            } => {
                write!(f, "reading {from} with subscription {subscription}")?;
                if *dry_run {
                    f.write_str(" (dry run: nothing is published or acknowledged)")?;
                }
                Ok(())
            }
            ReplayEvent::Moved { id, to, copy } => write!(f, "moved {id} to {to} as {copy}"),
            ReplayEvent::WouldMove { id, to } => write!(f, "would move {id} to {to}"),
            ReplayEvent::Filtered { id } => {
                write!(f, "skipped {id}: does not match the filter; left in place")
            }
            ReplayEvent::NoTarget { id } => write!(
                f,
                "skipped {id}: no REAL_TOPIC property says where it came from, and no --to \
                 was given; left in place"
            ),
            ReplayEvent::Failed { id, to, error } => write!(
                f,
                "failed {id}: the copy to {to} was not confirmed ({error}); left in place"
            ),
            ReplayEvent::Unacknowledged { ids, reason } => {
                write!(
                    f,
                    "not acknowledged, so moved again by the next replay ({reason}):"
                )?;
                for id in ids {
                    write!(f, " {id}")?;
                }
                Ok(())
            }
        }
    }
}
