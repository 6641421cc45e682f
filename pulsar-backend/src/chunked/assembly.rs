//! Joining the chunks of chunked messages, with a bound on how many are joined at once and on
//! how long one may wait for its last chunk. Pure: the time comes with each call.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use ruststream::Instant;

use super::ChunkedId;
use ruststream_driver::port::{Payload, Received};

use super::{Chunks, Compressed};

/// The chunked messages a consumer is joining, oldest first.
pub(super) struct Assembly<Id> {
    pending: VecDeque<Partial<Id>>,
    max_pending: usize,
    expiry: Duration,
    /// Chunks to acknowledge with the consumer's next acknowledgement: those of expired
    /// messages and second copies of chunks.
    to_ack: Vec<Id>,
}

/// A chunked message of which the first chunks arrived.
struct Partial<Id> {
    uuid: String,
    num_chunks: u32,
    total_size: u32,
    /// The chunks received, in order.
    ids: Vec<Id>,
    payload: Vec<u8>,
    started: Instant,
    /// The first chunk, its payload taken: the message's properties, key, topic and times.
    first: Received<Id>,
}

impl<Id: Clone + PartialEq + std::fmt::Display> Assembly<Id> {
    /// Joining at most `max_pending` messages at once, each for at most `expiry`.
    pub(super) fn new(max_pending: usize, expiry: Duration) -> Self {
        Assembly {
            pending: VecDeque::new(),
            max_pending: max_pending.max(1),
            expiry,
            to_ack: Vec::new(),
        }
    }

    /// How many messages are being joined.
    pub(super) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The chunks to acknowledge now, taken.
    pub(super) fn take_acks(&mut self) -> Vec<Id> {
        std::mem::take(&mut self.to_ack)
    }

    /// Whether chunks wait to be acknowledged.
    pub(super) fn has_acks(&self) -> bool {
        !self.to_ack.is_empty()
    }

