//! Why an outcome could not be honoured.

use alloc::sync::Arc;
use core::time::Duration;

/// An outcome the subscription cannot honour. The delivery it came with is left unsettled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettlementError {
    /// `retry_after(delay)` on a subscription whose ack timeout is not longer than the delay:
    /// the client's ack-timeout timer would bring the message back before the wait ends, so
    /// the wait would be a lie.
    #[error(
        "subscription `{subscription}`: the handler returned retry_after({delay:?}), \
         but the subscription's ack_timeout is {ack_timeout:?}, and a wait must be \
         shorter than the ack timeout (the client would redeliver the message first); \
         the delivery is left unsettled and comes back after the ack timeout. Return a \
         delay shorter than {ack_timeout:?}, or raise the subscription's ack_timeout \
         above {delay:?}"
    )]
    DelayNotShorterThanAckTimeout {
        /// The subscription the handler is mounted on.
        subscription: Arc<str>,
        /// The delay the handler asked for.
        delay: Duration,
        /// The subscription's ack timeout.
        ack_timeout: Duration,
    },
    /// `backoff()` or `backoff_later()` on a subscription with no backoff policy.
    #[error(
        "subscription `{subscription}`: the handler returned {outcome}(), but the \
         registration declares no backoff policy to take the delay from; the delivery is left \
         unsettled and comes back (after the ack timeout, or when the consumer reconnects). \
         Declare one, e.g. `.backoff(Backoff::exponential(Duration::from_secs(1), \
         Duration::from_secs(30)))`, or return a delay of your own"
    )]
    NoBackoffPolicy {
        /// The subscription the handler is mounted on.
        subscription: Arc<str>,
        /// `backoff` or `backoff_later`.
        outcome: &'static str,
    },
    /// `retry_later(delay)` on a subscription with no retry topic: nowhere to keep the message
    /// durably, and a wait in the service would not be the durable one asked for.
    #[error(
        "subscription `{subscription}`: the handler returned retry_later({delay:?}), but the \
         subscription has no retry topic; the delivery is left unsettled and comes back \
         (after the ack timeout, or when the consumer reconnects). Declare one on the \
         registration, `.retry_topic(\"<topic>\")`, or return retry_after({delay:?}) for a \
         wait kept in the service"
    )]
    NoRetryTopic {
        /// The subscription the handler is mounted on.
        subscription: Arc<str>,
        /// The delay the handler asked for.
        delay: Duration,
    },
    /// `dead_letter(reason)` on a subscription with no dead-letter topic: nowhere to put the
    /// message, and dropping it would lose it.
    #[error(
        "subscription `{subscription}`: the handler returned dead_letter(\"{reason}\"), but \
         the subscription has no dead-letter topic; the delivery is left unsettled and comes \
         back (after the ack timeout, or when the consumer reconnects). Declare one on the \
         registration, `.dead_letter(\"<topic>\")`, and `dead_letter` in the handler's \
         `#[subscriber(.., dead_letter)]` so that startup checks it"
    )]
    NoDeadLetterTopic {
        /// The subscription the handler is mounted on.
        subscription: Arc<str>,
        /// The reason the handler gave.
        reason: &'static str,
    },
}
