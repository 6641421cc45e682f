//! What a handler returns.
//!
//! A handler answers every delivery with one [`HandlerOutcome`]. The outcome says what the
//! service wants, not which broker call realises it: turning it into a call is the job of
//! [`crate::completion`], so the mapping lives in one place and is tested once.

use core::time::Duration;

/// A handler's answer on one delivery: what becomes of its message.
///
/// Build it with the constructors, which read like the guide: [`HandlerOutcome::ack`],
/// [`HandlerOutcome::retry`], [`HandlerOutcome::retry_after`] and [`HandlerOutcome::drop`],
/// and [`HandlerOutcome::dead_letter`] for a message no retry can help.
/// The enum is `#[non_exhaustive]` so that new outcomes can be added without breaking services
/// that match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[must_use = "a handler outcome does nothing until the framework settles it; return it"]
pub enum HandlerOutcome {
    /// Processed: acknowledge, the message never comes back.
    Ack,
    /// Failed for now: ask the broker to redeliver at once (the redelivery count grows by one on
    /// subscription types that keep it).
    Retry,
    /// Failed for now, and a delivery right away would fail again: keep the message unsettled
    /// in the service for the given time, then ask for a redelivery as [`HandlerOutcome::Retry`]
    /// does.
    RetryAfter(Duration),
    /// Must never be processed: acknowledge so that it is removed. Brokers such as Pulsar have
    /// no verb that rejects a message for good, so dropping is an acknowledgement.
    Drop,
    /// Failed for now, and it should come back much later, whatever happens to the service
    /// meanwhile: republish it to the registration's retry topic, to be delivered after the
    /// given time by the broker, and acknowledge the original once the copy is confirmed.
    RetryLater(Duration),
    /// [`HandlerOutcome::RetryAfter`] with the delay the registration's backoff policy gives
    /// for this delivery's attempt.
    Backoff,
    /// [`HandlerOutcome::RetryLater`] with the delay the registration's backoff policy gives
    /// for this delivery's attempt.
    BackoffLater,
    /// Must never be processed, but must not be lost either: publish it to the registration's
    /// dead-letter topic now, with this reason, and acknowledge it once the broker confirmed
    /// the copy.
    DeadLetter(&'static str),
}

impl HandlerOutcome {
    /// The message was handled; acknowledge it.
    pub const fn ack() -> Self {
        Self::Ack
    }

    /// Ask for an immediate redelivery of the same message.
    pub const fn retry() -> Self {
        Self::Retry
    }

    /// Ask for a redelivery once `delay` has passed.
    ///
    /// The wait happens in the service, on the runtime the broker connected on, because the
    /// broker's negative acknowledgement has no delay of its own. The delay must be shorter than
    /// the subscription's ack timeout, if it has one; see [`crate::completion`].
    pub const fn retry_after(delay: Duration) -> Self {
        Self::RetryAfter(delay)
    }

    /// The message must not be processed again and must not be dead-lettered: acknowledge it.
    #[allow(clippy::should_implement_trait)]
    pub const fn drop() -> Self {
        Self::Drop
    }

    /// Ask for a redelivery once `delay` has passed, kept by the broker rather than in the
    /// service: durable.
    ///
    /// The message is republished to the registration's retry topic (`.retry_topic(..)`) with
    /// the broker's delayed delivery, and the original acknowledged once the broker confirmed
    /// the copy; the subscription reads the retry topic too. Unlike
    /// [`HandlerOutcome::retry_after`] the wait survives a crash or a restart of the service,
    /// and has no bound from the ack timeout. The copy counts as a delivery towards
    /// `max_attempts`, like any other. Without a retry topic the outcome is refused (the
    /// message is left unsettled and comes back; see [`crate::completion`]).
    pub const fn retry_later(delay: Duration) -> Self {
        Self::RetryLater(delay)
    }

    /// Ask for a redelivery after the delay the registration's backoff policy
    /// (`.backoff(Backoff::exponential(..))`) gives for this delivery's attempt, kept in the
    /// service as [`HandlerOutcome::retry_after`] keeps it: so it too must end before the ack
    /// timeout (a policy whose cap does not is refused at startup, unless the registration has
    /// a retry topic for [`HandlerOutcome::backoff_later`]).
    pub const fn backoff() -> Self {
        Self::Backoff
    }

