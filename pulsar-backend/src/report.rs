//! The context of a line about one delivery.
//!
//! A delivery's `delivery` span is at DEBUG: at the default INFO level a successful delivery
//! creates no span (with a formatting subscriber, the fields of an INFO span are formatted for
//! every message, whether or not anything is logged in it). Warnings and errors must still name
//! their delivery, so while that span is off they are written inside an INFO span of the same
//! name and fields, made only then.

use std::fmt::Display;

use tracing::span::EnteredSpan;
use tracing::Span;

/// An INFO `delivery` span for one line, entered, if the delivery's own `span` is off.
pub(crate) fn context(
    span: &Span,
    handler: &'static str,
    topic: &dyn Display,
    message_id: &dyn Display,
) -> Option<EnteredSpan> {
    span.is_disabled().then(|| {
        tracing::info_span!(
            "delivery",
            handler,
            topic = %topic,
            message_id = %message_id
        )
        .entered()
    })
}
