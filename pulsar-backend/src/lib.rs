//! # ruststream on Apache Pulsar
//!
//! The Pulsar broker of ruststream: mount `#[subscriber]` handlers with [`PulsarBroker`], and
//! test the same app in process with `testing::TestApp` (feature `testing`). A service imports
//! the prelude:
//!
//! ```
//! use ruststream_pulsar::prelude::*;
//! ```
//!
//! This crate holds Pulsar's ports (pulsar-rs's and the in-process Pulsar's consumers,
//! publishers and transactions), its configuration and its registration checks. What an
//! outcome becomes is decided by the core's subscription machine
//! (`ruststream::broker::machine::SubscriptionMachine`), and carried to the consumer by the
//! broker-neutral driver (`ruststream_driver`). `docs/architecture.md` walks the layers.
//!
//! Features: `tokio` (default) runs pulsar-rs's tokio transport; `async-std` runs its async-std
//! transport (async-io sockets, which work under smol as well), and `smol` is an alias of
//! `async-std`; a service on smol builds with `default-features = false, features = ["smol"]`
//! and compiles no tokio. `testing` adds `TestApp` and `LiveApp`. `otel` carries W3C trace
//! context (`traceparent`) from publish to consume through `tracing-opentelemetry`.

// `smol` is an alias of `async-std`: the code asks for `async-std` only.
#[cfg(not(any(feature = "tokio", feature = "async-std")))]
compile_error!(
    "rstream-pulsar needs a runtime feature for pulsar-rs: enable `tokio` (the default), \
     `smol` or `async-std`"
);

mod broker;
mod chunked;
mod credentials;
mod inprocess;
pub mod layers;
mod message_id;
pub mod prelude;
mod registration;
mod remote;
pub mod replay;
mod replay_loop;
mod republish;
mod schema;
mod subscription;
#[cfg(feature = "testing")]
pub mod testing;
mod topic;
mod translate;
mod transport;
mod url;

/// The names of the metrics the drivers and the built-in `Metrics` layer record (the
/// driver's, the same for every broker).
pub use ruststream_driver::metric;

pub use broker::{
    PulsarBroker, PulsarOverrides, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_SUBSCRIPTION, SETTINGS,
};
pub use chunked::{INCOMPLETE_CHUNKED_MESSAGE_EXPIRY, MAX_PENDING_CHUNKED_MESSAGES};
pub use credentials::OAuth2;
pub use inprocess::{InProcessPulsar, TopicMessage};
pub use registration::Mounted;
pub use ruststream_pulsar_model::{
    HashingScheme, InitialPosition, Retention, TopicName, TopicNameError,
};
pub use subscription::{
    PulsarDescriptor, PulsarSubscription, DEFAULT_CONCURRENCY, DEFAULT_PATTERN_REFRESH,
};
pub(crate) use translate::sub_type;
pub use url::BadUrl;
