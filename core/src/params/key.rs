//! `MessageKey`: the message's key.

use alloc::string::String;

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

/// The partitioning / ordering key of the delivered message, if it has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageKey(pub Option<String>);

impl<S> Extract<S> for MessageKey {
    fn extract(message: &Incoming<'_>, _: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(MessageKey(message.key.map(String::from)))
    }
}
