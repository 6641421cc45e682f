//! What passed every check.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use ruststream::completion::SubscriptionRules;
use ruststream::SubscriptionType;
use ruststream_pulsar_model::{InitialPosition, TopicName, TopicSelection};

use crate::url::BrokerUrl;
use ruststream_driver::Mount;

/// One subscription that passed every check, with its names resolved.
pub(crate) struct CheckedSubscription<S> {
    pub(crate) handler: Arc<Mount<S>>,
    /// The topics, resolved: named ones fully qualified, a pattern with its namespace.
    pub(crate) topics: TopicSelection,
    pub(crate) subscription: String,
    pub(crate) kind: SubscriptionType,
    pub(crate) ack_timeout: Option<Duration>,
    /// `max_attempts`, if declared, and the resolved dead-letter topic, when one was.
    pub(crate) dead_letter: Option<(Option<NonZeroU32>, TopicName)>,
    /// Where `retry_later` republishes, resolved; also one of `topics`.
    pub(crate) retry_topic: Option<TopicName>,
    /// The compression of the handler's publishes that name none.
    pub(crate) compression: Option<ruststream::Compression>,
    /// The registration's own layers (`Mounted::layer`), innermost.
    pub(crate) layers: ruststream::middleware::Stack,
    pub(crate) concurrency: usize,
    /// Whether messages of one key run one at a time, in order (always on KeyShared).
    pub(crate) key_ordered: bool,
    /// Whether a retried message keeps its key until it comes back.
    pub(crate) ordered_retries: bool,
    /// Where the subscription starts if it does not exist.
    pub(crate) initial_position: InitialPosition,
    /// pulsar-rs's receiver queue, and the in-process consumer's prefetch.
    pub(crate) receiver_queue: usize,
    pub(crate) rules: SubscriptionRules,
    /// For a batch handler, how its batches are gathered.
    pub(crate) batch: Option<ruststream::batch::BatchPolicy>,
    /// For a transactional registration, how its transactions run.
    pub(crate) transaction: Option<ruststream::transaction::TransactionPolicy>,
    /// The schema it subscribes with (the handler's payload schema; none on the retry topic,
    /// whose copies ruststream writes without one).
    pub(crate) schema: Option<ruststream::Schema>,
    /// What the handler reads, for the service's description.
    pub(crate) message: ruststream::describe::MessageInfo,
    /// The topics it declared it publishes to, resolved, and what.
    pub(crate) publishes: Vec<(TopicName, ruststream::describe::MessageInfo)>,
}

/// A broker's registrations, all checked: its URL and its subscriptions.
pub(crate) struct Checked<S> {
    pub(crate) url: BrokerUrl,
    pub(crate) subscriptions: Vec<CheckedSubscription<S>>,
}
