//! W3C trace context, as a layer.

use ruststream::message::Message;
use ruststream::middleware::{Delivery, Flow, Hooks, Layer};
use ruststream::PublishError;

/// Continues the trace a delivery's properties carry (`traceparent`, `tracestate`) as the
/// parent of its span, and writes the current span's trace context into every message
/// published, through OpenTelemetry (feature `otel`; without it the layer does nothing).
/// Put it inside [`Tracing`](super::Tracing), which makes the span it continues.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceContext;

impl Layer for TraceContext {
    fn hooks(&self) -> Hooks {
        Hooks::BEFORE.and(Hooks::PUBLISH)
    }

    fn before(&self, delivery: &mut Delivery<'_>) -> Flow {
        crate::trace_context::continue_from(delivery.span(), delivery.message().properties);
        Flow::Next
    }

    fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        crate::trace_context::inject(&mut message.properties);
        Ok(())
    }
}
