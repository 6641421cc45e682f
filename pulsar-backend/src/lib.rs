//! # ruststream on Apache Pulsar
//!
//! The broker crate: it connects the runtime-free core to pulsar-rs. This is the one place where
//! the core's decisions meet the client's calls. For now it holds the translation of the core's
//! registration results into pulsar-rs consumer settings; the consumer driver, publishing and
//! the broker handle follow.

mod translate;

pub use translate::{dead_letter_policy, sub_type};

/// pulsar-rs, re-exported so that a service uses the exact version this crate was built with.
pub use pulsar;
