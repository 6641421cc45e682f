//! Transactional registrations: a delivery's publishes and its acknowledgement commit
//! together, or neither does (Pulsar transactions, PIP-31).
//!
//! A registration made transactional runs each delivery in a transaction of its own: the
//! machine asks for it to be opened before the handler runs
//! ([`Command::Open`](crate::broker::machine::Command::Open)), every message the handler
//! publishes through its `Publisher` goes in it, and so does a dead-letter or retry-topic copy
//! the machine orders. An acknowledgement (`ack`, `drop`, a copy confirmed) becomes
//! [`Command::Commit`](crate::broker::machine::Command::Commit): the message is acknowledged in
//! the transaction and the transaction committed, so the output appears exactly when the input
//! is consumed. Any other end (`retry`, `retry_after`, an error, a panic, a timeout, a publish
//! that failed) becomes [`Command::Abort`](crate::broker::machine::Command::Abort) at once:
//! nothing the handler published is ever seen, and the message comes back as the completion
//! table says.

use core::num::NonZeroU32;
use core::time::Duration;

/// How a transactional registration's transactions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionPolicy {
    timeout: Duration,
    /// The most deliveries one transaction takes, and how long after its first delivery
    /// started it takes more.
    group: Option<(NonZeroU32, Duration)>,
}

impl TransactionPolicy {
    /// The transaction timeout the Java client uses by default (`Transaction` builder's
    /// `withTransactionTimeout`, one minute): the broker aborts a transaction left open longer.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

    /// One transaction per delivery, with [`TransactionPolicy::DEFAULT_TIMEOUT`].
    pub const fn new() -> Self {
        TransactionPolicy {
            timeout: Self::DEFAULT_TIMEOUT,
            group: None,
        }
    }

    /// The same policy with the broker aborting a transaction left open for `timeout`: a
    /// handler that runs longer cannot commit, and its message comes back. Keep it above the
    /// handler's longest run plus the time its publishes take to be answered; the broker keeps
    /// consumers of the topics a transaction wrote to from reading past its first message
    /// until it ends, so a long timeout holds them up when a service dies mid-transaction.
    pub const fn timeout(self, timeout: Duration) -> Self {
        TransactionPolicy { timeout, ..self }
    }

    /// The same policy with up to `deliveries` deliveries in one transaction: those that
    /// start within `max_wait` of the first one's start join it, and it commits once it is
    /// full (or `max_wait` has passed) and all of them acknowledged. One commit then serves
    /// many messages, at a price: **if any of them does not acknowledge** (a retry, a panic, a
    /// copy to the dead-letter or retry topic, a publish that failed), the transaction aborts,
    /// and every message in it comes back, those that acknowledged included, to be handled
    /// again (what they published is never seen). Where deliveries of one key run in order, a
    /// key is held until its transaction ends, so a hot key runs one message per transaction.
    pub const fn group(self, deliveries: NonZeroU32, max_wait: Duration) -> Self {
        TransactionPolicy {
            group: Some((deliveries, max_wait)),
            ..self
        }
    }

    /// The most deliveries in one transaction, and how long after its first delivery started
    /// it takes more: `(1, 0)` without [`TransactionPolicy::group`].
    pub const fn group_limits(&self) -> (u32, Duration) {
        match self.group {
            Some((deliveries, max_wait)) => (deliveries.get(), max_wait),
            None => (1, Duration::ZERO),
        }
    }

    /// How long the broker lets a transaction stay open.
    pub const fn transaction_timeout(&self) -> Duration {
        self.timeout
    }
}

impl Default for TransactionPolicy {
    fn default() -> Self {
        Self::new()
    }
}
