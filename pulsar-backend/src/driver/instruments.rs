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

use metrics::{Counter, Gauge};

/// The settlement calls, as the `call` label says them.
const CALL_LABELS: [&str; 3] = ["ack", "nack", "ack_index"];

/// One handler's driver metric handles (the per-delivery ones are the
/// [`Metrics`](crate::layers::Metrics) layer's), registered once when its driver starts: recording a delivery
/// then costs no lookup and no allocation (the `metrics` facade resolves a name and labels on
/// every `counter!` call otherwise).
pub(crate) struct Instruments {
    /// `[call][ok, error]`.
    calls: [[Counter; 2]; CALL_LABELS.len()],
    /// `[call]`.
    commands: [Counter; CALL_LABELS.len()],
    pub(crate) refused: Counter,
    pub(crate) publish_failures: Counter,
    pub(crate) awaiting: Gauge,
    pub(crate) waiting: Gauge,
    pub(crate) in_flight: Gauge,
}

impl Instruments {
    /// The handles of `handler`, from the recorder installed now.
    pub(crate) fn new(handler: &'static str) -> Self {
        Instruments {
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
            commands: CALL_LABELS.map(
                |call| metrics::counter!(metric::COMMANDS, "handler" => handler, "call" => call),
            ),
            refused: metrics::counter!(metric::REFUSED, "handler" => handler),
            publish_failures: metrics::counter!(metric::PUBLISH_FAILURES, "handler" => handler),
            awaiting: metrics::gauge!(metric::AWAITING_PUBLISHES, "handler" => handler),
            waiting: metrics::gauge!(metric::WAITING, "handler" => handler),
            in_flight: metrics::gauge!(metric::IN_FLIGHT, "handler" => handler),
        }
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
    fn every_settlement_call_is_counted_under_its_own_label() {
        assert_eq!(SettlementCall::Ack.label(), "ack");
        assert_eq!(SettlementCall::Nack.label(), "nack");
        assert_eq!(SettlementCall::AckIndex.label(), "ack_index");
    }
}
