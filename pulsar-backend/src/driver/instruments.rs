//! The driver's metrics: their names, and the handles one driver records through.

/// The metrics every driver reports through the `metrics` facade; a service exports them by
/// installing a recorder (Prometheus, StatsD, ...). Without one they cost a no-op call.
pub mod metric {
    /// Counter, label `handler`: deliveries handed to the handler.
    pub const DELIVERIES: &str = "ruststream_deliveries_total";
    /// Counter, labels `handler` and `outcome` (`ack`, `retry`, `retry_after`, `drop`,
    /// `panicked`, `rejected`, `dead_lettered`, `rescheduled` (republished by `retry_later`),
    /// and `dead_letter`, `retry_later`, `backoff` or `backoff_later` for such an outcome
    /// refused for want of its topic or policy):
    /// how deliveries ended.
    pub const OUTCOMES: &str = "ruststream_outcomes_total";
    /// Counter, labels `handler`, `call` (`ack`, `nack`, `ack_index`) and `result` (`ok`,
    /// `error`): the messages settled through calls on the consumer, one for each message of a
    /// grouped call.
    pub const CALLS: &str = "ruststream_settlement_calls_total";
    /// Counter, labels `handler` and `call` (`ack`, `nack`, `ack_index`): the calls made on the
    /// consumer, each one broker command per topic. The acknowledgements due at one flush (what
    /// settled while the driver had events ready) go as one call, and so do the negative ones:
    /// under load this is far below [`CALLS`].
    pub const COMMANDS: &str = "ruststream_settlement_commands_total";
    /// Counter, label `handler`: outcomes refused (a `retry_after` not shorter than the ack
    /// timeout, a `dead_letter` or `retry_later` without its topic); the delivery was left
    /// unsettled.
    pub const REFUSED: &str = "ruststream_refused_outcomes_total";
    /// Counter, label `handler`: deliveries the client could not read (a compression it
    /// cannot undo, corrupt bytes, a batch that does not parse); each also ends as `rejected`
    /// or `dead_lettered` in [`OUTCOMES`].
    pub const UNREADABLE: &str = "ruststream_unreadable_messages_total";
    /// Counter, label `handler`: messages a handler published that the broker did not store;
    /// each delivery that published one is not acknowledged and comes back as `retry()`
    /// does.
    pub const PUBLISH_FAILURES: &str = "ruststream_publish_failures_total";
    /// Gauge, label `handler`: deliveries whose handler ended and whose acknowledgement waits
    /// for the broker to confirm what it published (or the copy the outcome called for).
    pub const AWAITING_PUBLISHES: &str = "ruststream_awaiting_publishes";
    /// Gauge, label `handler`: deliveries in a `retry_after` wait.
    pub const WAITING: &str = "ruststream_retry_after_waiting";
    /// Gauge, label `handler`: deliveries whose handler is running now.
    pub const IN_FLIGHT: &str = "ruststream_in_flight_deliveries";
    /// Histogram, label `handler`: how long each handler call took, in seconds, on the app's
    /// clock (OpenTelemetry's `messaging.process.duration`).
    pub const DURATION: &str = "ruststream_process_duration_seconds";
}

use metrics::{Counter, Gauge, Histogram};
use ruststream::completion::Completion;
use ruststream::HandlerOutcome;

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
    /// `[call]`.
    commands: [Counter; CALL_LABELS.len()],
    pub(crate) refused: Counter,
    pub(crate) unreadable: Counter,
    pub(crate) publish_failures: Counter,
    pub(crate) awaiting: Gauge,
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
            commands: CALL_LABELS.map(|call| {
                metrics::counter!(metric::COMMANDS, "handler" => handler, "call" => call)
            }),
            refused: metrics::counter!(metric::REFUSED, "handler" => handler),
            unreadable: metrics::counter!(metric::UNREADABLE, "handler" => handler),
            publish_failures: metrics::counter!(metric::PUBLISH_FAILURES, "handler" => handler),
            awaiting: metrics::gauge!(metric::AWAITING_PUBLISHES, "handler" => handler),
            waiting: metrics::gauge!(metric::WAITING, "handler" => handler),
            in_flight: metrics::gauge!(metric::IN_FLIGHT, "handler" => handler),
            duration: metrics::histogram!(metric::DURATION, "handler" => handler),
        }
    }

    /// The counter of deliveries that ended as `completion` (labelled as [`Completion::label`]
    /// says). Indexed by a match, not by comparing label text: it runs for every delivery.
    #[inline]
    pub(crate) fn outcome(&self, completion: &Completion) -> &Counter {
        &self.outcomes[outcome_index(completion)]
    }

    /// The counter of `call`s that ended `ok` or not.
    #[inline]
    pub(crate) fn call(&self, call: SettlementCall, ok: bool) -> &Counter {
        &self.calls[call as usize][usize::from(!ok)]
    }

    /// The counter of consumer calls (broker commands) of kind `call`.
    #[inline]
    pub(crate) fn command(&self, call: SettlementCall) -> &Counter {
        &self.commands[call as usize]
    }
}

/// Where `completion`'s label is in [`OUTCOME_LABELS`]: a match, not a comparison of label
/// text, as it runs for every delivery.
#[inline]
fn outcome_index(completion: &Completion) -> usize {
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

/// A settlement call the driver makes on its consumer, as the `call` label of
/// [`metric::CALLS`] names it (the discriminant is its place in the label list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SettlementCall {
    Ack = 0,
    Nack = 1,
    AckIndex = 2,
}

impl SettlementCall {
    /// Its `call` label.
    pub(crate) fn label(self) -> &'static str {
        CALL_LABELS[self as usize]
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

    #[test]
    fn every_settlement_call_is_counted_under_its_own_label() {
        assert_eq!(SettlementCall::Ack.label(), "ack");
        assert_eq!(SettlementCall::Nack.label(), "nack");
        assert_eq!(SettlementCall::AckIndex.label(), "ack_index");
    }
}
