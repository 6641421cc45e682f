//! A consumer: its id, and the state the broker and the client library keep for it.

use std::collections::{HashSet, VecDeque};
use std::fmt;

use foldhash::fast::FixedState;
use ruststream::Instant;

use crate::ack_timeout::UnackedTracker;
use crate::{ConsumerOptions, Dispatched, TopicName};

/// Names one consumer of the in-process broker, as returned by
/// [`Cluster::subscribe`](crate::Cluster::subscribe). Ids are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConsumerId(pub(crate) u64);

impl ConsumerId {
    /// The number behind the id (1 for the first consumer of a cluster).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ConsumerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Everything the model keeps about one connected consumer.
#[derive(Debug)]
pub(crate) struct Consumer {
    pub(crate) topic: TopicName,
    /// Shared, so that looking the subscription up on every acknowledgement copies nothing.
    pub(crate) subscription: std::sync::Arc<str>,
    pub(crate) name: String,
    pub(crate) priority_level: i32,
    pub(crate) options: ConsumerOptions,

    // Broker side (Pulsar's `org.apache.pulsar.broker.service.Consumer`).
    /// Messages the broker may still send (`flow` adds, each send takes one).
    pub(crate) permits: u64,
    /// Entries sent and not yet acknowledged or redelivered: Pulsar's `pendingAcks`, kept only
    /// on Shared and KeyShared subscriptions (it is `null` on the others). A hash set: entries
    /// come in at one end and leave at the other, which makes a B-tree allocate a node every
    /// few messages; nothing reads it in order.
    pub(crate) pending_acks: HashSet<u64, FixedState>,

    // Client side (pulsar-rs's consumer engine and its channel to the application).
    /// Deliveries the engine handed over that the application has not taken yet.
    pub(crate) queue: VecDeque<Dispatched>,
    /// The ack-timeout records, when an ack timeout is set.
    pub(crate) unacked: Option<UnackedTracker>,
}

impl Consumer {
    pub(crate) fn new(
        id: ConsumerId,
        topic: TopicName,
        subscription: std::sync::Arc<str>,
        options: ConsumerOptions,
        now: Instant,
    ) -> Self {
        Consumer {
            topic,
            subscription,
            name: options
                .name
                .clone()
                .unwrap_or_else(|| format!("consumer_{}", id.0)),
            priority_level: options.priority_level,
            unacked: options
                .ack_timeout
                .map(|delay| UnackedTracker::new(delay, now)),
            options,
            permits: 0,
            pending_acks: HashSet::default(),
            queue: VecDeque::new(),
        }
    }
}
