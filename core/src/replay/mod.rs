//! Moving dead-lettered messages back: what `<service> dead-letter replay` and a broker's
//! library call take, report and answer, independent of any broker.
//!
//! An operator fixes what made messages fail, then asks for them to be moved from the
//! dead-letter topic back to the topic each came from (or another): [`ReplayOptions`] says
//! from where, to where, which ones ([`PropertyFilter`]), how many and how fast ([`Rate`]);
//! [`Replay`] adds where each step is reported ([`ReplayEvent`]) and when to stop; a broker
//! that can do it answers with a [`ReplaySummary`] through
//! [`Broker::replay_dead_letters`](crate::app::Broker::replay_dead_letters), or a
//! [`ReplayError`]. The copying itself, and what the copy carries, is the broker crate's.

mod error;
mod event;
mod filter;
mod options;
mod rate;
mod request;
mod summary;

pub use error::ReplayError;
pub use event::ReplayEvent;
pub use filter::{FilterError, PropertyFilter};
pub use options::{ReplayOptions, DEFAULT_QUIET, DEFAULT_REPLAY_SUBSCRIPTION};
pub use rate::{Rate, RateError};
pub use request::{EventSink, Replay};
pub use summary::{ReplayEnd, ReplaySummary};
