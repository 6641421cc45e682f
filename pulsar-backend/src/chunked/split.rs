//! The publishing side: how large each chunk of a message is, and the id its chunks share.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use ruststream::message::Message;

/// What a chunk's metadata may take besides its properties and key (producer name, sequence
/// id, times, the chunk fields): a generous bound, since the broker's `maxMessageSize` counts
/// the metadata too and a chunk just over it would be refused.
const METADATA_ROOM: usize = 1024;

/// The payload bytes each chunk of `message` takes under a broker limit of `max_message_size`
/// bytes: the limit less the metadata every chunk repeats (properties, key), as the Java client
/// subtracts its metadata's size. At least 1.
pub(crate) fn chunk_payload_size(max_message_size: usize, message: &Message) -> usize {
    let repeated: usize = message
        .properties
        .iter()
        .map(|(name, value)| name.len() + value.len() + 4)
        .sum::<usize>()
        + message.key.as_ref().map_or(0, String::len);
    max_message_size
        .saturating_sub(repeated + METADATA_ROOM)
        .max(1)
}

/// Whether `message` is published in chunks under `chunk_over` (none: never).
pub(crate) fn needs_chunks(chunk_over: Option<usize>, message: &Message) -> bool {
    chunk_over.is_some_and(|max| message.payload.len() > chunk_payload_size(max, message))
}

/// A new id for the chunks of one message, unique across this process's producers and, with
/// the process id and its start, across processes (the Java client writes
/// `<producer name>-<sequence id>`; consumers only compare it).
pub(crate) fn next_uuid() -> String {
    static START: OnceLock<u128> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let start = START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("ruststream-{:x}-{start:x}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunk_size_leaves_room_for_the_metadata_each_chunk_repeats() {
        let mut message = Message::new("refunds", vec![0u8; 5000]);
        assert_eq!(chunk_payload_size(4096, &message), 3072);
        message
            .properties
            .push(("trace".into(), "0123456789".into()));
        message.key = Some("card-1".into());
        assert_eq!(chunk_payload_size(4096, &message), 3072 - 19 - 6);
        assert!(needs_chunks(Some(4096), &message));
        assert!(!needs_chunks(None, &message));
        assert!(!needs_chunks(Some(8192), &message));
        assert_eq!(chunk_payload_size(10, &message), 1);
    }

    #[test]
    fn each_message_gets_its_own_uuid() {
        assert_ne!(next_uuid(), next_uuid());
    }
}
