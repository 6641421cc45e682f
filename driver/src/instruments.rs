//! The driver's metrics: the handles one driver records through (their names are
//! `crate::metric`'s).

use metrics::{Counter, Gauge};

use crate::metric;

/// The settlement calls, as the `call` label says them.
const CALL_LABELS: [&str; 5] = ["ack", "nack", "ack_index", "commit", "abort"];

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
    /// A transactional delivery's acknowledgement in its transaction, and the commit.
    Commit = 3,
    /// A transactional delivery's transaction aborted.
    Abort = 4,
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
        assert_eq!(SettlementCall::Commit.label(), "commit");
        assert_eq!(SettlementCall::Abort.label(), "abort");
    }
}
