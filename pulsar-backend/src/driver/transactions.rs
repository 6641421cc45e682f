//! A transactional registration's transactions in its driver: opened before each handler
//! runs, kept from the handler's end until the machine's `Call::Commit` or `Call::Abort`, and
//! ended there while the driver goes on.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use ruststream::app::BoxError;
use ruststream::handler::BoxFuture;
use ruststream::publish::{Publish, Token};

use super::{BatchSlot, ConsumerPort};
use crate::transaction::{Transaction, TransactionSettings};

/// Why a delivery's transaction could not be opened: its handler is not called, and the
/// message comes back as after `retry()`.
#[derive(Debug)]
pub(crate) struct OpenFailed(BoxError);

impl std::fmt::Display for OpenFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "could not open the delivery's transaction, so its handler was not called and the \
             message comes back: {}",
            self.0
        )
    }
}

impl std::error::Error for OpenFailed {}

/// Open a transaction for one delivery: the transaction, and the handler's publisher port
/// over it.
pub(crate) async fn open(
    settings: &TransactionSettings,
) -> Result<(Transaction, Arc<dyn Publish>), OpenFailed> {
    let timeout = settings.policy.transaction_timeout();
    let txn = settings.opener.begin(timeout).await.map_err(OpenFailed)?;
    let port = (settings.wrap)(txn.port.clone());
    Ok((txn, port))
}

/// The transactions of the deliveries whose handlers ended, until they are ended, and the
/// commits and aborts under way.
#[derive(Default)]
pub(crate) struct Transactions {
    open: HashMap<Token, Transaction>,
    /// A commit answers with its delivery's token and how it went; an abort with nothing.
    ending: FuturesUnordered<BoxFuture<'static, Option<(Token, Result<(), BoxError>)>>>,
}

impl Transactions {
    /// Keep delivery `token`'s transaction until the machine says how it ends.
    pub(crate) fn keep(&mut self, token: Token, txn: Transaction) {
        self.open.insert(token, txn);
    }

    /// The port that publishes in delivery `token`'s transaction (for the copy the machine
    /// ordered for it).
    pub(crate) fn port(&self, token: Token) -> Option<Arc<dyn Publish>> {
        self.open.get(&token).map(|txn| txn.port.clone())
    }

    /// Acknowledge `id` in delivery `token`'s transaction and commit it, while the driver
    /// goes on. `false` when the delivery has no transaction kept (nothing to commit).
    pub(crate) fn commit<C: ConsumerPort>(
        &mut self,
        consumer: &mut C,
        token: Token,
        id: C::Id,
        batch: Option<BatchSlot>,
    ) -> bool {
        let Some(txn) = self.open.remove(&token) else {
            return false;
        };
        let committing = consumer.commit(&txn, vec![id], batch);
        self.ending
            .push(Box::pin(async move { Some((token, committing.await)) }));
        true
    }

    /// Abort delivery `token`'s transaction, while the driver goes on.
    pub(crate) fn abort(&mut self, token: Token) {
        let Some(txn) = self.open.remove(&token) else {
            return;
        };
        let aborting = txn.handle.abort();
        let id = txn.handle.id();
        self.ending.push(Box::pin(async move {
            if let Err(error) = aborting.await {
                // The broker aborts it at its timeout all the same: nothing it holds is
                // visible meanwhile.
                tracing::warn!(%error, transaction = %id, "could not abort a transaction; the broker aborts it at its timeout");
            }
            None
        }));
    }

    /// The next commit that was answered: its delivery's token and how it went.
    pub(crate) fn poll_committed(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<(Token, Result<(), BoxError>)> {
        while let Poll::Ready(Some(ended)) = self.ending.poll_next_unpin(cx) {
            if let Some(committed) = ended {
                return Poll::Ready(committed);
            }
        }
        Poll::Pending
    }

    /// Whether commits or aborts are under way.
    pub(crate) fn ending(&self) -> bool {
        !self.ending.is_empty()
    }
}
