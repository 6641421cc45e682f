//! W3C trace context across services: written into the properties of what a service publishes
//! (`traceparent`, `tracestate`) and continued as the parent of the delivery span on consume,
//! through OpenTelemetry and `tracing-opentelemetry` (feature `otel`). Without the feature both
//! steps do nothing.
//!
//! The service installs the `tracing-opentelemetry` layer with its exporter (OTLP, or an
//! in-memory one in tests); spans without it carry no OpenTelemetry context, and nothing is
//! written.

#[cfg(feature = "otel")]
mod w3c {
    use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct Write<'a>(&'a mut Vec<(String, String)>);

    impl Injector for Write<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.retain(|(k, _)| k != key);
            self.0.push((key.to_owned(), value));
        }
    }

    struct Read<'a>(&'a [(String, String)]);

    impl Extractor for Read<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        }

        fn keys(&self) -> Vec<&str> {
            self.0.iter().map(|(k, _)| k.as_str()).collect()
        }
    }

    /// Write the current span's trace context into `properties`, if it has one.
    pub(crate) fn inject(properties: &mut Vec<(String, String)>) {
        let cx = tracing::Span::current().context();
        if cx.span().span_context().is_valid() {
            TraceContextPropagator::new().inject_context(&cx, &mut Write(properties));
        }
    }

    /// Make the trace context in `properties`, if any, the parent of `span`.
    pub(crate) fn continue_from(span: &tracing::Span, properties: &[(String, String)]) {
        let cx = TraceContextPropagator::new().extract(&Read(properties));
        if cx.span().span_context().is_valid() {
            // Fails only when the span is disabled or closed: then there is nothing to link.
            let _ = span.set_parent(cx);
        }
    }
}

#[cfg(feature = "otel")]
pub(crate) use w3c::{continue_from, inject};

/// Without the `otel` feature: nothing to write.
#[cfg(not(feature = "otel"))]
pub(crate) fn inject(_properties: &mut Vec<(String, String)>) {}

/// Without the `otel` feature: nothing to continue.
#[cfg(not(feature = "otel"))]
pub(crate) fn continue_from(_span: &tracing::Span, _properties: &[(String, String)]) {}
