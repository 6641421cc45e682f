//! A call the driver makes on its consumer.

use alloc::vec::Vec;

use super::BatchSlot;
use crate::publish::Token;

/// One call on a subscription's consumer, from
/// [`SubscriptionMachine::poll_call`](super::SubscriptionMachine::poll_call).
///
/// Exhaustive on purpose, unlike the crate's other public enums: a driver matches every
/// call, so that a call added here fails to compile in each driver until it makes it, rather
/// than compiling and never reaching the consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call<Id> {
    /// Acknowledge the message (Pulsar: `ack_with_id`).
    Ack(Id),
    /// Acknowledge one message of a batched entry that is not finished yet at batch-index
    /// level: `ack_set` has a bit set for every index of the entry not settled yet, 64 a word,
    /// as Pulsar's batch-index acknowledgement (PIP-54) takes it.
    AckIndex {
        /// The message.
        id: Id,
        /// Its place in its entry.
        slot: BatchSlot,
        /// The indexes still to acknowledge.
        ack_set: Vec<i64>,
    },
    /// Ask for the message again (Pulsar: `nack_with_id`).
    Nack(Id),
    /// Acknowledge the messages in transaction `token`, then commit it (a transactional
    /// registration): what their handlers published, and the copy ordered for one, become
    /// visible with the acknowledgements. A message of a batched entry is acknowledged at its
    /// index alone ([`BatchSlot::only_this`]). The driver tells the machine how it went with
    /// [`SubscriptionMachine::committed`](super::SubscriptionMachine::committed).
    Commit {
        /// The transaction: the token of the delivery that opened it
        /// ([`SubscriptionMachine::transaction_of`](super::SubscriptionMachine::transaction_of)),
        /// or of the delivery whose copy it holds.
        token: Token,
        /// The messages, each with its place in a batched entry.
        acks: Vec<(Id, Option<BatchSlot>)>,
    },
    /// Abort transaction `token` (a transactional registration): nothing published in it
    /// becomes visible. The settlements of its deliveries follow as the completion table says.
    Abort(Token),
}
