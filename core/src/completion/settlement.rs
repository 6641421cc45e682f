//! The decision for one delivery.

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
}
