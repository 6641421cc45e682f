//! The delivery span, and the lines about how each handler call ended.

use std::fmt::Display;
use std::sync::Arc;

use ruststream::completion::Completion;
use ruststream::middleware::{Delivery, End, Flow, Hooks, Layer, Mounting};
use ruststream::HandlerOutcome;

use crate::report;

/// Runs each handler in a `delivery` span (DEBUG: at the default level a successful delivery
/// creates none) named by its handler, topic, message id and redelivery count, and logs how
/// each call ended: a returned error (WARN), a handler that could not run or panicked (ERROR),
/// the outcome (DEBUG). Warnings and errors name their delivery even where the span is off.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tracing;

impl Layer for Tracing {
    fn hooks(&self) -> Hooks {
        Hooks::BEFORE.and(Hooks::AFTER)
    }

    fn mount(&self, registration: &Mounting<'_>) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(TracingFor {
            dead_letter: registration.dead_letter.map(Arc::from),
        }))
    }

    fn before(&self, delivery: &mut Delivery<'_>) -> Flow {
        start_span(delivery);
        Flow::Next
    }

    fn after(&self, delivery: &Delivery<'_>, end: &mut End<'_>) {
        log_end(delivery, end, None);
    }
}

/// [`Tracing`] for one registration: with its dead-letter topic, which the line about a
/// message that cannot be decoded names.
pub(crate) struct TracingFor {
    dead_letter: Option<Arc<str>>,
}

impl Layer for TracingFor {
    fn hooks(&self) -> Hooks {
        Hooks::BEFORE.and(Hooks::AFTER)
    }

    #[inline]
    fn before(&self, delivery: &mut Delivery<'_>) -> Flow {
        start_span(delivery);
        Flow::Next
    }

    #[inline]
    fn after(&self, delivery: &Delivery<'_>, end: &mut End<'_>) {
        log_end(delivery, end, self.dead_letter.as_deref());
    }
}

/// The message id as a line shows it (`-` where the broker gave none).
struct Id<'d, 'a>(&'d Delivery<'a>);

impl Display for Id<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.message().message_id {
            Some(id) => id.fmt(f),
            None => f.write_str("-"),
        }
    }
}

#[inline(always)]
fn start_span(delivery: &mut Delivery<'_>) {
    // Below DEBUG everywhere (the common case in production), one test and no call.
    if ::tracing::level_enabled!(::tracing::Level::DEBUG) {
        start_debug_span(delivery);
    }
}

/// [`start_span`] where DEBUG may be enabled.
#[inline(never)]
fn start_debug_span(delivery: &mut Delivery<'_>) {
    // The message is read only where the span is enabled: the fields are evaluated then.
    let span = ::tracing::debug_span!(
        "delivery",
        handler = delivery.handler(),
        topic = %delivery.message().topic,
        message_id = %Id(delivery),
        redelivery_count = delivery.message().redelivery_count,
    );
    if !span.is_disabled() {
        delivery.set_span(span);
    }
}

/// The line about how a call ended: a DEBUG line for an answer without an error (every
/// delivery's end, checked inline), the rest out of line.
#[inline(always)]
fn log_end(delivery: &Delivery<'_>, end: &End<'_>, dead_letter: Option<&str>) {
    match (end.completion(), end.error().is_some()) {
        (Completion::Returned(outcome), false) => {
            if ::tracing::level_enabled!(::tracing::Level::DEBUG) {
                log_handled(outcome);
            }
        }
        _ => log_unusual_end(delivery, end, dead_letter),
    }
}

/// The DEBUG line about an answer without an error.
#[inline(never)]
fn log_handled(outcome: HandlerOutcome) {
    match outcome {
        HandlerOutcome::RetryAfter(delay) => {
            ::tracing::debug!(outcome = "retry_after", ?delay, "handled")
        }
        outcome => ::tracing::debug!(outcome = outcome.name(), "handled"),
    }
}

/// The lines about a call that returned an error, or could not run or finish.
#[cold]
#[inline(never)]
fn log_unusual_end(delivery: &Delivery<'_>, end: &End<'_>, dead_letter: Option<&str>) {
    let context = || {
        report::context(
            delivery.span(),
            delivery.handler(),
            &delivery.message().topic,
            &Id(delivery),
        )
    };
    match (end.completion(), end.error()) {
        (Completion::Returned(outcome), Some(error)) => {
            let _context = context();
            ::tracing::warn!(%error, outcome = outcome.name(), "handler returned an error");
        }
        (Completion::Undecodable, error) => {
            let _context = context();
            let error = error.map(ToString::to_string).unwrap_or_default();
            match dead_letter {
                Some(dead_letter) => ::tracing::error!(
                    %error,
                    dead_letter_topic = %dead_letter,
                    "the message cannot be read or decoded; it goes to the dead-letter topic \
                     now, as no retry can change that"
                ),
                None => ::tracing::error!(
                    %error,
                    "handler could not run; the delivery is left unacknowledged"
                ),
            }
        }
        (Completion::Rejected, error) => {
            let _context = context();
            let error = error.map(ToString::to_string).unwrap_or_default();
            ::tracing::error!(%error, "handler could not run; the delivery is left unacknowledged");
        }
        (Completion::Panicked, _) => {
            let _context = context();
            ::tracing::error!("handler panicked; the delivery is left unacknowledged");
        }
        // Out of attempts: the line is the copy's, once it is confirmed. (An answer without
        // an error is `log_end`'s.)
        _ => {}
    }
}
