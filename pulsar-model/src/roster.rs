//! The view of a subscription's consumers that Pulsar's selectors work on.

use crate::ConsumerId;

/// One consumer as the selectors see it: id, name, priority level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) id: ConsumerId,
    pub(crate) name: String,
    pub(crate) priority_level: i32,
}
