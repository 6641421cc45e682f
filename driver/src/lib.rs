//! # The ruststream driver
//!
//! One task per subscription, the same for every broker: it takes deliveries from the
//! broker's consumer, runs the handler and its layers, and carries the core's settlement
//! decisions ([`ruststream::broker::machine`]) to the broker's ports. It decides nothing: what to take,
//! what runs, what an outcome becomes, when to acknowledge, copy, commit or abort are the
//! machine's. A broker crate implements the ports ([`port`]) and starts a [`Driver`] per
//! subscription; `docs/broker-authors.md` in the repository walks through it.
//!
//! | what | where |
//! |---|---|
//! | the loop: events in, commands out | `run.rs` ([`Driver::run`]) |
//! | carrying out each command | `carry.rs` |
//! | the calls and answers outstanding between events | `outstanding.rs` |
//! | a handler's invocation, for one delivery or a batch | `invoke.rs` |
//! | the ports a broker implements | [`port`] |
//! | the built-in layers (span, trace context, metrics) | [`layers`] |
//! | the metrics a driver records | [`metric`] |
//! | starting and stopping drivers | [`DriverHandle`], [`Mount`] |

mod carry;
mod handle;
mod handled;
mod in_span;
mod instruments;
mod invoke;
mod kept;
pub mod layers;
pub mod metric;
mod mount;
mod outstanding;
pub mod port;
mod report;
mod run;
mod slots;
mod trace_context;

pub use handle::DriverHandle;
pub use handled::Handled;
pub use invoke::Wrap;
pub use mount::Mount;
pub use run::{Driver, DriverConfig};
