//! The client of the transaction coordinators (PIP-31).
//!
//! A Pulsar cluster with transactions enabled (`transactionCoordinatorEnabled=true`) runs one
//! or more transaction coordinators, one for each partition of the topic
//! `persistent://pulsar/system/transaction_coordinator_assign`: coordinator `n` is served by
//! the broker that owns partition `n`. The client looks each partition up, connects to its
//! broker and introduces itself there with `TC_CLIENT_CONNECT_REQUEST` before it asks anything
//! else (the broker then makes the coordinator ready). New transactions go to the coordinators
//! in turn; every other request about a transaction goes to the coordinator that opened it,
//! whose number is the transaction id's `most_bits`.

use std::{
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use futures::{future::try_join_all, lock::Mutex};

use super::{timeout_millis, TxnId};
use crate::{
    connection::Connection,
    connection_manager::ConnectionManager,
    error::{ConnectionError, ServiceDiscoveryError},
    executor::Executor,
    message::proto::{ServerError, TxnAction},
    service_discovery::ServiceDiscovery,
};

/// The partitioned topic whose partitions stand for the transaction coordinators.
pub(crate) const COORDINATOR_ASSIGN_TOPIC: &str =
    "persistent://pulsar/system/transaction_coordinator_assign";

/// What to do about a broker without transactions.
const NOT_ENABLED: &str = "the broker has no transaction coordinator: transactions need \
                           `transactionCoordinatorEnabled=true` in the broker's configuration";

/// The first wait before a request is tried again after `TransactionCoordinatorNotFound` (the
/// coordinator is being loaded or moved) or a dropped connection; it doubles each time, up to
/// [`MAX_BACKOFF`], as the Java client's backoff does, until the operation timeout.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(6);

pub(crate) struct Coordinator<Exe: Executor> {
    manager: Arc<ConnectionManager<Exe>>,
    discovery: Arc<ServiceDiscovery<Exe>>,
    pub(crate) executor: Arc<Exe>,
    /// how long a request may take, retries included
    operation_timeout: Duration,
    /// one for each coordinator, by number
    handlers: Vec<Handler<Exe>>,
    /// the coordinator the next transaction is opened on (round robin)
    next: AtomicUsize,
}

/// One coordinator and the connection to the broker that serves it.
struct Handler<Exe: Executor> {
    tc_id: u64,
    /// `...transaction_coordinator_assign-partition-<tc_id>`
    topic: String,
    /// the connection the coordinator was introduced on; looked up and introduced again when
    /// it is gone, or when the broker no longer serves the coordinator
    connection: Mutex<Option<Arc<Connection<Exe>>>>,
}

impl<Exe: Executor> Coordinator<Exe> {
    /// Finds the coordinators and connects to each: fails with what to do if the broker has
    /// none.
    pub(crate) async fn start(
        manager: Arc<ConnectionManager<Exe>>,
        discovery: Arc<ServiceDiscovery<Exe>>,
        executor: Arc<Exe>,
        operation_timeout: Duration,
    ) -> Result<Self, ConnectionError> {
        let partitions = discovery
            .lookup_partitioned_topic_number(COORDINATOR_ASSIGN_TOPIC)
            .await
            .map_err(|e| {
                ConnectionError::Unexpected(format!(
                    "{NOT_ENABLED} (looking up {COORDINATOR_ASSIGN_TOPIC} failed: {e})"
                ))
            })?;
        if partitions == 0 {
            return Err(ConnectionError::Unexpected(format!(
                "{NOT_ENABLED} ({COORDINATOR_ASSIGN_TOPIC} has no partitions; a broker that \
                 has just started may not have created them yet)"
            )));
        }
        let handlers = (0..partitions)
            .map(|n| Handler {
                tc_id: u64::from(n),
                topic: format!("{COORDINATOR_ASSIGN_TOPIC}-partition-{n}"),
                connection: Mutex::new(None),
            })
            .collect();
        let coordinator = Coordinator {
            manager,
            discovery,
            executor,
            operation_timeout,
            handlers,
            next: AtomicUsize::new(0),
        };
        // Every coordinator is connected to now, as the Java client does: a broker without
        // transactions says so here rather than at the first request to it.
        try_join_all(
            coordinator
                .handlers
                .iter()
                .map(|handler| coordinator.request(handler, |_| async { Ok(()) })),
        )
        .await?;
        Ok(coordinator)
    }

    /// Opens a transaction that the coordinator aborts if it is not ended within `timeout`.
    pub(crate) async fn new_txn(&self, timeout: Duration) -> Result<TxnId, ConnectionError> {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.handlers.len();
        let handler = &self.handlers[index];
        let (tc_id, timeout) = (handler.tc_id, timeout_millis(timeout));
        self.request(handler, |connection| async move {
            connection.sender().new_txn(tc_id, timeout).await
        })
        .await
    }

    /// Registers a topic partition the transaction publishes to.
    pub(crate) async fn add_partition(
        &self,
        txn: TxnId,
        partition: &str,
    ) -> Result<(), ConnectionError> {
        self.request(self.handler_of(txn)?, |connection| {
            let partitions = vec![partition.to_string()];
            async move {
                connection
                    .sender()
                    .add_partition_to_txn(txn, partitions)
                    .await
            }
        })
        .await
    }

    /// Registers the subscription of a topic partition the transaction acknowledges on.
    pub(crate) async fn add_subscription(
        &self,
        txn: TxnId,
        partition: &str,
        subscription: &str,
    ) -> Result<(), ConnectionError> {
        self.request(self.handler_of(txn)?, |connection| {
            let (topic, subscription) = (partition.to_string(), subscription.to_string());
            async move {
                connection
                    .sender()
                    .add_subscription_to_txn(txn, topic, subscription)
                    .await
            }
        })
        .await
    }

    /// Commits or aborts the transaction.
    pub(crate) async fn end(&self, txn: TxnId, action: TxnAction) -> Result<(), ConnectionError> {
        self.request(self.handler_of(txn)?, |connection| async move {
            connection.sender().end_txn(txn, action).await
        })
        .await
    }

    /// The coordinator that opened `txn`.
    fn handler_of(&self, txn: TxnId) -> Result<&Handler<Exe>, ConnectionError> {
        usize::try_from(txn.most_bits)
            .ok()
            .and_then(|n| self.handlers.get(n))
            .ok_or_else(|| {
                ConnectionError::Unexpected(format!(
                    "transaction {txn}: no transaction coordinator {} (the broker listed {})",
                    txn.most_bits,
                    self.handlers.len()
                ))
            })
    }

    /// Runs `op` on the coordinator's connection. It is tried again, after a growing wait,
    /// while the broker answers `TransactionCoordinatorNotFound` (the only error the Java
    /// client retries: the coordinator is loading, or moved to another broker, so it is looked
    /// up again) or the connection drops (looked up and connected again), until the operation
    /// timeout has passed since the first try.
    async fn request<T, F, Fut>(&self, handler: &Handler<Exe>, op: F) -> Result<T, ConnectionError>
    where
        F: Fn(Arc<Connection<Exe>>) -> Fut,
        Fut: Future<Output = Result<T, ConnectionError>>,
    {
        let deadline = Instant::now() + self.operation_timeout;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let result = match self.connect(handler).await {
                Ok(connection) => op(connection).await,
                Err(e) => Err(e),
            };
            let error = match result {
                Ok(answer) => return Ok(answer),
                Err(e) => e,
            };
            if !is_retryable(&error) || Instant::now() + backoff > deadline {
                return Err(error);
            }
            warn!(
                "transaction coordinator {}: {error}; trying again in {backoff:?}",
                handler.tc_id
            );
            // connected again (and the coordinator looked up again) on the next try
            *handler.connection.lock().await = None;
            self.executor.delay(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// The connection the coordinator was introduced on, introducing it on a new one if there
    /// is none (or it dropped).
    async fn connect(
        &self,
        handler: &Handler<Exe>,
    ) -> Result<Arc<Connection<Exe>>, ConnectionError> {
        let mut slot = handler.connection.lock().await;
        if let Some(connection) = slot.as_ref() {
            if connection.is_valid() {
                return Ok(connection.clone());
            }
        }
        *slot = None;
        let address = self
            .discovery
            .lookup_topic(&handler.topic)
            .await
            .map_err(lookup_error)?;
        let connection = self.manager.get_connection(&address).await?;
        connection
            .sender()
            .tc_client_connect(handler.tc_id)
            .await
            .map_err(|e| match e {
                // what the broker answers when transactions are off
                ConnectionError::PulsarError(Some(ServerError::NotAllowedError), message) => {
                    ConnectionError::PulsarError(
                        Some(ServerError::NotAllowedError),
                        Some(format!(
                            "{NOT_ENABLED} (the broker answered: {})",
                            message.unwrap_or_default()
                        )),
                    )
                }
                e => e,
            })?;
        debug!(
            "transaction coordinator {} connected on {}",
            handler.tc_id,
            connection.id()
        );
        *slot = Some(connection.clone());
        Ok(connection)
    }
}

/// Whether a coordinator request that failed so may succeed if tried again.
fn is_retryable(error: &ConnectionError) -> bool {
    matches!(
        error,
        ConnectionError::PulsarError(Some(ServerError::TransactionCoordinatorNotFound), _)
            | ConnectionError::Disconnected
    )
}

fn lookup_error(error: ServiceDiscoveryError) -> ConnectionError {
    match error {
        ServiceDiscoveryError::Connection(e) => e,
        ServiceDiscoveryError::Query(kind, message) => ConnectionError::PulsarError(kind, message),
        e => ConnectionError::Unexpected(format!("looking up a transaction coordinator: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_coordinator_and_a_dropped_connection_are_retried() {
        let pulsar = |kind| ConnectionError::PulsarError(Some(kind), None);
        assert!(is_retryable(&pulsar(
            ServerError::TransactionCoordinatorNotFound
        )));
        assert!(is_retryable(&ConnectionError::Disconnected));
        assert!(!is_retryable(&pulsar(ServerError::TransactionNotFound)));
        assert!(!is_retryable(&pulsar(ServerError::InvalidTxnStatus)));
        assert!(!is_retryable(&pulsar(ServerError::NotAllowedError)));
        assert!(!is_retryable(&ConnectionError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "timed out"
        ))));
    }
}
