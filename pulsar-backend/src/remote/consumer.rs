//! A driver's consumer on a Pulsar server, through pulsar-rs.

use std::task::{Context, Poll};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use pulsar::message::proto::MessageIdData;
use pulsar::{Consumer, Executor};
use ruststream::app::BoxError;
use ruststream::broker::machine::{BatchSlot, EntryPosition};
use ruststream::handler::BoxFuture;
use ruststream_driver::port::{
    CommitError, ConsumerPort, Payload, Properties, Received, Transaction,
};

use super::in_flight::InFlight;
use crate::chunked::Compressed;

/// The id a settlement call needs: pulsar-rs's `ack_with_id(topic, id)` takes both.
#[derive(Clone, Debug)]
pub(crate) struct RemoteId {
    topic: std::sync::Arc<str>,
    id: MessageIdData,
}

/// The same message: topic, ledger, entry, partition and batch index (not the fields a
/// redelivery may fill differently, such as the ack set).
impl PartialEq for RemoteId {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.id, &other.id);
        a.ledger_id == b.ledger_id
            && a.entry_id == b.entry_id
            && a.partition == b.partition
            && a.batch_index == b.batch_index
            && self.topic == other.topic
    }
}

/// `ids` grouped by topic (a consumer of several topics or partitions acknowledges through
/// each topic's own consumer), in the order each topic first appears. One topic, the usual
/// case, takes one pass and no map.
fn by_topic(ids: &[RemoteId]) -> Vec<(&str, Vec<MessageIdData>)> {
    let mut groups: Vec<(&str, Vec<MessageIdData>)> = Vec::with_capacity(1);
    for id in ids {
        match groups.iter_mut().find(|(topic, _)| *topic == &*id.topic) {
            Some((_, group)) => group.push(id.id.clone()),
            None => groups.push((&id.topic, vec![id.id.clone()])),
        }
    }
    groups
}

impl std::fmt::Display for RemoteId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&printable(&self.id))
    }
}

/// How long a stopping consumer waits for the broker to confirm its close.
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// One subscription's pulsar-rs consumer.
pub(crate) struct RemoteConsumer<Exe: Executor> {
    consumer: Consumer<Vec<u8>, Exe>,
    in_flight: InFlight,
    /// The app's runtime, for the close bound.
    runtime: std::sync::Arc<dyn ruststream::runtime::Runtime>,
    /// [`PulsarBroker::batch_index_acknowledgement`](crate::PulsarBroker::batch_index_acknowledgement).
    batch_index_acks: bool,
    /// Deliveries received and not yet released.
    held: usize,
    /// The last message's topic, shared by the messages after it that have the same one.
    topic: Option<std::sync::Arc<str>>,
    /// Whether the subscription reads a retry topic: each delivery then says how many times
    /// it went through it (`RECONSUMETIMES`).
    retry_topic: bool,
}

impl<Exe: Executor> RemoteConsumer<Exe> {
    pub(crate) fn new(
        consumer: Consumer<Vec<u8>, Exe>,
        in_flight: InFlight,
        runtime: std::sync::Arc<dyn ruststream::runtime::Runtime>,
        batch_index_acks: bool,
        retry_topic: bool,
    ) -> Self {
        RemoteConsumer {
            consumer,
            in_flight,
            runtime,
            batch_index_acks,
            held: 0,
            topic: None,
            retry_topic,
        }
    }
}

/// `ledger:entry:partition`, plus `:index` for a message of a batch, as pulsar-rs writes
/// `ORIGIN_MESSAGE_ID`.
pub(super) fn printable(id: &MessageIdData) -> String {
    let (ledger, entry, partition) = (id.ledger_id, id.entry_id, id.partition.unwrap_or(-1));
    match id.batch_index {
        Some(index) => format!("{ledger}:{entry}:{partition}:{index}"),
        None => format!("{ledger}:{entry}:{partition}"),
    }
}

/// The entry that holds the message `id`.
fn entry_of(id: &MessageIdData) -> EntryPosition {
    EntryPosition {
        ledger: id.ledger_id,
        entry: id.entry_id,
        partition: id.partition.unwrap_or(-1),
    }
}

/// How a message is compressed, if it is (Pulsar's `CompressionType` `NONE` is 0).
fn compressed_of(metadata: &pulsar::message::proto::MessageMetadata) -> Option<Compressed> {
    let codec = metadata.compression.filter(|codec| *codec != 0)?;
    Some(Compressed {
        codec,
        uncompressed_size: metadata.uncompressed_size,
    })
}

