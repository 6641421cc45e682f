//! # The process around a ruststream app
//!
//! `#[ruststream::app]` writes a `main` that calls [`on_runtime::tokio`] (or
//! [`on_runtime::smol`], [`on_runtime::async_std`], each behind the feature of that name;
//! `tokio` is the default). It builds the runtime through its adapter crate and hands over to
//! [`main`], which reads the command line, sets up logging, starts the app, waits for SIGINT
//! or SIGTERM, and stops it gracefully; a second signal ends it at once.
//!
//! ```text
//! Usage: <service> [OPTIONS] [COMMAND]
//!
//!   [COMMAND]               run (the default): start the service
//!                           dead-letter replay --from TOPIC [--to TOPIC] [--filter P=V]
//!                             [--limit N] [--rate N/s] [--dry-run] [--subscription NAME]
//!                             [--batch-index-acks]: move dead-lettered messages back to the
//!                             topic in their REAL_TOPIC (or --to), each acknowledged once its
//!                             copy is confirmed; Ctrl-C stops after the message in flight
//!                           asyncapi [--yaml] [-o FILE] [--check FILE]: the service's
//!                             AsyncAPI document, from its registrations, without connecting;
//!                             --check names each breaking change against FILE (exit 1)
//!   --embedded              use each broker's in-process stand-in instead of a server, on a
//!                           virtual clock that skips ahead whenever the service is idle; the
//!                           process ends once nothing is left to do
//!   --publish <TOPIC=FILE>  publish every line of FILE to TOPIC after startup, read as it
//!                           goes; with --embedded, handled as it goes (PUBLISH_WINDOW)
//!   --publish-source        with --publish: set the property source=FILE:LINE on each
//!   --http <ADDR>           (feature `http`) serve /healthz, /readyz and /metrics on ADDR
//!   --http-asyncapi         with --http: also /asyncapi, /asyncapi.json, /asyncapi.yaml
//!   --pulsar-url <VALUE>    [env: RUSTSTREAM_PULSAR_URL] and every other setting the app's
//!                           brokers declare (`Broker::settings`); the app's values are defaults
//!   -h, --help / -V, --version
//! ```
//!
//! The options and settings go before or after the command. `dead-letter replay` is
//! `ruststream_pulsar::replay::run` on the app's first broker that has one
//! (`Broker::replay_dead_letters`), connected as `run` connects it, with no handler started; it
//! prints a line per message and a summary (docs/retries-and-dead-letter.md).
//!
//! A service adds flags of its own with `#[ruststream::app(args = MyArgs)]` (`MyArgs:
//! clap::Args`) and reads them in `on_startup` with [`args`]:
//!
//! ```no_run
//! use std::convert::Infallible;
//! use ruststream::app::App;
//! use ruststream::{AppInfo, RustStream};
//!
//! #[derive(Debug, clap::Args)]
//! struct Flags {
//!     /// The region this instance serves.
//!     #[arg(long, env = "REFUNDS_REGION", default_value = "eu")]
//!     region: String,
//! }
//!
//! #[ruststream::app(args = Flags)]
//! fn app() -> impl App<State = String> {
//!     RustStream::new(AppInfo::new("refunds", "0.1.0")).on_startup(async move |()| {
//!         Ok::<_, Infallible>(ruststream_runner::args::<Flags>().region.clone())
//!     })
//! }
//! ```
//!
//! Logging goes to stderr through `tracing-subscriber`, filtered by `RUST_LOG` (default
//! `info`). Libraries that log through the `log` crate, pulsar-rs among them, are forwarded
//! into the same log under the same filter, so its reconnects and connection errors show at
//! their level; pulsar-rs's trace records, which print the token it sends, never are. A
//! service that installs its own subscriber (or `log` logger) before `main` keeps it.

pub mod asyncapi;
mod cli;
mod dead_letter_args;
mod flags;
#[cfg(feature = "http")]
mod http;
mod log_bridge;
mod logging;
pub mod on_runtime;
mod replay;
mod run;

pub use cli::{Cli, DeadLetterCommand, ReplayArgs, RunnerCommand};
pub use flags::{args, ServiceFlags};
pub use run::{main, main_with_flags, PUBLISH_WINDOW, SOURCE_PROPERTY};
