//! A transactional registration's transactions in its driver: opened before each handler
//! runs, kept from the handler's end until the machine's `Call::Commit` or `Call::Abort`, and
//! ended there while the driver goes on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::future::{FutureExt, Shared};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use ruststream::app::BoxError;
use ruststream::handler::BoxFuture;
use ruststream::publish::{Publish, Token};

use super::{BatchSlot, ConsumerPort};
use crate::transaction::{Transaction, TransactionSettings};
use ruststream::machine::Joined;

/// Why a delivery's transaction could not be opened: its handler is not called, and the
/// message comes back as after `retry()`.
#[derive(Debug, Clone)]
pub(crate) struct OpenFailed(Arc<str>);

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

/// A transaction being opened, which every delivery that joins it awaits.
pub(crate) type Opening = Shared<BoxFuture<'static, Result<Transaction, Arc<str>>>>;

/// Start opening a transaction with `settings`.
fn opening(settings: &TransactionSettings) -> Opening {
    let (opener, timeout) = (
        settings.opener.clone(),
        settings.policy.transaction_timeout(),
    );
    let open: BoxFuture<'static, Result<Transaction, Arc<str>>> = Box::pin(async move {
        opener
            .begin(timeout)
            .await
            .map_err(|error| Arc::from(error.to_string()))
    });
    open.shared()
}

/// The transaction a delivery runs in, once open, and the handler's publisher port over it.
async fn joined(
    opening: Opening,
    settings: &TransactionSettings,
) -> Result<(Transaction, Arc<dyn Publish>), OpenFailed> {
    let txn = opening.await.map_err(OpenFailed)?;
    let port = (settings.wrap)(txn.port.clone());
    Ok((txn, port))
}

/// The transaction a delivery (or a batch) runs in, if its registration is transactional:
/// once `joined` is open, it under its leader's token and the handler's publisher port over
/// it; or why it could not be opened.
pub(crate) async fn opened(
    settings: Option<&TransactionSettings>,
    joined: Option<(Token, Opening)>,
) -> (
    Option<(Token, Transaction)>,
    Option<Arc<dyn Publish>>,
    Option<OpenFailed>,
) {
    let (Some(settings), Some((leader, opening))) = (settings, joined) else {
        return (None, None, None);
    };
    match self::joined(opening, settings).await {
        Ok((txn, port)) => (Some((leader, txn)), Some(port), None),
        Err(failed) => (None, None, Some(failed)),
    }
}

/// A commit or an abort that was answered.
pub(crate) enum Ended {
    /// Transaction `token`'s commit, of so many messages (an entry acknowledged whole counts
    /// each of its messages), and how it went.
    Committed(Token, usize, Result<(), BoxError>),
    /// An abort, and how it went.
    Aborted(Result<(), BoxError>),
}

/// The transaction of a copy the machine ordered: filled once it is open, before the copy is
/// sent in it.
type CopyTransaction = Arc<Mutex<Option<Transaction>>>;

/// A delivery's transactions: its handler's, until it is ended, and its copy's, if the
/// machine ordered one.
#[derive(Default)]
struct Kept {
    handler: Option<Transaction>,
    copy: Option<CopyTransaction>,
}

/// The transactions of the deliveries whose handlers ended, until they are ended, and the
/// commits and aborts under way.
#[derive(Default)]
pub(crate) struct Transactions {
    open: HashMap<Token, Kept>,
    /// The transactions being opened or open, by the token the machine names them by, for
    /// the deliveries that join them; until they end.
    opening: HashMap<Token, Opening>,
    ending: FuturesUnordered<BoxFuture<'static, Ended>>,
}

impl Transactions {
    /// The transaction a delivery starting now runs in, as the machine `joined` it: opened
    /// now with `settings` if the delivery opens it, the one being opened otherwise.
    pub(crate) fn join(&mut self, joined: Joined, settings: &TransactionSettings) -> Opening {
        match (joined.opens, self.opening.get(&joined.leader)) {
            (false, Some(opening)) => opening.clone(),
            _ => {
                let opening = opening(settings);
                self.opening.insert(joined.leader, opening.clone());
                opening
            }
        }
    }

