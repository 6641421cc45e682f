//! # ruststream on Apache Pulsar
//!
//! The Pulsar broker of ruststream: mount `#[subscriber]` handlers with [`PulsarBroker`], and
//! test the same app in process with [`TestApp`]. A service imports the prelude:
//!
//! ```
//! use ruststream_pulsar::prelude::*;
//! ```
//!
//! Where an outcome becomes a consumer call: `src/driver/run.rs`, which feeds each handler's
//! outcome to the core's `Settler` and makes the calls it yields on the consumer.

mod broker;
mod driver;
mod inprocess;
mod observe;
pub mod prelude;
mod remote;
mod subscription;
pub mod testing;
mod translate;
mod url;

pub use broker::{
    Include, PulsarBroker, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SHUTDOWN_GRACE, DEFAULT_SUBSCRIPTION,
};
pub use driver::metric;
pub use inprocess::InProcessPulsar;
pub use observe::CallRecord;
pub use ruststream_pulsar_model::{TopicName, TopicNameError};
pub use subscription::{PulsarSubscription, DEFAULT_CONCURRENCY};
pub use testing::TestApp;
pub use translate::sub_type;
pub use url::BadUrl;

/// pulsar-rs, re-exported so that a service uses the exact version this crate was built with.
pub use pulsar;
