//! The dead-letter replay's loop, the same over pulsar-rs and over the in-process Pulsar: read
//! a message of the dead-letter topic, pick where it goes, publish its copy, wait for the
//! broker's receipt, acknowledge the original and wait until the broker has the
//! acknowledgement, then take the next one. One message at a time, so that a process killed at
//! any point leaves at most the one in flight copied and not acknowledged (moved again by the
//! next replay); a stop asked for is taken between two messages.
//!
//! A message of a batched entry is acknowledged on its own (at batch-index level) when the
//! transport and the broker can, else with its entry once every message of the entry was
//! moved (`entries.rs`): an entry acknowledged whole with a message still to move would lose
//! that message. Each transport implements [`DeadLetters`] (`remote/replay.rs`,
//! `inprocess/replay.rs`).

mod entries;
mod port;
mod run;

pub(crate) use entries::ack_set;
pub(crate) use port::{Dead, DeadLetters, EntryKey, Next};
pub(crate) use run::run;
