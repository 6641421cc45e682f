//! A settlement call, as the machine's parts queue it before it becomes a [`Command`](super::Command).

use alloc::vec::Vec;

use super::BatchSlot;

/// One call on a subscription's consumer, queued inside the machine (the settler's, the entry
/// ledger's); [`SubscriptionMachine::poll`](super::SubscriptionMachine::poll) hands each out as
/// the [`Command`](super::Command) of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Call<Id> {
    /// Acknowledge the message.
    Ack(Id),
    /// Acknowledge one message of an unfinished batched entry at batch-index level.
    AckIndex {
        /// The message.
        id: Id,
        /// Its place in its entry.
        slot: BatchSlot,
        /// The indexes still to acknowledge.
        ack_set: Vec<i64>,
    },
    /// Ask for the message again.
    Nack(Id),
}
