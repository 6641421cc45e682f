//! What a broker offers for transactions.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::BoxError;
use ruststream::broker::machine::CommitFailure;
use ruststream::handler::BoxFuture;
use ruststream::publish::Publish;

/// Where a broker opens transactions (Pulsar: its transaction coordinator).
pub trait TransactionPort: Send + Sync {
    /// Open a transaction that the broker aborts once `timeout` has passed.
    fn begin(&self, timeout: Duration) -> BoxFuture<'static, Result<Transaction, BoxError>>;
}

/// One open transaction: the port that publishes in it, and the broker's handle to it.
#[derive(Clone)]
pub struct Transaction {
    /// Publishes in the transaction: nothing sent here is visible before the commit.
    pub port: Arc<dyn Publish>,
    /// The broker's own transaction, for its consumer's commit and for the abort.
    pub handle: Arc<dyn TransactionHandle>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Transaction({})", self.handle.id())
    }
}

/// A broker's transaction, as the machine holds it until it commits or aborts it.
pub trait TransactionHandle: Send + Sync + 'static {
    /// The transaction's id, as the broker prints it (for logs).
    fn id(&self) -> String;

    /// Abort it: nothing published in it becomes visible, and what was acknowledged in it is
    /// not acknowledged.
    fn abort(&self) -> BoxFuture<'static, Result<(), BoxError>>;

    /// The broker's own type, for its consumer's commit to take it back.
    fn as_any(&self) -> &dyn Any;
}

/// Why a commit failed: what kind of failure it was, which the machine decides by, and what
/// the broker said, which the driver logs.
#[derive(Debug)]
pub struct CommitError {
    /// What kind of failure.
    pub failure: CommitFailure,
    /// What the broker or its client said.
    pub error: BoxError,
}

impl CommitError {
    /// A message published in the transaction failed, so nothing was committed.
    pub fn not_sent(error: &ruststream::PublishError) -> Self {
        CommitError {
            failure: CommitFailure::NotSent,
            error: format!(
                "a message published in the transaction failed, so it was not committed: {error}"
            )
            .into(),
        }
    }

    /// An acknowledgement in it was refused, so nothing was committed.
    pub fn ack_refused(error: BoxError) -> Self {
        CommitError {
            failure: CommitFailure::AckRefused,
            error,
        }
    }

    /// The commit itself failed.
    pub fn failed(error: BoxError) -> Self {
        CommitError {
            failure: CommitFailure::Failed,
            error,
        }
    }
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for CommitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}