    /// Take the chunk `received` (its `chunk` set, more than one chunk) at `now`: the whole
    /// message once this is its last chunk.
    pub(super) fn push(
        &mut self,
        mut received: Received<Id>,
        now: Instant,
    ) -> Option<Received<ChunkedId<Id>>> {
        self.expire(now);
        let chunk = received.take_chunk().expect("only chunks are pushed");
        let found = self.pending.iter().position(|p| p.uuid == chunk.uuid);
        if chunk.chunk_id == 0 {
            let mut started = now;
            if let Some(at) = found {
                let earlier = self.pending.remove(at).expect("found above");
                if earlier.ids.contains(&received.id) {
                    // The same chunks redelivered (an ack timeout, a reconnection) come again
                    // by themselves; the message's time to complete still counts from the
                    // first time.
                    started = earlier.started;
                } else {
                    // A producer's resend leaves the first copies stored apart, never to be
                    // joined.
                    self.to_ack.extend(earlier.ids);
                }
            }
            if self.pending.len() >= self.max_pending {
                let oldest = self.pending.pop_front().expect("the queue is full");
                tracing::warn!(
                    uuid = %oldest.uuid,
                    topic = %oldest.first.topic,
                    chunks = oldest.ids.len(),
                    max_pending = self.max_pending,
                    "too many chunked messages being joined at once: the oldest is dropped, its \
                     chunks left unacknowledged to come back after the ack timeout"
                );
            }
            let payload = match std::mem::replace(&mut received.payload, Payload::Owned(Vec::new()))
            {
                Payload::Owned(mut bytes) => {
                    bytes.reserve((chunk.total_size as usize).saturating_sub(bytes.len()));
                    bytes
                }
                shared => {
                    let mut bytes = Vec::with_capacity(chunk.total_size as usize);
                    bytes.extend_from_slice(&shared);
                    bytes
                }
            };
            let place = self.pending.partition_point(|p| p.started <= started);
            self.pending.insert(
                place,
                Partial {
                    uuid: chunk.uuid,
                    num_chunks: chunk.num_chunks,
                    total_size: chunk.total_size,
                    ids: vec![received.id.clone()],
                    payload,
                    started,
                    first: received,
                },
            );
            return None;
        }
        let Some(at) = found else {
            tracing::warn!(
                uuid = %chunk.uuid,
                chunk = chunk.chunk_id,
                message_id = %received.id,
                topic = %received.topic,
                "a chunk of a message whose first chunk was not received: left unacknowledged"
            );
            return None;
        };
        let partial = &mut self.pending[at];
        let next = partial.ids.len() as u32;
        if chunk.chunk_id < next {
            // A second copy: acknowledged when it is stored apart (a producer's resend).
            if !partial.ids.contains(&received.id) {
                self.to_ack.push(received.id);
            }
            return None;
        }
        if chunk.chunk_id > next || chunk.num_chunks != partial.num_chunks {
            let dropped = self.pending.remove(at).expect("found above");
            tracing::warn!(
                uuid = %dropped.uuid,
                chunk = chunk.chunk_id,
                expected = next,
                topic = %dropped.first.topic,
                "a chunk out of order: the message cannot be joined, its chunks are left \
                 unacknowledged"
            );
            return None;
        }
        partial.ids.push(received.id.clone());
        partial.payload.extend_from_slice(&received.payload);
        if chunk.chunk_id + 1 < partial.num_chunks {
            return None;
        }
        let whole = self.pending.remove(at).expect("found above");
        if whole.payload.len() != whole.total_size as usize {
            tracing::warn!(
                uuid = %whole.uuid,
                joined = whole.payload.len(),
                declared = whole.total_size,
                "the chunks of a message add up to another size than their metadata declares"
            );
        }
        let mut earlier = whole.ids;
        earlier.pop();
        let last = received.id;
        let mut joined = whole.first.with_id(|_| ChunkedId {
            last,
            earlier: Some(Arc::new(earlier)),
        });
        joined.payload = Payload::Owned(match joined.take_compressed() {
            None => whole.payload,
            Some(compressed) => match decompress(compressed, whole.payload) {
                Ok(bytes) => bytes,
                Err((error, stored)) => {
                    // What the client cannot read goes where an unreadable message goes.
                    joined.set_unreadable(format!(
                        "the chunks of message {} joined, but they do not decompress: {error}",
                        whole.uuid
                    ));
                    stored
                }
            },
        });
        // The broker counts each chunk; the last one's is the message's, as in the Java client.
        joined.redelivery_count = received.redelivery_count;
        Some(joined)
    }

    /// Drop the messages that waited `expiry` or longer for their last chunk; their chunks are
    /// acknowledged with the next acknowledgements.
    pub(super) fn expire(&mut self, now: Instant) {
        while let Some(oldest) = self.pending.front() {
            if now < oldest.started.saturating_add(self.expiry) {
                return;
            }
            let expired = self.pending.pop_front().expect("front exists");
            tracing::warn!(
                uuid = %expired.uuid,
                topic = %expired.first.topic,
                received = expired.ids.len(),
                chunks = expired.num_chunks,
                expiry = ?self.expiry,
                "a chunked message did not complete in time: its chunks are dropped and \
                 acknowledged"
            );
            self.to_ack.extend(expired.ids);
        }
    }
}

