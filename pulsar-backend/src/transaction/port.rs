//! What a transport offers for transactions.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::BoxError;
use ruststream::handler::BoxFuture;
use ruststream::publish::Publish;

/// Where transactions are opened: the broker's transaction coordinator (pulsar-rs), or the
/// in-process Pulsar's model.
pub(crate) trait Transactions: Send + Sync {
    /// Open a transaction that the broker aborts once `timeout` has passed.
    fn begin(&self, timeout: Duration) -> BoxFuture<'static, Result<Transaction, BoxError>>;
}

/// One open transaction: the port that publishes in it, and the transport's handle to it.
#[derive(Clone)]
pub(crate) struct Transaction {
    /// Publishes in the transaction: nothing sent here is visible before the commit.
    pub(crate) port: Arc<dyn Publish>,
    /// The transport's own transaction, for the consumer's commit and for the abort.
    pub(crate) handle: Arc<dyn TransactionHandle>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Transaction({})", self.handle.id())
    }
}

/// A transport's transaction, as the driver holds it between the handler's end and the call
/// that ends it.
pub(crate) trait TransactionHandle: Send + Sync + 'static {
    /// The transaction's id, as the broker prints it (for logs).
    fn id(&self) -> String;

    /// Abort it: nothing published in it becomes visible, and what was acknowledged in it is
    /// not acknowledged.
    fn abort(&self) -> BoxFuture<'static, Result<(), BoxError>>;

    /// The transport's own type, for its consumer's commit to take it back.
    fn as_any(&self) -> &dyn Any;
}

/// Why a transaction was aborted instead of committed: a message published in it failed (as
/// the Java client's and pulsar-rs's transactions, which commit only once every send in them
/// succeeded).
pub(crate) fn failed_send(error: &ruststream::PublishError) -> BoxError {
    format!("a message published in the transaction failed, so it was aborted: {error}").into()
}
