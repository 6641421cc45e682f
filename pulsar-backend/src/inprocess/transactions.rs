//! Transactions on the in-process Pulsar: the model's, on the virtual clock
//! (`ruststream_pulsar_model::transaction`).

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ruststream::app::BoxError;
use ruststream::handler::BoxFuture;
use ruststream::message::Message;
use ruststream::publish::{Publish, Publishing, Receipt};
use ruststream::PublishError;
use ruststream_pulsar_model::TxnId;

use super::transport::InProcessPublisher;
use super::InProcessPulsar;
use ruststream_driver::port::{Transaction, TransactionHandle, TransactionPort};

/// Where a broker on the in-process Pulsar opens its transactions.
pub(super) struct InProcessTransactions {
    pub(super) publisher: Arc<InProcessPublisher>,
}

impl TransactionPort for InProcessTransactions {
    fn begin(&self, timeout: Duration) -> BoxFuture<'static, Result<Transaction, BoxError>> {
        let pulsar = self.publisher.pulsar.clone();
        let txn = {
            let mut inner = pulsar.lock();
            let now = inner.now();
            let txn = inner.cluster.new_transaction(timeout, now);
            // Its timeout is a deadline of the model's: the timer is set again.
            inner.notify();
            txn
        };
        let failed = Arc::new(Mutex::new(None));
        let port = Arc::new(InTransaction {
            publisher: self.publisher.clone(),
            txn,
            failed: failed.clone(),
        });
        let handle = Arc::new(InProcessTransaction {
            pulsar,
            txn,
            failed,
        });
        Box::pin(std::future::ready(Ok(Transaction { port, handle })))
    }
}

/// Publishing in one transaction, with the broker's namespace and routing.
struct InTransaction {
    publisher: Arc<InProcessPublisher>,
    txn: TxnId,
    /// Why a send in the transaction failed, if one did: its commit then fails, as the
    /// Java client's and pulsar-rs's do.
    failed: Arc<Mutex<Option<PublishError>>>,
}

impl InTransaction {
    fn store(&self, message: Message) -> Result<ruststream::MessageId, PublishError> {
        let topic = (self.publisher.topics)
            .get(&message.topic)
            .map_err(PublishError::invalid_topic)?;
        (self.publisher.pulsar)
            .store_in(self.txn, &topic, message, self.publisher.hashing)
            .map(|id| crate::message_id::of_model(&id))
    }
}

/// Stored at the call, as outside a transaction; visible once the transaction commits.
impl Publish for InTransaction {
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        let stored = self.store(message);
        let sent = stored.as_ref().map(drop).map_err(Clone::clone);
        if let Err(error) = &sent {
            let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
            failed.get_or_insert_with(|| error.clone());
        }
        receipt.tell(stored);
        Publishing::done(sent)
    }
}

/// One of the model's transactions.
pub(crate) struct InProcessTransaction {
    pulsar: InProcessPulsar,
    pub(crate) txn: TxnId,
    failed: Arc<Mutex<Option<PublishError>>>,
}

impl InProcessTransaction {
    /// The in-process transaction `txn` stands for, if it is one.
    pub(crate) fn of(txn: &Transaction) -> Result<&InProcessTransaction, BoxError> {
        (txn.handle.as_any().downcast_ref::<InProcessTransaction>()).ok_or_else(|| {
            format!(
                "transaction {} was not opened on the in-process Pulsar",
                txn.handle.id()
            )
            .into()
        })
    }

    /// Abort it now.
    /// Why a send in it failed, if one did: it must not commit.
    pub(crate) fn failed(&self) -> Option<PublishError> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn abort_now(&self) -> Result<(), BoxError> {
        let mut inner = self.pulsar.lock();
        let now = inner.now();
        let aborted = inner.cluster.abort(self.txn, now);
        inner.notify();
        aborted.map_err(Into::into)
    }
}

impl TransactionHandle for InProcessTransaction {
    fn id(&self) -> String {
        self.txn.to_string()
    }

    fn abort(&self) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(std::future::ready(self.abort_now()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
