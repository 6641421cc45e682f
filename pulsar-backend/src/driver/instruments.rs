//! The driver's metrics: their names, and the handles one driver records through.

/// The metrics every driver reports through the `metrics` facade; a service exports them by
/// installing a recorder (Prometheus, StatsD, ...). Without one they cost a no-op call.
pub mod metric {
    /// Counter, label `handler`: deliveries handed to the handler.
    pub const DELIVERIES: &str = "ruststream_deliveries_total";
    /// Counter, labels `handler` and `outcome` (`ack`, `retry`, `retry_after`, `drop`,
    /// `panicked`, `rejected`, `dead_lettered`): how deliveries ended.
    pub const OUTCOMES: &str = "ruststream_outcomes_total";
    /// Counter, labels `handler`, `call` (`ack`, `nack`) and `result` (`ok`, `error`): the
    /// settlement calls made on the consumer.
    pub const CALLS: &str = "ruststream_settlement_calls_total";
    /// Counter, label `handler`: outcomes refused (a `retry_after` not shorter than the ack
    /// timeout); the delivery was left unsettled.
    pub const REFUSED: &str = "ruststream_refused_outcomes_total";
    /// Gauge, label `handler`: deliveries in a `retry_after` wait.
    pub const WAITING: &str = "ruststream_retry_after_waiting";
    /// Gauge, label `handler`: deliveries whose handler is running now.
    pub const IN_FLIGHT: &str = "ruststream_in_flight_deliveries";
    /// Histogram, label `handler`: how long each handler call took, in seconds, on the app's
    /// clock (OpenTelemetry's `messaging.process.duration`).
    pub const DURATION: &str = "ruststream_process_duration_seconds";
}

use metrics::{Counter, Gauge, Histogram};

/// How a delivery ended, as the `outcome` label says it.
const OUTCOME_LABELS: [&str; 7] = [
    "ack",
    "retry",
    "retry_after",
    "drop",
    "panicked",
    "rejected",
    "dead_lettered",
];

/// The settlement calls, as the `call` label says them.
const CALL_LABELS: [&str; 3] = ["ack", "nack", "ack_index"];

/// One handler's metric handles, registered once when its driver starts: recording a delivery
/// then costs no lookup and no allocation (the `metrics` facade resolves a name and labels on
/// every `counter!` call otherwise).
pub(crate) struct Instruments {
    pub(crate) deliveries: Counter,
    outcomes: [Counter; OUTCOME_LABELS.len()],
    /// `[call][ok, error]`.
    calls: [[Counter; 2]; CALL_LABELS.len()],
    pub(crate) refused: Counter,
    pub(crate) waiting: Gauge,
    pub(crate) in_flight: Gauge,
    pub(crate) duration: Histogram,
}

impl Instruments {
    /// The handles of `handler`, from the recorder installed now.
    pub(crate) fn new(handler: &'static str) -> Self {
        Instruments {
            deliveries: metrics::counter!(metric::DELIVERIES, "handler" => handler),
            outcomes: OUTCOME_LABELS.map(|outcome| {
                metrics::counter!(metric::OUTCOMES, "handler" => handler, "outcome" => outcome)
            }),
            calls: CALL_LABELS.map(|call| {
                ["ok", "error"].map(|result| {
                    metrics::counter!(
                        metric::CALLS,
                        "handler" => handler,
                        "call" => call,
                        "result" => result,
                    )
                })
            }),
            refused: metrics::counter!(metric::REFUSED, "handler" => handler),
            waiting: metrics::gauge!(metric::WAITING, "handler" => handler),
            in_flight: metrics::gauge!(metric::IN_FLIGHT, "handler" => handler),
            duration: metrics::histogram!(metric::DURATION, "handler" => handler),
        }
    }

    /// The counter of deliveries that ended as `outcome` (a label of [`metric::OUTCOMES`]).
    pub(crate) fn outcome(&self, outcome: &str) -> &Counter {
        let at = OUTCOME_LABELS
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(0);
        &self.outcomes[at]
    }

    /// The counter of `call`s (a label of [`metric::CALLS`]) that ended `ok` or not.
    pub(crate) fn call(&self, call: &str, ok: bool) -> &Counter {
        let at = CALL_LABELS.iter().position(|c| *c == call).unwrap_or(0);
        &self.calls[at][usize::from(!ok)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream::completion::Completion;
    use ruststream::HandlerOutcome;

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
        ];
        let labels: Vec<&str> = completions.iter().map(Completion::label).collect();
        assert_eq!(labels, OUTCOME_LABELS, "in the same order, none missing");
    }
}
