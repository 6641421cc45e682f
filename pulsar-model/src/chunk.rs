//! Chunked messages (PIP-37): a message larger than the broker's `maxMessageSize`, split by its
//! producer into chunks that the broker stores and dispatches as messages of their own, and
//! that the consumer joins again before the application sees the message.
//!
//! The broker knows nothing of chunks: each is an ordinary message whose metadata names the
//! message it belongs to (`uuid`), its place (`chunk_id`, from 0), how many there are
//! (`num_chunks_from_msg`) and the whole payload's size (`total_chunk_msg_size`). The model
//! stores them the same way ([`Content::chunk`](crate::Content::chunk)), so a consumer of the
//! in-process Pulsar receives the chunks one by one, as from a broker.

use crate::OutgoingMessage;

/// Where a message stands in the chunked message it belongs to: the four metadata fields every
/// chunk carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Chunk {
    /// The id every chunk of one message shares (the Java client writes
    /// `<producer name>-<sequence id>`).
    pub uuid: String,
    /// This chunk's place, from 0.
    pub chunk_id: u32,
    /// How many chunks the message was split into.
    pub num_chunks: u32,
    /// The whole payload's size in bytes.
    pub total_size: u32,
}

impl Chunk {
    /// Whether this is the message's last chunk, the one that completes it.
    pub fn is_last(&self) -> bool {
        self.chunk_id + 1 == self.num_chunks
    }
}

/// `message` split into chunks of at most `max_chunk` payload bytes, all named `uuid`, in
/// order, as a chunking producer publishes them: each chunk keeps the message's properties, key
/// and event time. A payload of at most `max_chunk` bytes is returned whole, as one message
/// without chunk metadata (a producer chunks only what exceeds the limit). A `max_chunk` of 0 is
/// taken as 1.
pub fn split_into_chunks(
    message: OutgoingMessage,
    max_chunk: usize,
    uuid: &str,
) -> Vec<OutgoingMessage> {
    let max_chunk = max_chunk.max(1);
    if message.payload.len() <= max_chunk {
        return vec![message];
    }
    let total_size = u32::try_from(message.payload.len()).unwrap_or(u32::MAX);
    let pieces: Vec<&[u8]> = message.payload.chunks(max_chunk).collect();
    let num_chunks = u32::try_from(pieces.len()).unwrap_or(u32::MAX);
    pieces
        .iter()
        .enumerate()
        .map(|(index, piece)| OutgoingMessage {
            payload: piece.to_vec(),
            properties: message.properties.clone(),
            key: message.key.clone(),
            event_time: message.event_time,
            deliver_at: message.deliver_at,
            unreadable: message.unreadable.clone(),
            schema: message.schema.clone(),
            chunk: Some(Chunk {
                uuid: uuid.to_owned(),
                chunk_id: u32::try_from(index).unwrap_or(u32::MAX),
                num_chunks,
                total_size,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_payload_becomes_numbered_chunks_of_the_limit() {
        let message = OutgoingMessage::new(vec![7u8; 10]).with_key("card-1");
        let chunks = split_into_chunks(message, 4, "p-0");
        let sizes: Vec<usize> = chunks.iter().map(|c| c.payload.len()).collect();
        assert_eq!(sizes, [4, 4, 2]);
        for (i, chunk) in chunks.iter().enumerate() {
            let meta = chunk.chunk.as_ref().expect("chunk metadata");
            assert_eq!(
                (
                    meta.uuid.as_str(),
                    meta.chunk_id,
                    meta.num_chunks,
                    meta.total_size
                ),
                ("p-0", i as u32, 3, 10)
            );
            assert_eq!(chunk.key.as_deref(), Some("card-1"));
            assert_eq!(meta.is_last(), i == 2);
        }
    }

    #[test]
    fn a_payload_within_the_limit_stays_one_plain_message() {
        let chunks = split_into_chunks(OutgoingMessage::new(vec![1u8; 4]), 4, "p-1");
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].chunk, None);
    }
}
