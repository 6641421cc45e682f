//! The layers every Pulsar broker puts around its handlers unless told otherwise: the
//! delivery span and the lines about how each call ended ([`Tracing`]), W3C trace context
//! carried in message properties ([`TraceContext`], feature `otel`), and the per-delivery
//! metrics ([`Metrics`]). They are the driver's, the same for every broker
//! (`ruststream_driver::layers`).
//!
//! They are the outermost layers of every registration, in that order; a service edits them
//! with `PulsarBroker::builtins` (drop one, replace one with its own, reorder them) and adds
//! its own with `RustStream::layer`, `PulsarBroker::layer` and `Mounted::layer`, further in.

use std::sync::Arc;

use ruststream::middleware::Layer;

pub use ruststream_driver::layers::{builtins, Metrics, TraceContext, Tracing};

/// A layer a test harness hands the brokers it starts, through the start context: put just
/// inside the built-ins (its recorder sees every delivery, as the handler's own layers do).
#[derive(Clone)]
pub(crate) struct HarnessLayer(pub(crate) Arc<dyn Layer>);
