//! A consumer call the driver must make now.

/// One call on the subscription's consumer, produced by [`Settler::poll_action`](super::Settler::poll_action).
///
/// `Id` is whatever the driver uses to name a delivery (for Pulsar, the message id).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action<Id> {
    /// Acknowledge the delivery (`ack_with_id`).
    Ack(Id),
    /// Negatively acknowledge the delivery (`nack_with_id`), asking for a redelivery.
    Nack(Id),
}

impl<Id> Action<Id> {
    /// The delivery the call is about.
    pub fn id(&self) -> &Id {
        match self {
            Action::Ack(id) | Action::Nack(id) => id,
        }
    }
}
