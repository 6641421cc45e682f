//! The decision for one delivery.

use core::time::Duration;

use crate::Instant;

/// What to do with one delivery, decided by [`SubscriptionRules::settle`](super::SubscriptionRules::settle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Settlement {
    /// Acknowledge (`ack_with_id`): the message is done and never comes back.
    Ack,
    /// Negatively acknowledge now (`nack_with_id`): the broker redelivers at once.
    Nack,
    /// Negatively acknowledge once this instant is reached; until then the delivery stays
    /// unsettled in the service.
    NackAt(Instant),
    /// Make no call. The message stays unacknowledged and the broker's own mechanisms (the ack
    /// timeout, or the consumer's disconnection) bring it back.
    Leave,
    /// Publish a copy of the message to another topic, then acknowledge it once the broker
    /// confirmed the copy (left unsettled, to come back, if the copy failed). Decided by the
    /// subscription machine, which knows the topics the registration declared.
    Republish(Republish),
}

/// Where a message's copy goes, as the subscription machine orders it.
///
/// Exhaustive on purpose: a driver builds every kind of copy, so a kind added here fails to
/// compile in each driver until it builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Republish {
    /// To the dead-letter topic, saying why (Pulsar: `DEAD_LETTER_REASON`).
    DeadLetter {
        /// The handler's reason, or [`OUT_OF_ATTEMPTS`], or [`UNDECODABLE`].
        reason: &'static str,
    },
    /// To the retry topic, for the broker to deliver after `delay` (`retry_later`).
    RetryTopic {
        /// How long the broker holds the copy.
        delay: Duration,
        /// The copy's attempt count (Pulsar: `RECONSUMETIMES`): one more than the delivery's,
        /// so that one count covers every way a message comes back.
        count: u32,
    },
}

/// The dead-letter reason of a message that came back once more than `max_attempts` allows.
pub const OUT_OF_ATTEMPTS: &str = "out-of-attempts";

/// The dead-letter reason of a message whose payload does not decode, or that the client
/// cannot read.
pub const UNDECODABLE: &str = "undecodable";
