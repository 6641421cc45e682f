//! Batch handlers: many messages in one call, each settled on its own.
//!
//! A handler whose first parameter is a slice (`readings: &[Reading]`) is a batch handler:
//! `#[subscriber(..)]` decodes every message of a batch, leaves out the ones that do not
//! decode (each settled on its own, as a single handler's would be), and calls the function
//! once with the rest. The broker gathers a batch by its [`BatchPolicy`] (max messages, max
//! bytes, max wait) and hands it over as one admission: a registration's concurrency counts
//! batches. The handler answers with a [`BatchOutcome`]: one outcome for every message, or one
//! per message; the completion table then settles each message by its own outcome, attempt
//! count and key (`docs/batch-handlers.md`).

mod batched;
mod extract;
mod outcome;
mod run;
mod view;

pub use crate::batch_policy::BatchPolicy;
pub use crate::handler::spare::Spare;
pub use batched::Batched;
pub use extract::ExtractBatch;
pub use outcome::{BatchOutcome, IntoBatchOutcome};
pub use run::Decoded;
pub use view::Batch;
