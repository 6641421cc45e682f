//! Support code for ruststream's workspace tests.
//!
//! Behaviour tests are written once here, as async functions over `Arc<dyn Runtime>`, and the
//! test files in `tests/` run each of them on every runtime: tokio, async-std, smol and the
//! manual clock ([`ManualRuntime`]).

pub mod behaviour;
pub mod captured_log;
pub mod cases;
#[cfg(doctest)]
mod guides;
pub mod harness;
pub mod layers;
mod manual_runtime;
mod runtimes;
pub mod scenario;
pub mod unreadable_writer;

pub use manual_runtime::ManualRuntime;
