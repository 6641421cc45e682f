//! How a delivery's handling ended, as the dispatcher reports it.

use crate::handler::Rejection;
use crate::outcome::Answer;
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
    /// The handler could not start: a parameter could not be extracted, or a copy to the
    /// dead-letter or retry topic failed. Treated as no outcome so that nothing is lost and
    /// nothing loops hot: the message returns after the ack timeout and, with a dead-letter
    /// policy, ends on the dead-letter topic once its attempts are spent.
    Rejected,
    /// The handler was not called: the message came back once more than `max_attempts`
    /// allows. It goes to the dead-letter topic.
    OutOfAttempts,
    /// The handler could not start because the payload does not decode into its type, or the
    /// client could not read the message: no retry can change that, so it goes to the
    /// dead-letter topic at once where one is declared, and is no outcome otherwise.
    Undecodable,
}

impl Completion {
    /// How a handler's call ended, as the completion table takes it: the outcome it returned;
    /// for a rejection, [`Completion::Undecodable`] where the payload does not decode or the
    /// client could not read the message (no retry changes that), [`Completion::Rejected`]
    /// otherwise. (A panic is [`Completion::Panicked`].)
    #[inline]
    pub fn of(called: &Result<Answer, Rejection>) -> Self {
        match called {
            Ok(answer) => Completion::Returned(answer.outcome),
            Err(Rejection::Decode { .. } | Rejection::Unreadable { .. }) => Completion::Undecodable,
            Err(_) => Completion::Rejected,
        }
    }

    /// A short name for logs and metric labels: the outcome's name (`ack`, `retry`, ...) for
    /// [`Completion::Returned`], else `panicked`, `dead_lettered`, `rescheduled`, `rejected`,
    /// `out_of_attempts` or `undecodable`.
    #[inline]
    pub fn label(&self) -> &'static str {
        match self {
            Completion::Returned(outcome) => outcome.name(),
            Completion::Panicked => "panicked",
            Completion::DeadLettered => "dead_lettered",
            Completion::Rescheduled => "rescheduled",
            Completion::Rejected => "rejected",
            Completion::OutOfAttempts => "out_of_attempts",
            Completion::Undecodable => "undecodable",
        }
    }

    /// Whether the registration's backoff policy decides what this end becomes
    /// (`backoff()`, `backoff_later()`).
    #[inline]
    pub fn is_backoff(&self) -> bool {
        matches!(
            self,
            Completion::Returned(HandlerOutcome::Backoff | HandlerOutcome::BackoffLater)
        )
    }

    /// Whether the subscription machine may order a copy of the message for this end (to the
    /// dead-letter or the retry topic): the driver then keeps the message's content until the
    /// machine says. Whether it does depends on the topics the registration declared.
    #[inline]
    pub fn may_republish(&self) -> bool {
        matches!(
            self,
            Completion::OutOfAttempts
                | Completion::Undecodable
                | Completion::Returned(
                    HandlerOutcome::DeadLetter(_)
                        | HandlerOutcome::RetryLater(_)
                        | HandlerOutcome::BackoffLater
                )
        )
    }

    /// Whether this end is what the delivery ended as: not when the machine still decides
    /// what it becomes (a copy, a backoff's delay), which it says later.
    #[inline]
    pub fn is_final(&self) -> bool {
        // One test for the common end; the same as `!(may_republish() || is_backoff())`.
        matches!(self, Completion::Returned(HandlerOutcome::Ack))
            || !(self.may_republish() || self.is_backoff())
    }
}

impl From<HandlerOutcome> for Completion {
    fn from(outcome: HandlerOutcome) -> Self {
        Completion::Returned(outcome)
    }
}
