//! The per-delivery metrics, as a layer.

use std::sync::Arc;

use metrics::{Counter, Histogram};
use ruststream::completion::Completion;
use ruststream::middleware::{Delivery, End, Flow, Hooks, Layer, Mounting};
use ruststream::HandlerOutcome;

use crate::metric;

/// Counts each handler's deliveries ([`metric::DELIVERIES`]), the unreadable ones
/// ([`metric::UNREADABLE`]) and how they ended ([`metric::OUTCOMES`]), and records how long
/// each call took ([`metric::DURATION`]), through the `metrics` facade. Its handles are made
/// once per handler, when its driver starts: a delivery costs no look-up and no allocation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Metrics;

impl Layer for Metrics {
    fn hooks(&self) -> Hooks {
        Hooks::BEFORE.and(Hooks::COMPLETED)
    }

    fn mount(&self, registration: &Mounting<'_>) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(HandlerMetrics::new(registration.handler)))
    }
}

/// How a delivery ended, as the `outcome` label says it.
const OUTCOME_LABELS: [&str; 12] = [
    "ack",
    "retry",
    "retry_after",
    "drop",
    "panicked",
    "rejected",
    "dead_lettered",
    // `dead_letter` returned where there is no dead-letter topic: refused, left unsettled.
    "dead_letter",
    // Republished to the retry topic by `retry_later`, and acknowledged.
    "rescheduled",
    // `retry_later` returned where there is no retry topic: refused, left unsettled.
    "retry_later",
    // `backoff()` or `backoff_later()` where there is no backoff policy: refused.
    "backoff",
    "backoff_later",
];

/// [`Metrics`] for one handler: its handles.
pub(crate) struct HandlerMetrics {
    deliveries: Counter,
    unreadable: Counter,
    outcomes: [Counter; OUTCOME_LABELS.len()],
    duration: Histogram,
}

impl HandlerMetrics {
    /// The handles of `handler`, from the recorder installed now.
    fn new(handler: &'static str) -> Self {
        HandlerMetrics {
            deliveries: metrics::counter!(metric::DELIVERIES, "handler" => handler),
            unreadable: metrics::counter!(metric::UNREADABLE, "handler" => handler),
            outcomes: OUTCOME_LABELS.map(|outcome| {
                metrics::counter!(metric::OUTCOMES, "handler" => handler, "outcome" => outcome)
            }),
            duration: metrics::histogram!(metric::DURATION, "handler" => handler),
        }
    }
}

impl Layer for HandlerMetrics {
    fn hooks(&self) -> Hooks {
        Hooks::BEFORE.and(Hooks::COMPLETED)
    }

    #[inline(always)]
    fn before(&self, delivery: &mut Delivery<'_>) -> Flow {
        self.deliveries.increment(1);
        if delivery.unreadable().is_some() {
            self.unreadable.increment(1);
        }
        Flow::Next
    }

    /// The duration too, from the same start and end as `after` would see: one hook call a
    /// delivery rather than two.
    #[inline(always)]
    fn completed(&self, delivery: &Delivery<'_>, end: &End<'_>) {
        if end.by_handler() {
            // Converted to seconds by the handle, only where a recorder takes it.
            self.duration
                .record(end.ended().saturating_duration_since(delivery.started()));
        }
        self.outcomes[outcome_index(&end.completion())].increment(1);
    }
}

/// Where `completion`'s label is in [`OUTCOME_LABELS`]: a match, not a comparison of label
/// text, as it runs for every delivery.
#[inline]
fn outcome_index(completion: &Completion) -> usize {
    // The common end in one test, before the table.
    if matches!(completion, Completion::Returned(HandlerOutcome::Ack)) {
        return 0;
    }
    match completion {
        Completion::Returned(HandlerOutcome::Ack) => 0,
        Completion::Returned(HandlerOutcome::Retry) => 1,
        Completion::Returned(HandlerOutcome::RetryAfter(_)) => 2,
        Completion::Returned(HandlerOutcome::Drop) => 3,
        Completion::Panicked => 4,
        Completion::Rejected => 5,
        Completion::DeadLettered => 6,
        Completion::Returned(HandlerOutcome::DeadLetter(_)) => 7,
        Completion::Rescheduled => 8,
        Completion::Returned(HandlerOutcome::RetryLater(_)) => 9,
        Completion::Returned(HandlerOutcome::Backoff) => 10,
        Completion::Returned(HandlerOutcome::BackoffLater) => 11,
        // A variant added to the core later: found by its label.
        other => OUTCOME_LABELS
            .iter()
            .position(|label| *label == other.label())
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_completion_has_its_own_outcome_counter() {
        let completions = [
            Completion::Returned(HandlerOutcome::ack()),
            Completion::Returned(HandlerOutcome::retry()),
            Completion::Returned(HandlerOutcome::retry_after(std::time::Duration::from_secs(
                1,
            ))),
            Completion::Returned(HandlerOutcome::drop()),
            Completion::Panicked,
            Completion::Rejected,
            Completion::DeadLettered,
            Completion::Returned(HandlerOutcome::dead_letter("poison")),
            Completion::Rescheduled,
            Completion::Returned(HandlerOutcome::retry_later(std::time::Duration::from_secs(
                60,
            ))),
            Completion::Returned(HandlerOutcome::backoff()),
            Completion::Returned(HandlerOutcome::backoff_later()),
        ];
        let labels: Vec<&str> = completions.iter().map(Completion::label).collect();
        assert_eq!(labels, OUTCOME_LABELS, "in the same order, none missing");
        for completion in completions {
            assert_eq!(
                OUTCOME_LABELS[outcome_index(&completion)],
                completion.label(),
                "{completion:?} is counted under its own label"
            );
        }
    }
}
