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
//! Where an outcome becomes a consumer call: `src/driver/run.rs`, which feeds each handler's
//! outcome to the core's subscription machine (`ruststream::machine::SubscriptionMachine`) and
//! makes the calls it yields on the consumer.
//! `docs/architecture.md` walks the layers.
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
mod driver;
mod inprocess;
pub mod layers;
mod message_id;
pub mod metric;
pub mod prelude;
mod registration;
mod remote;
pub mod replay;
mod replay_loop;
mod report;
mod schema;
mod subscription;
#[cfg(feature = "testing")]
pub mod testing;
mod topic;
mod trace_context;
mod transaction;
mod translate;
mod transport;
mod url;

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

/// pulsar-rs, re-exported so that a service uses the exact version this crate was built with.
pub use pulsar;