/// `joined`, the payload of a message joined from its chunks, decompressed as its chunks say;
/// on failure the error and the bytes as they were.
fn decompress(compressed: Compressed, joined: Vec<u8>) -> Result<Vec<u8>, (String, Vec<u8>)> {
    let metadata = pulsar::message::proto::MessageMetadata {
        compression: Some(compressed.codec),
        uncompressed_size: compressed.uncompressed_size,
        ..Default::default()
    };
    pulsar::consumer::decompress_joined(&metadata, joined)
        .map_err(|(error, joined)| (error.to_string(), joined))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream_driver::port::Properties;
    use ruststream_pulsar_model::Chunk;

    /// Every chunk id a joined message's id stands for, in order.
    fn ids_of(id: &ChunkedId<u32>) -> Vec<u32> {
        let mut ids = Vec::new();
        id.each(|chunk| ids.push(*chunk));
        ids
    }

    fn chunk(id: u32, uuid: &str, index: u32, of: u32, body: &str) -> Received<u32> {
        Received {
            id,
            payload: Payload::Owned(body.as_bytes().to_vec()),
            properties: Properties::Owned(vec![("kind".into(), "refund".into())]),
            topic: "persistent://public/default/refunds".into(),
            key: Some("card-1".into()),
            redelivery_count: Some(id),
            republished: 0,
            batch: None,
            publish_time: None,
            event_time: None,
            unusual: super::super::unusual(
                Some(Chunk {
                    uuid: uuid.into(),
                    chunk_id: index,
                    num_chunks: of,
                    total_size: 9,
                }),
                None,
                None,
            ),
        }
    }

    /// A chunk of a message Snappy-compressed before it was split (`whole` bytes once
    /// decompressed), as stored.
    #[cfg(feature = "compression")]
    fn compressed_chunk(id: u32, index: u32, of: u32, bytes: &[u8], whole: usize) -> Received<u32> {
        let mut stored = chunk(id, "z", index, of, "");
        stored.payload = Payload::Owned(bytes.to_vec());
        stored.set_compressed(Compressed {
            codec: pulsar::message::proto::CompressionType::Snappy as i32,
            uncompressed_size: u32::try_from(whole).ok(),
        });
        stored
    }

    #[cfg(feature = "compression")]
    #[test]
    fn a_message_compressed_before_it_was_split_is_decompressed_once_joined() {
        let text = "refund 7 approved; ".repeat(50);
        let packed = snap::raw::Encoder::new()
            .compress_vec(text.as_bytes())
            .expect("compresses");
        let (first, second) = packed.split_at(packed.len() / 2);
        let mut a = assembly();
        assert!(a
            .push(compressed_chunk(1, 0, 2, first, text.len()), at(0))
            .is_none());
        let whole = a
            .push(compressed_chunk(2, 1, 2, second, text.len()), at(0))
            .expect("complete");
        assert_eq!(&*whole.payload, text.as_bytes());
        assert_eq!(whole.unreadable(), None);
        let mut whole = whole;
        assert_eq!(whole.take_compressed(), None);
    }

    #[cfg(feature = "compression")]
    #[test]
    fn joined_chunks_that_do_not_decompress_are_unreadable_with_their_bytes() {
        let mut a = assembly();
        assert!(a
            .push(compressed_chunk(1, 0, 2, b"not ", 40), at(0))
            .is_none());
        let whole = a
            .push(compressed_chunk(2, 1, 2, b"snappy", 40), at(0))
            .expect("complete");
        assert_eq!(&*whole.payload, b"not snappy");
        let why = whole.unreadable().expect("unreadable");
        assert!(why.contains("do not decompress"), "{why}");
    }

    fn at(secs: u64) -> Instant {
        Instant::ZERO.saturating_add(Duration::from_secs(secs))
    }

    fn assembly() -> Assembly<u32> {
        Assembly::new(2, Duration::from_secs(60))
    }

    #[test]
    fn the_last_chunk_completes_the_whole_message() {
        let mut a = assembly();
        assert!(a.push(chunk(1, "m", 0, 3, "abc"), at(0)).is_none());
        assert!(a.push(chunk(2, "m", 1, 3, "def"), at(0)).is_none());
        let whole = a.push(chunk(3, "m", 2, 3, "ghi"), at(1)).expect("complete");
        assert_eq!(&*whole.payload, b"abcdefghi");
        assert_eq!(ids_of(&whole.id), [1, 2, 3]);
        assert_eq!(whole.key.as_deref(), Some("card-1"));
        assert_eq!(&*whole.properties, &[("kind".into(), "refund".into())]);
        assert_eq!(whole.redelivery_count, Some(3));
        assert_eq!(a.pending(), 0);
        assert!(!a.has_acks());
    }

    #[test]
    fn interleaved_messages_are_joined_apart() {
        let mut a = assembly();
        assert!(a.push(chunk(1, "m", 0, 2, "ab"), at(0)).is_none());
        assert!(a.push(chunk(2, "n", 0, 2, "xy"), at(0)).is_none());
        let n = a.push(chunk(3, "n", 1, 2, "z"), at(0)).expect("n complete");
        let m = a.push(chunk(4, "m", 1, 2, "c"), at(0)).expect("m complete");
        assert_eq!((&*n.payload, &*m.payload), (&b"xyz"[..], &b"abc"[..]));
    }

    #[test]
    fn past_the_bound_the_oldest_is_dropped_unacknowledged() {
        let mut a = assembly();
        a.push(chunk(1, "m", 0, 2, "a"), at(0));
        a.push(chunk(2, "n", 0, 2, "b"), at(0));
        a.push(chunk(3, "o", 0, 2, "c"), at(0));
        assert_eq!(a.pending(), 2);
        assert!(!a.has_acks(), "left for the ack timeout to bring back");
        assert!(
            a.push(chunk(4, "m", 1, 2, "x"), at(0)).is_none(),
            "m was dropped"
        );
        assert!(a.push(chunk(5, "n", 1, 2, "y"), at(0)).is_some());
    }

    #[test]
    fn an_incomplete_message_expires_and_its_chunks_are_acknowledged() {
        let mut a = assembly();
        a.push(chunk(1, "m", 0, 3, "a"), at(0));
        a.push(chunk(2, "m", 1, 3, "b"), at(10));
        a.expire(at(59));
        assert_eq!(a.pending(), 1);
        a.expire(at(60));
        assert_eq!(a.pending(), 0);
        assert_eq!(a.take_acks(), [1, 2]);
        assert!(a.push(chunk(3, "m", 2, 3, "c"), at(61)).is_none());
    }

    #[test]
    fn a_redelivered_message_starts_over_and_a_resent_one_acknowledges_the_first_copy() {
        let mut a = assembly();
        a.push(chunk(1, "m", 0, 2, "a"), at(0));
        // Redelivered: the same chunk id again, nothing to acknowledge.
        a.push(chunk(1, "m", 0, 2, "a"), at(1));
        assert!(!a.has_acks());
        a.expire(at(60));
        assert_eq!(a.pending(), 0, "the expiry counts from the first delivery");
        assert_eq!(a.take_acks(), [1]);
        a.push(chunk(1, "m", 0, 2, "a"), at(61));
        // Resent by its producer: stored apart, the first copy is acknowledged.
        a.push(chunk(7, "m", 0, 2, "a"), at(2));
        assert_eq!(a.take_acks(), [1]);
        // Resent once more: the second copy is acknowledged in turn.
        a.push(chunk(8, "m", 0, 2, "a"), at(2));
        assert_eq!(a.take_acks(), [7]);
        let whole = a.push(chunk(9, "m", 1, 2, "b"), at(3)).expect("complete");
        assert_eq!(ids_of(&whole.id), [8, 9]);
    }

    #[test]
    fn a_chunk_out_of_order_drops_the_message() {
        let mut a = assembly();
        a.push(chunk(1, "m", 0, 3, "a"), at(0));
        assert!(a.push(chunk(3, "m", 2, 3, "c"), at(0)).is_none());
        assert_eq!(a.pending(), 0);
        assert!(!a.has_acks());
        assert!(a.push(chunk(4, "x", 1, 3, "c"), at(0)).is_none());
    }
}
