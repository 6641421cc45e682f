//! What the broker did with an acknowledgement or a redelivery request.
//!
//! pulsar-rs sends both without checking anything, and the broker answers neither, so the
//! application never learns these; the model reports them so that tests and logs can.

/// What an acknowledgement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Acknowledgement {
    /// The message was unacknowledged on the subscription and now is acknowledged for good,
    /// whichever consumer it had been sent to: Pulsar's individual ack looks the owner up among
    /// all the subscription's consumers (`Consumer.getAckOwnerConsumerAndBatchSize`).
    Acknowledged,
    /// Nothing to do: the message was already acknowledged (or dead-lettered), predates the
    /// subscription, or is not a message of the consumer's topic.
    Ignored,
}

/// What a redelivery request (a negative acknowledgement or an expired ack timeout) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Redelivery {
    /// Shared or KeyShared: at least one of the messages was pending on this consumer; it goes
    /// back to the subscription with its redelivery count increased by one and is delivered
    /// again to an eligible consumer as soon as one has a permit.
    Scheduled,
    /// Exclusive or Failover, from the active consumer: the broker ignores the ids and rewinds
    /// the cursor, so every unacknowledged message is sent again, in order, with count 0.
    Rewound,
    /// Nothing to do: on Shared/KeyShared none of the ids was pending on this consumer (already
    /// acknowledged, redelivered, or sent to another one); on Exclusive/Failover the consumer
    /// is not the active one.
    Ignored,
}
