//! `MessageId`: the broker's id of the message.

use alloc::string::String;

use crate::handler::{Extract, HandlerError};
use crate::message::Incoming;

/// The broker's id of the delivered message, as it prints it: for Pulsar
/// `ledger:entry:partition`, plus `:index` for a message of a batch. Stable across
/// redeliveries of the same message, so it serves to deduplicate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

impl MessageId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Display for MessageId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<S> Extract<S> for MessageId {
    fn extract(message: &Incoming<'_>, _: &S, handler: &'static str) -> Result<Self, HandlerError> {
        match message.message_id {
            Some(id) => Ok(MessageId(alloc::format!("{id}"))),
            None => Err(HandlerError::Extract {
                handler,
                reason: String::from(
                    "the `MessageId` parameter: the broker gave this delivery no message id",
                ),
            }),
        }
    }
}