    /// Ask for a redelivery after the delay the registration's backoff policy gives for this
    /// delivery's attempt, kept by the broker as [`HandlerOutcome::retry_later`] keeps it.
    pub const fn backoff_later() -> Self {
        Self::BackoffLater
    }

    /// The message is poison (a retry cannot help) but must be kept for a person or a later
    /// replay: publish it to the dead-letter topic now, whatever its attempts, and
    /// acknowledge it once the copy is confirmed.
    ///
    /// `reason` is a short, stable word (`"card-declined"`), written to the copy's
    /// `DEAD_LETTER_REASON` property so that dead letters can be counted and filtered by it;
    /// the detail of one message belongs in the error returned with it
    /// ([`Answer::because`]), which goes to `DEAD_LETTER_ERROR`. The handler must declare
    /// that it dead-letters (`#[subscriber(.., dead_letter)]`) and its registration a topic
    /// (`.dead_letter("topic")`): the service refuses to start with one and not the other.
    pub const fn dead_letter(reason: &'static str) -> Self {
        Self::DeadLetter(reason)
    }

    /// A short, stable name for logs and metrics: `ack`, `retry`, `retry_after`,
    /// `retry_later`, `backoff`, `backoff_later`, `drop` or `dead_letter`.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Retry => "retry",
            Self::RetryAfter(_) => "retry_after",
            Self::RetryLater(_) => "retry_later",
            Self::Backoff => "backoff",
            Self::BackoffLater => "backoff_later",
            Self::Drop => "drop",
            Self::DeadLetter(_) => "dead_letter",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each variant has its own name, so this also catches a constructor that builds the wrong
    /// variant; that `retry_after` keeps its delay is checked by the completion table's tests.
    #[test]
    fn names_are_the_constructor_names() {
        assert_eq!(HandlerOutcome::ack().name(), "ack");
        assert_eq!(HandlerOutcome::retry().name(), "retry");
        assert_eq!(
            HandlerOutcome::retry_after(Duration::ZERO).name(),
            "retry_after"
        );
        assert_eq!(HandlerOutcome::drop().name(), "drop");
        assert_eq!(
            HandlerOutcome::retry_later(Duration::ZERO).name(),
            "retry_later"
        );
        assert_eq!(HandlerOutcome::backoff().name(), "backoff");
        assert_eq!(HandlerOutcome::backoff_later().name(), "backoff_later");
        assert_eq!(HandlerOutcome::dead_letter("poison").name(), "dead_letter");
        assert_eq!(
            HandlerOutcome::dead_letter("poison"),
            HandlerOutcome::DeadLetter("poison")
        );
    }
}

/// What a handler's return becomes: an outcome, and the error that led to it, if any (logged
/// with the delivery, never sent anywhere).
#[derive(Debug)]
#[non_exhaustive]
pub struct Answer {
    /// What becomes of the message.
    pub outcome: HandlerOutcome,
    /// Why, when the handler returned an error.
    pub error: Option<alloc::boxed::Box<dyn core::error::Error + Send + Sync>>,
}

impl Answer {
    /// `outcome`, for no error.
    pub fn new(outcome: HandlerOutcome) -> Self {
        Answer {
            outcome,
            error: None,
        }
    }

