//! Chunked messages (PIP-37) joined before the driver sees them, as the Java client does.
//!
//! A producer with chunking enabled splits a message larger than the broker's
//! `maxMessageSize` into chunks, each stored and dispatched as a message of its own. Every
//! transport's consumer is wrapped in [`Chunked`], a [`ConsumerPort`](ruststream_driver::port::ConsumerPort)
//! of whole messages: it keeps the chunks of each message until the last arrives
//! ([`assembly`]), then hands the driver one delivery with the whole payload, whose id
//! ([`ChunkedId`]) stands for all its chunks: acknowledging, redelivering, releasing it does
//! so for every chunk. Retry and dead-letter copies are made of the whole message.
//!
//! | | bound | then |
//! |---|---|---|
//! | messages being joined | [`MAX_PENDING_CHUNKED_MESSAGES`] (10, the Java client's `maxPendingChunkedMessage`) | the oldest is dropped; its chunks stay unacknowledged and come back after the ack timeout (the Java default, `autoAckOldestChunkedMessageOnQueueFull=false`) |
//! | time to receive every chunk | [`INCOMPLETE_CHUNKED_MESSAGE_EXPIRY`] (60 s, the Java client's `expireTimeOfIncompleteChunkedMessage`) | the message is dropped and its chunks acknowledged, as the Java client does: they cannot be joined any more |
//!
//! Publishing chunked ([`PulsarBroker::chunk_messages_over`](crate::PulsarBroker::chunk_messages_over))
//! splits a payload over the broker's limit into chunks of the limit less the metadata each
//! repeats ([`chunk_payload_size`]), all named by one [`next_uuid`].
//!
//! Chunks that cannot be joined (the first chunk lost, out of order) are left unacknowledged as
//! well; a chunk received twice is acknowledged when it is a second copy stored apart (a
//! producer's resend), not when it is the same message redelivered.

mod assembly;
mod extension;
mod id;
mod port;
mod split;

pub(crate) use extension::{unusual, Chunks, Compressed};
pub(crate) use id::ChunkedId;
pub(crate) use port::Chunked;
pub(crate) use split::{chunk_payload_size, needs_chunks, next_uuid};

/// Why a dead-letter replay stops at a chunk: it copies message by message with a consumer that
/// does not join chunks, and a chunk copied on its own (without its metadata) would reach the
/// original topic as a broken message.
pub(crate) fn replay_refused(message_id: &str, uuid: &str, chunks: u32) -> String {
    format!(
        "dead letter {message_id} is one of the {chunks} chunks of a chunked message (uuid \
         {uuid}); the replay does not join chunks yet, so it stops here rather than copy it \
         broken: the chunks stay on the dead-letter topic, unacknowledged. Move that message \
         with another client (the Java client joins chunks), or acknowledge it there, then \
         replay again"
    )
}

/// How many chunked messages a consumer joins at once (the Java client's default
/// `maxPendingChunkedMessage`): the chunks held are bounded by this many messages. Past it, the
/// oldest message being joined is dropped and its chunks are left unacknowledged (they come
/// back after the subscription's ack timeout).
pub const MAX_PENDING_CHUNKED_MESSAGES: usize = 10;

/// How long a consumer waits for the rest of a chunked message (the Java client's default
/// `expireTimeOfIncompleteChunkedMessage`) before it drops the chunks it has and acknowledges
/// them. Checked whenever the consumer receives; the acknowledgements leave with the
/// subscription's next ones.
pub const INCOMPLETE_CHUNKED_MESSAGE_EXPIRY: std::time::Duration =
    std::time::Duration::from_secs(60);
