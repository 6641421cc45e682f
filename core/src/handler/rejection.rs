//! Why a handler could not be run for a delivery.

use alloc::boxed::Box;

/// A delivery the handler could not even start on: the client could not read the message, its
/// payload does not decode, or a part of the message a parameter asks for is missing. Nothing
/// is lost and nothing loops hot: a message that cannot be read or decoded goes to the
/// dead-letter topic at once where the registration declares one (no retry can make it
/// decode); otherwise, and for a missing part, the delivery is left unacknowledged and comes
/// back after the ack timeout.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// The payload does not decode into the handler's payload type.
    #[error(
        "handler `{handler}`: the payload is not a {} `{payload_type}` ({source}); with a \
         dead-letter topic declared the message goes there now, otherwise it is left \
         unacknowledged and comes back after the ack timeout. Fix the producer, or change the \
         handler's payload type",
        .source.format()
    )]
    Decode {
        /// The handler.
        handler: &'static str,
        /// The Rust type the payload should decode into.
        payload_type: &'static str,
        /// Why it does not.
        source: DecodeError,
    },
    /// The client could not read the message at all (a compression it cannot undo, corrupt
    /// compressed bytes, a batch that does not parse), so there is no payload to decode: the
    /// delivery holds the bytes as the broker stored them.
    #[error(
        "handler `{handler}`: the message cannot be read ({reason}); with a dead-letter topic \
         declared it goes there now with its bytes as stored, otherwise it is left \
         unacknowledged and comes back after the ack timeout. Have the producer use a \
         compression every consumer reads (see docs/interoperability.md)"
    )]
    Unreadable {
        /// The handler.
        handler: &'static str,
        /// What the client said when it could not read it.
        reason: alloc::string::String,
    },
    /// A part of the message the handler takes as a parameter is missing from this delivery.
    #[error(
        "handler `{handler}`: the `{parameter}` parameter needs {what}; remove the parameter, \
         or take it as an `Option` where the type allows it"
    )]
    Missing {
        /// The handler.
        handler: &'static str,
        /// The parameter's type.
        parameter: &'static str,
        /// What the delivery lacks.
        what: &'static str,
    },
}

/// Why a payload does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// JSON is UTF-8 (RFC 8259 §8.1), and the payload is not.
    #[error("not UTF-8, which JSON requires: {source} (byte {at} of {len})")]
    NotUtf8 {
        /// The first byte that is not valid.
        at: usize,
        /// The payload's length.
        len: usize,
        /// The check's own error.
        source: core::str::Utf8Error,
    },
    /// Not JSON of the handler's type.
    #[error("{0}")]
    Json(serde_json::Error),
    /// Not data of the handler's type in another format (MessagePack, ...).
    #[error("not {format} for this type: {source}")]
    Other {
        /// The format, as its name is written (`MessagePack`).
        format: &'static str,
        /// The decoder's own error.
        source: Box<dyn core::error::Error + Send + Sync>,
    },
}

impl DecodeError {
    /// The format the payload was decoded from.
    pub fn format(&self) -> &'static str {
        match self {
            DecodeError::NotUtf8 { .. } | DecodeError::Json(_) => "JSON",
            DecodeError::Other { format, .. } => format,
        }
    }
}
