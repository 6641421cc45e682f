//! `Topic`: where the message came from.

use alloc::string::String;

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

/// The fully qualified topic the delivered message came from (for a partitioned topic, the
/// partition's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic(pub String);

impl<S> Extract<S> for Topic {
    fn extract(message: &Incoming<'_>, _: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(Topic(String::from(message.topic)))
    }
}
