//! # The process around a ruststream app
//!
//! `#[ruststream::app]` writes a `main` that calls [`on_runtime::tokio`] (or
//! [`on_runtime::smol`], [`on_runtime::async_std`], each behind the feature of that name;
//! `tokio` is the default). It builds the runtime through its adapter crate and hands over to
//! [`main`], which reads the command line, sets up logging, starts the app, waits for SIGINT
//! or SIGTERM, and stops it gracefully; a second signal ends it at once.
//!
//! ```text
//! USAGE: <service> [run] [--embedded] [--publish TOPIC=FILE]...
//!
//!   run                  start the service (the default command)
//!   --embedded           use each broker's in-process stand-in instead of a server, on a
//!                        virtual clock that skips ahead whenever the service is idle; the
//!                        process ends once nothing is left to do
//!   --publish TOPIC=FILE publish every line of FILE (one JSON payload per line) to TOPIC
//!                        after startup
//! ```
//!
//! Logging goes to stderr through `tracing-subscriber`, filtered by `RUST_LOG` (default
//! `info`). Libraries that log through the `log` crate, pulsar-rs among them, are forwarded
//! into the same log under the same filter, so its reconnects and connection errors show at
//! their level; pulsar-rs's trace records, which print the token it sends, never are. A
//! service that installs its own subscriber (or `log` logger) before `main` keeps it.

mod cli;
mod log_bridge;
mod logging;
pub mod on_runtime;
mod run;

pub use cli::{Cli, CliError};
pub use run::main;
