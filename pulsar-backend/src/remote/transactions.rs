//! Transactions on a Pulsar server: pulsar-rs's (`patches/README.md` section 18), opened
//! through the broker's transaction coordinator.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use pulsar::{Executor, Pulsar};
use ruststream::app::BoxError;
use ruststream::handler::BoxFuture;

use super::publish::{InTransaction, Publisher};
use ruststream_driver::port::{Transaction, TransactionHandle, TransactionPort};

/// Where a broker connected to a Pulsar server opens its transactions.
pub(super) struct RemoteTransactions<Exe: Executor> {
    pub(super) pulsar: Pulsar<Exe>,
    pub(super) publisher: Arc<Publisher<Exe>>,
}

impl<Exe: Executor> TransactionPort for RemoteTransactions<Exe> {
    fn begin(&self, timeout: Duration) -> BoxFuture<'static, Result<Transaction, BoxError>> {
        let (pulsar, publisher) = (self.pulsar.clone(), self.publisher.clone());
        Box::pin(async move {
            let txn = pulsar.new_transaction(timeout).await.map_err(|error| {
                format!(
                    "opening a transaction: {error} (the broker needs \
                     transactionCoordinatorEnabled=true: docs/transactions.md)"
                )
            })?;
            let sends = Arc::new(InTransaction::new(publisher, txn.clone()));
            Ok(Transaction {
                port: sends.clone(),
                handle: Arc::new(RemoteTransaction { txn, sends }),
            })
        })
    }
}

/// One of pulsar-rs's transactions, and what is published in it (flushed before it commits).
pub(crate) struct RemoteTransaction<Exe: Executor> {
    pub(crate) txn: pulsar::Transaction<Exe>,
    pub(crate) sends: Arc<InTransaction<Exe>>,
}

impl<Exe: Executor> TransactionHandle for RemoteTransaction<Exe> {
    fn id(&self) -> String {
        self.txn.id().to_string()
    }

    fn abort(&self) -> BoxFuture<'static, Result<(), BoxError>> {
        let txn = self.txn.clone();
        Box::pin(async move { txn.abort().await.map_err(Into::into) })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