    /// Keep transaction `leader` (a delivery in it ended) until the machine says how it ends.
    pub(crate) fn keep(&mut self, leader: Token, txn: Transaction) {
        // One that ended already (a delivery that ended after its transaction was aborted)
        // is not kept again.
        if !self.opening.contains_key(&leader) {
            return;
        }
        let kept = self.open.entry(leader).or_default();
        if kept.handler.is_none() {
            kept.handler = Some(txn);
        }
    }

    /// Where delivery `token`'s copy goes: a transaction of its own, kept under its token,
    /// which the returned future opens with `settings` before the copy is sent through the
    /// port it gives.
    pub(crate) fn copy_in_own(
        &mut self,
        token: Token,
        settings: &TransactionSettings,
    ) -> BoxFuture<'static, Result<Arc<dyn Publish>, BoxError>> {
        let kept = self.open.entry(token).or_default();
        let slot = CopyTransaction::default();
        kept.copy = Some(slot.clone());
        let (opener, timeout) = (
            settings.opener.clone(),
            settings.policy.transaction_timeout(),
        );
        Box::pin(async move {
            let txn = opener.begin(timeout).await?;
            let port = txn.port.clone();
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(txn);
            Ok(port)
        })
    }

    /// Acknowledge `id` in delivery `token`'s transaction (its copy's, if the machine ordered
    /// one) and commit it, while the driver goes on. `false` when the delivery has no
    /// transaction to commit.
    pub(crate) fn commit<C: ConsumerPort>(
        &mut self,
        consumer: &mut C,
        token: Token,
        acks: Vec<(C::Id, Option<BatchSlot>)>,
        messages: usize,
    ) -> bool {
        self.opening.remove(&token);
        let Some(kept) = self.open.remove(&token) else {
            return false;
        };
        let txn = match kept.copy {
            Some(copy) => copy.lock().unwrap_or_else(|e| e.into_inner()).take(),
            None => kept.handler,
        };
        let Some(txn) = txn else {
            return false;
        };
        let committing = consumer.commit(&txn, acks);
        self.ending.push(Box::pin(async move {
            Ended::Committed(token, messages, committing.await)
        }));
        true
    }

    /// Abort delivery `token`'s transaction, while the driver goes on.
    ///
    /// The handler's transaction first: a delivery whose copy is on its way keeps the copy's
    /// transaction until the machine commits or aborts that one.
    pub(crate) fn abort(&mut self, token: Token) {
        // A transaction aborted before any of its deliveries ended is still being opened
        // (or open) for them: aborted once it is.
        let opening = self.opening.remove(&token);
        let Some(kept) = self.open.get_mut(&token) else {
            if let Some(opening) = opening {
                self.ending.push(Box::pin(async move {
                    let aborted = match opening.await {
                        Ok(txn) => txn.handle.abort().await,
                        Err(_) => Ok(()),
                    };
                    Ended::Aborted(aborted)
                }));
            }
            return;
        };
        let txn = match (kept.handler.take(), &kept.copy) {
            (Some(handler), Some(_)) => Some(handler),
            (Some(handler), None) => {
                self.open.remove(&token);
                Some(handler)
            }
            (None, _) => (self.open.remove(&token))
                .and_then(|kept| kept.copy)
                .and_then(|copy| copy.lock().unwrap_or_else(|e| e.into_inner()).take()),
        };
        let Some(txn) = txn else {
            return;
        };
        let aborting = txn.handle.abort();
        let id = txn.handle.id();
        self.ending.push(Box::pin(async move {
            let aborted = aborting.await;
            if let Err(error) = &aborted {
                // The broker aborts it at its timeout all the same: nothing it holds is
                // visible meanwhile.
                tracing::warn!(%error, transaction = %id, "could not abort a transaction; the broker aborts it at its timeout");
            }
            Ended::Aborted(aborted)
        }));
    }

    /// The next commit or abort that was answered.
    pub(crate) fn poll_ended(&mut self, cx: &mut Context<'_>) -> Poll<Ended> {
        match self.ending.poll_next_unpin(cx) {
            Poll::Ready(Some(ended)) => Poll::Ready(ended),
            _ => Poll::Pending,
        }
    }

    /// Whether commits or aborts are under way.
    pub(crate) fn ending(&self) -> bool {
        !self.ending.is_empty()
    }
}
