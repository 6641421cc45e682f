//! How a delivery's handling ended, as the dispatcher reports it.

use crate::HandlerOutcome;

/// The end of one handler invocation.
///
/// Only [`Completion::Returned`] carries an outcome. [`Completion::DeadLettered`] and
/// [`Completion::Rescheduled`] are acknowledged. The others mean "no outcome": the delivery is left unsettled and the broker
/// brings it back (after the ack timeout, or when the consumer disconnects). They are told
/// apart because logs and counters should say why ([`Completion::label`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completion {
    /// The handler returned this outcome.
    Returned(HandlerOutcome),
    /// The handler panicked.
    Panicked,
    /// The message was published to the subscription's dead-letter topic instead of being
    /// handled (out of attempts, or a payload that does not decode): it is acknowledged.
    DeadLettered,
    /// The handler returned [`HandlerOutcome::RetryLater`] and the copy was published to the
    /// retry topic, to be delivered after its delay: the original is acknowledged.
    Rescheduled,
    /// The handler could not start: the payload did not decode, or a parameter could not be
    /// extracted. Treated as no outcome so that nothing is lost and nothing loops hot: the
    /// message returns after the ack timeout and, with a dead-letter policy, ends on the
    /// dead-letter topic once its attempts are spent.
    Rejected,
}

impl Completion {
    /// A short name for logs and metric labels: the outcome's name (`ack`, `retry`, ...) for
    /// [`Completion::Returned`], else `panicked`, `dead_lettered`, `rescheduled` or `rejected`.
    pub fn label(&self) -> &'static str {
        match self {
            Completion::Returned(outcome) => outcome.name(),
            Completion::Panicked => "panicked",
            Completion::DeadLettered => "dead_lettered",
            Completion::Rescheduled => "rescheduled",
            Completion::Rejected => "rejected",
        }
    }
}

impl From<HandlerOutcome> for Completion {
    fn from(outcome: HandlerOutcome) -> Self {
        Completion::Returned(outcome)
    }
}
