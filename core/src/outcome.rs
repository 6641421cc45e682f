//! What a handler returns.
//!
//! A handler answers every delivery with one [`HandlerOutcome`]. The outcome says what the
//! service wants, not which broker call realises it: turning it into a call is the job of
//! [`crate::completion`], so the mapping lives in one place and is tested once.

use core::time::Duration;

/// A handler's verdict on one delivery.
///
/// Build it with the constructors, which read like the guide: [`HandlerOutcome::ack`],
/// [`HandlerOutcome::retry`], [`HandlerOutcome::retry_after`] and [`HandlerOutcome::drop`].
/// The enum is `#[non_exhaustive]` so that new verdicts can be added without breaking services
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

    /// A short, stable name for logs and metrics: `ack`, `retry`, `retry_after` or `drop`.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Retry => "retry",
            Self::RetryAfter(_) => "retry_after",
            Self::Drop => "drop",
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
    }
}
