//! The subscription driver: the one task that owns a consumer and makes every call on it.
//!
//! Deliveries come in, handlers run concurrently (up to the registration's limit, per-key
//! order kept on KeyShared), each outcome goes through the core's [`Settler`], and the calls it
//! yields are made here, on the consumer: this is where an outcome becomes `ack_with_id` or
//! `nack_with_id`. `retry_after` waits are held by the settler and cost one timer for the
//! whole subscription. The messages of a batched entry are settled one by one through the
//! entry ledger ([`batch`]), and messages out of attempts go to the dead-letter topic from here
//! ([`dead_letter`]).

mod batch;
mod dead_letter;
mod handle;
mod instruments;
mod port;
mod report;
mod run;
mod slots;
mod tally;

pub(crate) use batch::{BatchSlot, EntryPosition};
pub(crate) use dead_letter::DeadLetter;
pub(crate) use handle::DriverHandle;
pub use instruments::metric;
pub(crate) use port::{ConsumerPort, Headers, Payload, Received, SharedMessage};
pub(crate) use run::{Driver, DriverConfig};
pub(crate) use tally::Tally;