/// The chunk metadata (PIP-37) of a message, if it is one chunk of a chunked message: all
/// four fields set, more than one chunk, and the chunk's place within them.
fn chunk_of(
    metadata: &pulsar::message::proto::MessageMetadata,
) -> Option<ruststream_pulsar_model::Chunk> {
    let chunk = ruststream_pulsar_model::Chunk {
        uuid: metadata.uuid.clone()?,
        chunk_id: u32::try_from(metadata.chunk_id?).ok()?,
        num_chunks: u32::try_from(metadata.num_chunks_from_msg?).ok()?,
        total_size: u32::try_from(metadata.total_chunk_msg_size?).ok()?,
    };
    (chunk.num_chunks > 1 && chunk.chunk_id < chunk.num_chunks).then_some(chunk)
}

/// The place of a message in its batched entry, if it has one. pulsar-rs gives every message
/// of a batch the entry's `num_messages_in_batch` in its metadata, and its index in its id.
fn batch_slot(id: &MessageIdData, batch_size: Option<i32>) -> Option<BatchSlot> {
    Some(BatchSlot {
        entry: entry_of(id),
        index: u32::try_from(id.batch_index?).ok()?,
        size: std::num::NonZeroU32::new(u32::try_from(batch_size?).ok()?)?,
    })
}

impl<Exe: Executor> ConsumerPort for RemoteConsumer<Exe> {
    type Id = RemoteId;

    fn entry(id: &RemoteId) -> EntryPosition {
        entry_of(&id.id)
    }

    fn message_id(id: &RemoteId) -> ruststream::MessageId {
        crate::message_id::of_proto(&id.id, None)
    }

    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received<RemoteId>>> {
        loop {
            match self.consumer.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(message))) => {
                    let id = message.message_id().clone();
                    self.held += 1;
                    let topic = match &self.topic {
                        Some(topic) if **topic == *message.topic => topic.clone(),
                        _ => {
                            let topic: std::sync::Arc<str> = message.topic.as_str().into();
                            self.topic = Some(topic.clone());
                            topic
                        }
                    };
                    self.in_flight.begin();
                    let key = message.key();
                    let publish_time = Some(Duration::from_millis(message.metadata().publish_time));
                    // 0 is how the Java client writes "no event time".
                    let event_time = message
                        .metadata()
                        .event_time
                        .filter(|ms| *ms > 0)
                        .map(Duration::from_millis);
                    let batch = batch_slot(&id, message.message_id.batch_size);
                    let chunk = chunk_of(message.metadata());
                    // The patched pulsar-rs hands a chunk over as stored (see patches/README.md).
                    let compressed = chunk.as_ref().and(compressed_of(message.metadata()));
                    let properties = Properties::Owned(
                        message
                            .metadata()
                            .properties
                            .iter()
                            .map(|kv| (kv.key.clone(), kv.value.clone()))
                            .collect(),
                    );
                    let republished = match self.retry_topic {
                        true => crate::republish::republished(&properties),
                        false => 0,
                    };
                    return Poll::Ready(Some(Received {
                        id: RemoteId {
                            topic: topic.clone(),
                            id,
                        },
                        topic,
                        payload: Payload::Owned(message.payload.data),
                        properties,
                        key,
                        // Exposed by the patched pulsar-rs (see patches/README.md).
                        redelivery_count: Some(message.redelivery_count),
                        republished,
                        batch,
                        publish_time,
                        event_time,
                        // The decode failure is set by the patched pulsar-rs (see
                        // patches/README.md).
                        unusual: crate::chunked::unusual(chunk, message.decode_failure, compressed),
                    }));
                }
                Poll::Ready(Some(Err(error))) => {
                    // pulsar-rs reconnects by itself; the unsettled messages come back.
                    tracing::warn!(%error, "the consumer reported an error; continuing");
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    async fn ack(&mut self, ids: &[RemoteId]) -> Result<(), BoxError> {
        for (topic, ids) in by_topic(ids) {
            self.consumer.ack_many_with_id(topic, ids).await?;
        }
        Ok(())
    }

    fn acks_batch_index(&self) -> bool {
        self.batch_index_acks
    }

    async fn ack_batch_index(
        &mut self,
        id: &RemoteId,
        size: std::num::NonZeroU32,
        ack_set: Vec<i64>,
    ) -> Result<(), BoxError> {
        // pulsar-rs passes the id through to `CommandAck` as it is; its ack-timeout record of
        // the message (keyed by the id without an ack set) stays until the entry's own ack.
        let index_ack = MessageIdData {
            ack_set,
            batch_size: i32::try_from(size.get()).ok(),
            ..id.id.clone()
        };
        self.consumer
            .ack_with_id(&id.topic, index_ack)
            .await
            .map_err(Into::into)
    }

    async fn nack(&mut self, ids: &[RemoteId]) -> Result<(), BoxError> {
        for (topic, ids) in by_topic(ids) {
            self.consumer.nack_many_with_id(topic, ids).await?;
        }
        Ok(())
    }

    fn commit(
        &mut self,
        txn: &Transaction,
        acks: Vec<(RemoteId, Option<BatchSlot>)>,
    ) -> BoxFuture<'static, Result<(), CommitError>> {
        let Some(remote) =
            (txn.handle.as_any()).downcast_ref::<super::transactions::RemoteTransaction<Exe>>()
        else {
            let error = format!(
                "transaction {} was not opened on this broker's connection",
                txn.handle.id()
            );
            return Box::pin(std::future::ready(Err(CommitError::failed(error.into()))));
        };
        let (txn, sends) = (remote.txn.clone(), remote.sends.clone());
        // A message of a batched entry is acknowledged at its index alone, so that its
        // siblings' transactions do not overlap it.
        let ids: Vec<RemoteId> = (acks.into_iter())
            .map(|(mut id, batch)| {
                if let Some(slot) = batch {
                    id.id.ack_set = slot.only_this();
                    id.id.batch_size = i32::try_from(slot.size.get()).ok();
                }
                id
            })
            .collect();
        let acks: Vec<_> = (by_topic(&ids).into_iter())
            .map(|(topic, ids)| self.consumer.ack_many_with_id_in_detached(topic, ids, &txn))
            .collect();
        Box::pin(async move {
            // What the transaction's entries still hold goes out while the acknowledgements do
            // (each registers its partition or subscription first, a round trip): the commit
            // waits for both. A refused acknowledgement makes the commit fail; its own error
            // says why.
            let acked = async {
                let mut refused = None;
                for ack in acks {
                    if let Err(error) = ack.await {
                        refused.get_or_insert(error);
                    }
                }
                refused
            };
            let (flushed, refused) = futures::join!(sends.flush(), acked);
            if let Err(error) = flushed {
                // Nothing is committed: the machine aborts it.
                return Err(CommitError::not_sent(&error));
            }
            txn.commit().await.map_err(|error| match refused {
                Some(ack) => CommitError::failed(
                    format!(
                        "an acknowledgement in the transaction was refused ({ack}), so the \
                         commit failed: {error}"
                    )
                    .into(),
                ),
                None => CommitError::failed(error.into()),
            })
        })
    }

