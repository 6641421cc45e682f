//! Why a handler could not be run for a delivery.

use alloc::string::String;

/// A delivery the handler could not even start on. Nothing is lost and nothing loops hot: a
/// payload that does not decode goes to the dead-letter topic at once where the registration
/// declares one (no retry can make it decode); otherwise, and for a parameter that cannot be
/// extracted, the dispatcher treats it as "no outcome": the message is left unacknowledged and
/// comes back after the ack timeout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// The payload does not decode into the handler's payload type.
    #[error(
        "handler `{handler}`: the payload is not a JSON `{payload_type}` ({reason}); \
         with a dead-letter topic declared the message goes there now, otherwise it is \
         left unacknowledged and comes back after the ack timeout. Fix the producer, \
         or change the handler's payload type"
    )]
    Decode {
        /// The handler.
        handler: &'static str,
        /// The Rust type the payload should decode into.
        payload_type: &'static str,
        /// The decoder's own message.
        reason: String,
    },
    /// A parameter could not be extracted.
    #[error("handler `{handler}`: {reason}")]
    Extract {
        /// The handler.
        handler: &'static str,
        /// What went wrong, naming the parameter.
        reason: String,
    },
}
