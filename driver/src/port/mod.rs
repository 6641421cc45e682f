//! The ports a broker implements for the driver: its consumer, its transactions, and how it
//! writes copies to other topics (its publisher is the core's
//! [`Publish`](ruststream::publish::Publish)).

mod consumer;
mod received;
mod republish;
mod transaction;

pub use consumer::ConsumerPort;
pub use received::{Payload, Properties, Received, Unusual};
pub use republish::{Original, Republisher};
pub use transaction::{CommitError, Transaction, TransactionHandle, TransactionPort};