    fn restart_ack_timeout<'a>(&mut self, ids: impl Iterator<Item = &'a RemoteId>) {
        if self.consumer.unacked_message_redelivery_delay().is_none() {
            return;
        }
        let ids: Vec<RemoteId> = ids.cloned().collect();
        for (topic, ids) in by_topic(&ids) {
            // Only a consumer that is closing has no engine left to tell.
            if let Err(error) = self.consumer.restart_ack_timeout(topic, ids) {
                tracing::debug!(%error, "could not restart the ack timeouts of a batch");
            }
        }
    }

    fn release(&mut self, _id: &RemoteId) {
        debug_assert!(self.held > 0, "released more deliveries than were received");
        if self.held > 0 {
            self.held -= 1;
            self.in_flight.end();
        }
    }

    fn acquire(&mut self, _id: &RemoteId) {
        self.held += 1;
        self.in_flight.begin();
    }

    async fn close(mut self) {
        for _ in 0..std::mem::take(&mut self.held) {
            self.in_flight.end();
        }
        // pulsar-rs's `close` asks the consumer engine for its connection, and the engine
        // answers only between two messages: while it waits for room in the receive queue (a
        // stopping driver no longer pulls), it never does. Take what is queued (it stays
        // unacknowledged and returns to the subscription), then close within a bound; past
        // it, dropping the consumer closes it as well (the engine's drop sends the close).
        while let Some(Some(_)) = self.consumer.next().now_or_never() {}
        let closing = std::pin::pin!(self.consumer.close());
        let bound = std::pin::pin!(self.runtime.sleep(CLOSE_BOUND));
        match futures::future::select(closing, bound).await {
            futures::future::Either::Left((Ok(()), _)) => {}
            futures::future::Either::Left((Err(error), _)) => tracing::warn!(
                %error,
                "closing the consumer failed; the broker drops it with the connection"
            ),
            futures::future::Either::Right(_) => tracing::warn!(
                bound = ?CLOSE_BOUND,
                "closing the consumer took too long; it is dropped instead, and the broker \
                 gives its unacknowledged messages back when it goes"
            ),
        }
    }
}
