//! `RedeliveryCount`: how many times the message was delivered before.

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

/// How many times the broker delivered this message before this delivery: 0 on the first, and
/// always 0 on subscription types that keep no count (Exclusive, Failover). `None` only where
/// the client does not tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedeliveryCount(pub Option<u32>);

impl<S> Extract<S> for RedeliveryCount {
    fn extract(message: &Incoming<'_>, _: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(RedeliveryCount(message.redelivery_count))
    }
}
