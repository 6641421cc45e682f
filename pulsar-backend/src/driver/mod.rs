//! The subscription driver: the one task that owns a consumer and makes every call on it.
//!
//! The driver is the I/O loop around the core's subscription machine
//! (`ruststream::machine::SubscriptionMachine`), which decides everything: which deliveries to
//! take and start (concurrency, per-key order, batch siblings), what each outcome becomes (the
//! completion table), when a `retry_after` wait ends, how a batched entry is acknowledged, and
//! when a delivery stops counting as in flight. The driver receives, runs handlers, and makes
//! the calls the machine yields on the consumer, those due together as one call: this is where
//! an outcome becomes `ack_many_with_id` or `nack_many_with_id` (`run.rs`, `flush`). The
//! copies the machine orders, to the dead-letter topic ([`dead_letter`]) and to the retry topic
//! for `retry_later` ([`retry_letter`]), are built here and published by the driver; the
//! machine acknowledges the original once a copy is confirmed, and a delivery once every
//! message its handler published is (their answers come back through the driver's outbox).

mod dead_letter;
mod ended;
mod handle;
mod handled;
mod in_span;
mod instruments;
mod mount;
mod port;
mod retry_letter;
mod run;
mod slots;
mod transactions;

pub(crate) use dead_letter::{DeadLetter, Why};
pub(crate) use handle::DriverHandle;
pub(crate) use handled::Handled;
pub(crate) use mount::Mount;
pub(crate) use port::{
    Compressed, ConsumerPort, Payload, Properties, Received, SharedMessage, Unusual,
};
pub(crate) use retry_letter::RetryLetter;
pub(crate) use run::{Driver, DriverConfig};
pub(crate) use ruststream::machine::{BatchSlot, EntryPosition};