    /// The same outcome, because of `error`.
    pub fn because(mut self, error: impl core::error::Error + Send + Sync + 'static) -> Self {
        self.error = Some(alloc::boxed::Box::new(error));
        self
    }
}

/// What a handler may return: a [`HandlerOutcome`], or a `Result` of two types that are
/// themselves `IntoOutcome`, so that a handler can use `?`.
///
/// - `HandlerOutcome`: as it is.
/// - `Result<T, E>`: `Ok(t)` as `t` says, `Err(e)` as `e` says (its [`Answer`] keeps the error,
///   which is logged with the delivery).
/// - `Box<dyn Error + Send + Sync>` (any error, boxed by `?`): [`HandlerOutcome::retry`], the
///   error logged. `Result<HandlerOutcome, Box<dyn Error + Send + Sync>>` lets a handler use
///   `?` on any fallible call.
/// - A service's own error type says what each of its variants becomes by implementing this
///   trait:
///
/// ```
/// use std::time::Duration;
/// use ruststream::outcome::{Answer, IntoOutcome};
/// use ruststream::HandlerOutcome;
///
/// #[derive(Debug, thiserror::Error)]
/// enum Refusal {
///     #[error("rate limited")]
///     Busy,
///     #[error("card declined")]
///     Declined,
/// }
///
/// impl IntoOutcome for Refusal {
///     fn into_outcome(self) -> Answer {
///         let outcome = match self {
///             Refusal::Busy => HandlerOutcome::retry_after(Duration::from_secs(30)),
///             Refusal::Declined => HandlerOutcome::drop(),
///         };
///         Answer::new(outcome).because(self)
///     }
/// }
///
/// // A handler may now return `Result<HandlerOutcome, Refusal>` and use `?`.
/// let answer = Err::<HandlerOutcome, _>(Refusal::Declined).into_outcome();
/// assert_eq!(answer.outcome, HandlerOutcome::drop());
/// assert_eq!(answer.error.unwrap().to_string(), "card declined");
/// ```
#[diagnostic::on_unimplemented(
    message = "a handler cannot return `{Self}`",
    label = "the handler's return type",
    note = "return a `HandlerOutcome`, or `Result<HandlerOutcome, E>` where `E` implements \
            `IntoOutcome` (`Box<dyn Error + Send + Sync>` and `PublishError` do: an error \
            becomes `retry()`), or implement `ruststream::outcome::IntoOutcome` for your own \
            error type"
)]
pub trait IntoOutcome {
    /// The outcome, and the error behind it if any.
    fn into_outcome(self) -> Answer;
}

impl IntoOutcome for HandlerOutcome {
    #[inline]
    fn into_outcome(self) -> Answer {
        Answer::new(self)
    }
}

impl IntoOutcome for Answer {
    #[inline]
    fn into_outcome(self) -> Answer {
        self
    }
}

impl<T: IntoOutcome, E: IntoOutcome> IntoOutcome for Result<T, E> {
    #[inline]
    fn into_outcome(self) -> Answer {
        match self {
            Ok(value) => value.into_outcome(),
            Err(error) => error.into_outcome(),
        }
    }
}

impl IntoOutcome for alloc::boxed::Box<dyn core::error::Error + Send + Sync> {
    fn into_outcome(self) -> Answer {
        Answer {
            outcome: HandlerOutcome::retry(),
            error: Some(self),
        }
    }
}

/// A publish that failed ([`Publisher::publish`](crate::Publisher::publish) or
/// `publish_for_id`, with `?`): [`HandlerOutcome::retry`], the error logged, as the machine does with a delivery whose
/// publish failed after its handler returned. A message that cannot be sent the same way
/// every time (encoding, topic name) then reaches the dead-letter topic at the attempt limit.
impl IntoOutcome for crate::publish::PublishError {
    fn into_outcome(self) -> Answer {
        Answer::new(HandlerOutcome::retry()).because(self)
    }
}

#[cfg(test)]
mod into_outcome_tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::string::ToString;

    #[test]
    fn a_boxed_error_is_a_retry_that_keeps_the_error() {
        let failed: Result<HandlerOutcome, Box<dyn core::error::Error + Send + Sync>> =
            Err("the processor did not answer".into());
        let answer = failed.into_outcome();
        assert_eq!(answer.outcome, HandlerOutcome::retry());
        assert_eq!(
            answer.error.map(|e| e.to_string()).as_deref(),
            Some("the processor did not answer")
        );
        let ok: Result<HandlerOutcome, Box<dyn core::error::Error + Send + Sync>> =
            Ok(HandlerOutcome::ack());
        let answer = ok.into_outcome();
        assert_eq!(answer.outcome, HandlerOutcome::ack());
        assert!(answer.error.is_none());
    }
}
