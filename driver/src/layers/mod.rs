//! The layers a broker puts around its handlers unless told otherwise, on the core's
//! middleware API (`ruststream::middleware`): the delivery span and the lines about how each
//! call ended ([`Tracing`]), W3C trace context carried in message properties
//! ([`TraceContext`], feature `otel`), and the per-delivery metrics ([`Metrics`]).
//!
//! They are the outermost layers of every registration, in that order; a service edits them
//! with its broker's `builtins` (drop one, replace one with its own, reorder them) and adds its
//! own further in. They are ordinary layers: a driver runs them through the same
//! [`Stack`] as any other. What the driver itself counts (settlement calls, publish failures,
//! refused outcomes, the gauges) is the driver's, not a layer's: it is about the consumer, not
//! the handler.

mod metrics;
mod trace_context;
mod tracing;

use ruststream::middleware::Stack;

pub use self::metrics::Metrics;
pub use self::trace_context::TraceContext;
pub use self::tracing::Tracing;

/// The built-in layers, outermost first: [`Tracing`], [`TraceContext`] (with the `otel`
/// feature; without it the layer has nothing to do and is left out), [`Metrics`].
pub fn builtins() -> Stack {
    let stack = Stack::new().push(Tracing);
    #[cfg(feature = "otel")]
    let stack = stack.push(TraceContext);
    stack.push(Metrics)
}
