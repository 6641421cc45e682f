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

/// Say what became of the copy of a delivery the machine ordered (`republish`, to `to`).
pub(crate) fn republished(
    republish: &ruststream::completion::Republish,
    to: &str,
    result: &Result<ruststream::MessageId, ruststream::PublishError>,
) {
    use ruststream::completion::Republish;
    match (result, republish) {
        (Ok(copy_id), Republish::DeadLetter { reason }) => tracing::warn!(
            reason,
            dead_letter_topic = %to,
            copy_id = %copy_id,
            "moved to the dead-letter topic"
        ),
        (Ok(copy_id), _) => {
            tracing::debug!(retry_topic = %to, copy_id = %copy_id, "republished to the retry topic")
        }
        (Err(error), republish) => {
            let which = match republish {
                Republish::DeadLetter { .. } => "dead-letter",
                _ => "retry",
            };
            tracing::error!(
                %error,
                topic = %to,
                "could not publish to the {which} topic; the delivery is left unacknowledged \
                 and comes back"
            );
        }
    }
}
