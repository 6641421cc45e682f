//! What a subscription holds, for gauges and for a stopping driver.

/// What a subscription holds now, from [`SubscriptionMachine::status`](super::SubscriptionMachine::status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Status {
    /// Handlers running (a batch handler's deliveries each count), and deliveries waiting for
    /// their transaction to open.
    pub running: usize,
    /// Deliveries in a `retry_after` wait.
    pub waiting: usize,
    /// Deliveries whose settlement waits for their publishes' answers (or their copy's).
    pub awaiting_publishes: usize,
    /// Transactions not ended yet: open, opening, or committing.
    pub transactions: usize,
    /// A batch handler's batches running.
    pub batches: usize,
    /// Deliveries gathered for the next batch.
    pub gathered: usize,
    /// Deliveries held behind a running delivery of their key.
    pub held: usize,
    /// Whether commands wait that the driver should carry out before it takes its next event:
    /// an invocation to start, a transaction to open, a copy to publish, a commit, a full
    /// batch. The consumer calls and releases may wait for the driver's next flush, so that
    /// those due together go together.
    pub ready: bool,
}

impl Status {
    /// Whether a stopping driver may close its consumer: nothing runs, and nothing waits for
    /// an answer the machine would settle on.
    #[inline]
    pub fn is_settled(&self) -> bool {
        self.running == 0
            && self.batches == 0
            && self.awaiting_publishes == 0
            && self.transactions == 0
    }
}
