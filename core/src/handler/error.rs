//! Why a handler could not be run for a delivery.

use alloc::string::String;
use core::fmt;

/// A delivery the handler could not even start on. The dispatcher treats it as "no outcome":
/// the message is left unacknowledged, so nothing is lost and nothing loops hot; it comes back
/// after the ack timeout and, with a dead-letter policy, ends on the dead-letter topic once its
/// attempts are spent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerError {
    /// The payload does not decode into the handler's payload type.
    Decode {
        /// The handler.
        handler: &'static str,
        /// The Rust type the payload should decode into.
        payload_type: &'static str,
        /// The decoder's own message.
        reason: String,
    },
    /// A parameter could not be extracted.
    Extract {
        /// The handler.
        handler: &'static str,
        /// What went wrong, naming the parameter.
        reason: String,
    },
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Decode {
                handler,
                payload_type,
                reason,
            } => write!(
                f,
                "handler `{handler}`: the payload is not a JSON `{payload_type}` ({reason}); the \
                 message is left unacknowledged and comes back after the ack timeout (then to \
                 the dead-letter topic once its attempts are spent). Fix the producer, or \
                 change the handler's payload type"
            ),
            HandlerError::Extract { handler, reason } => {
                write!(f, "handler `{handler}`: {reason}")
            }
        }
    }
}

impl core::error::Error for HandlerError {}
