//! A transactional registration's settings, as its driver takes them.

use std::sync::Arc;

use ruststream::publish::Publish;
use ruststream::transaction::TransactionPolicy;

use super::Transactions;

/// The handler's publisher over a transaction's port.
pub(crate) type Wrap = Arc<dyn Fn(Arc<dyn Publish>) -> Arc<dyn Publish> + Send + Sync>;

/// How a transactional registration's driver opens its transactions and lends their port.
#[derive(Clone)]
pub(crate) struct TransactionSettings {
    /// Where transactions are opened.
    pub(crate) opener: Arc<dyn Transactions>,
    /// The registration's policy (the transaction timeout).
    pub(crate) policy: TransactionPolicy,
    /// The handler's publisher over a transaction's port, as it is over the broker's: behind
    /// the layers' publish hooks, with the registration's compression.
    pub(crate) wrap: Wrap,
}
