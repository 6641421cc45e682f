//! `MessageId`: the broker's id of the message.

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

pub use crate::message_id::MessageId;

impl<S> Extract<S> for MessageId {
    fn extract(message: &Incoming<'_>, _: &S, handler: &'static str) -> Result<Self, Rejection> {
        message.message_id.ok_or(Rejection::Missing {
            handler,
            parameter: "MessageId",
            what: "a message id, which the broker gave this delivery none of",
        })
    }
}
