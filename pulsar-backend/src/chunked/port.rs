//! A consumer of whole messages over a consumer of chunks.

use std::sync::Arc;
use std::task::{Context, Poll};

use ruststream::app::BoxError;
use ruststream::broker::machine::{BatchSlot, EntryPosition};
use ruststream::handler::BoxFuture;
use ruststream::runtime::Runtime;
use ruststream_driver::port::{CommitError, ConsumerPort, Received, Transaction};

use super::assembly::Assembly;
use super::{ChunkedId, Chunks, INCOMPLETE_CHUNKED_MESSAGE_EXPIRY, MAX_PENDING_CHUNKED_MESSAGES};

/// `P` with its chunked messages joined: a message that was not chunked passes as it is, the
/// chunks of one that was are kept until the last arrives and then handed over as one
/// delivery.
///
/// A chunk kept is not in flight (it is released on `P` once kept, and acquired again with
/// the whole message, while the last chunk is still held), so a message that never completes
/// does not hold a stopping service.
pub(crate) struct Chunked<P: ConsumerPort> {
    inner: P,
    assembly: Assembly<P::Id>,
    runtime: Arc<dyn Runtime>,
    /// Reused for the flattened ids of each settlement call.
    scratch: Vec<P::Id>,
}

impl<P: ConsumerPort> Chunked<P> {
    /// `inner` joined with the bounds of [`MAX_PENDING_CHUNKED_MESSAGES`] and
    /// [`INCOMPLETE_CHUNKED_MESSAGE_EXPIRY`], on `runtime`'s clock.
    pub(crate) fn new(inner: P, runtime: Arc<dyn Runtime>) -> Self {
        Chunked {
            inner,
            assembly: Assembly::new(
                MAX_PENDING_CHUNKED_MESSAGES,
                INCOMPLETE_CHUNKED_MESSAGE_EXPIRY,
            ),
            runtime,
            scratch: Vec::new(),
        }
    }

    /// The chunk ids `ids` stand for, after the dropped chunks due for acknowledgement if
    /// `with_dropped`, in the reused buffer (hand it back with [`Chunked::give_back`]).
    fn flatten(&mut self, ids: &[ChunkedId<P::Id>], with_dropped: bool) -> Vec<P::Id> {
        let mut all = std::mem::take(&mut self.scratch);
        all.clear();
        if with_dropped {
            all.extend(self.assembly.take_acks());
        }
        for id in ids {
            id.each(|chunk| all.push(chunk.clone()));
        }
        all
    }

    fn give_back(&mut self, mut buffer: Vec<P::Id>) {
        buffer.clear();
        self.scratch = buffer;
    }

    /// Drop the messages that did not complete in time; the clock is read only while chunks
    /// are kept, not on every settlement.
    fn expire(&mut self) {
        if self.assembly.pending() > 0 {
            self.assembly.expire(self.runtime.now());
        }
    }

    /// Acknowledge the dropped chunks due for it, if any.
    async fn ack_dropped(&mut self) -> Result<(), BoxError> {
        if !self.assembly.has_acks() {
            return Ok(());
        }
        let dropped = self.assembly.take_acks();
        self.inner.ack(&dropped).await
    }
}

impl<P: ConsumerPort> ConsumerPort for Chunked<P> {
    type Id = ChunkedId<P::Id>;

    #[inline]
    fn entry(id: &Self::Id) -> EntryPosition {
        P::entry(&id.last)
    }

    #[inline]
    fn message_id(id: &Self::Id) -> ruststream::MessageId {
        P::message_id(&id.last)
    }

    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received<Self::Id>>> {
        loop {
            let Some(received) = std::task::ready!(self.inner.poll_receive(cx)) else {
                return Poll::Ready(None);
            };
            // Most deliveries carry nothing unusual: no chunk to look for.
            if received.unusual.is_none() {
                return Poll::Ready(Some(received.with_id(ChunkedId::single)));
            }
            if received.chunk().is_none_or(|c| c.num_chunks <= 1) {
                let mut received = received.with_id(ChunkedId::single);
                received.take_chunk();
                return Poll::Ready(Some(received));
            }
            let id = received.id.clone();
            let now = self.runtime.now();
            match self.assembly.push(received, now) {
                Some(whole) => {
                    // The last chunk is still held; the others count again, with it.
                    for chunk in whole.id.earlier.iter().flat_map(|earlier| earlier.iter()) {
                        self.inner.acquire(chunk);
                    }
                    return Poll::Ready(Some(whole));
                }
                None => self.inner.release(&id),
            }
        }
    }

    async fn ack(&mut self, ids: &[Self::Id]) -> Result<(), BoxError> {
        self.expire();
        let all = self.flatten(ids, true);
        let acked = self.inner.ack(&all).await;
        self.give_back(all);
        acked
    }

    fn acks_batch_index(&self) -> bool {
        self.inner.acks_batch_index()
    }

    async fn ack_batch_index(
        &mut self,
        id: &Self::Id,
        size: std::num::NonZeroU32,
        ack_set: Vec<i64>,
    ) -> Result<(), BoxError> {
        // Only a batched message is acknowledged at its index, and a chunk is never batched.
        self.inner.ack_batch_index(&id.last, size, ack_set).await
    }

    async fn nack(&mut self, ids: &[Self::Id]) -> Result<(), BoxError> {
        self.expire();
        let dropped = self.ack_dropped().await;
        let all = self.flatten(ids, false);
        let nacked = self.inner.nack(&all).await;
        self.give_back(all);
        nacked.and(dropped)
    }

    fn commit(
        &mut self,
        txn: &Transaction,
        acks: Vec<(Self::Id, Option<BatchSlot>)>,
    ) -> BoxFuture<'static, Result<(), CommitError>> {
        // A chunked message is acknowledged chunk by chunk, all in the transaction (a chunk
        // is never batched: only a message that is not one has a slot).
        let all = (acks.iter())
            .flat_map(|(id, batch)| id.chunks().map(move |chunk| (chunk.clone(), *batch)))
            .collect();
        self.inner.commit(txn, all)
    }

    fn restart_ack_timeout<'a>(&mut self, ids: impl Iterator<Item = &'a Self::Id>)
    where
        Self::Id: 'a,
    {
        self.inner
            .restart_ack_timeout(ids.flat_map(|id| id.chunks()));
    }

    fn release(&mut self, id: &Self::Id) {
        id.each(|chunk| self.inner.release(chunk));
    }

    fn acquire(&mut self, id: &Self::Id) {
        id.each(|chunk| self.inner.acquire(chunk));
    }

    async fn close(mut self) {
        if let Err(error) = self.ack_dropped().await {
            tracing::warn!(%error, "acknowledging dropped chunks at close failed; they come back");
        }
        self.inner.close().await;
    }
}
