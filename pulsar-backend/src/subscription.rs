//! Where a handler is mounted on Pulsar.

use std::time::Duration;

use ruststream::SubscriptionType;
use ruststream_pulsar_model::InitialPosition;

/// A Pulsar subscription for `#[subscriber(..)]`: which topics, a subscription name and its
/// options.
///
/// ```
/// use std::time::Duration;
/// use ruststream_pulsar::prelude::*;
///
/// #[subscriber(PulsarSubscription::new("refunds", "refunds").ack_timeout(Duration::from_secs(120)))]
/// async fn process_refund(id: &u64) -> HandlerOutcome {
///     HandlerOutcome::ack()
/// }
///
/// // Every topic of the namespace whose name starts with `orders-`, those created later
/// // included, from their first message.
/// #[subscriber(
///     PulsarSubscription::pattern("orders-.*", "audit").initial_position(InitialPosition::Earliest)
/// )]
/// async fn audit(order: &u64) -> HandlerOutcome {
///     HandlerOutcome::ack()
/// }
/// ```
///
/// A handler can also be mounted by a bare topic name (`#[subscriber("refunds")]`); it then
/// joins the broker's default subscription (see `PulsarBroker::default_subscription`), Shared.
///
/// A partitioned topic is mounted by its name, like any other: the handler receives from
/// every partition (`docs/topics.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulsarSubscription {
    pub(crate) topics: Topics,
    pub(crate) subscription: Option<String>,
    pub(crate) kind: SubscriptionType,
    pub(crate) ack_timeout: Option<Duration>,
    pub(crate) concurrency: Option<usize>,
    pub(crate) receiver_queue: Option<usize>,
    pub(crate) initial_position: InitialPosition,
    pub(crate) pattern_refresh: Duration,
    pub(crate) key_ordered: bool,
    pub(crate) ordered_retries: bool,
}

/// The topics a subscription reads, as written (resolved when the app starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Topics {
    /// One or several topics, each short or fully qualified.
    Named(Vec<String>),
    /// A regular expression over the topics of one namespace.
    Pattern(String),
}

impl Topics {
    /// As written, for error messages.
    pub(crate) fn written(&self) -> String {
        match self {
            Topics::Named(topics) => topics.join(", "),
            Topics::Pattern(pattern) => format!("pattern {pattern}"),
        }
    }
}

/// How often a pattern subscription lists its namespace's topics again, unless
/// [`PulsarSubscription::pattern_refresh`] says otherwise: a topic created later is read
/// within this long. pulsar-rs's own default (the Java client's is one minute).
pub const DEFAULT_PATTERN_REFRESH: Duration = Duration::from_secs(30);

impl PulsarSubscription {
    fn with_topics(topics: Topics, subscription: Option<String>) -> Self {
        PulsarSubscription {
            topics,
            subscription,
            kind: SubscriptionType::Shared,
            ack_timeout: None,
            concurrency: None,
            receiver_queue: None,
            initial_position: InitialPosition::Latest,
            pattern_refresh: DEFAULT_PATTERN_REFRESH,
            key_ordered: false,
            ordered_retries: false,
        }
    }

    /// Subscription `subscription` on `topic`, Shared, without ack timeout.
    ///
    /// `topic` may be short (`refunds`, meaning `persistent://public/default/refunds`) or fully
    /// qualified; it is checked when the app starts. A partitioned topic is read from all its
    /// partitions.
    pub fn new(topic: impl Into<String>, subscription: impl Into<String>) -> Self {
        Self::with_topics(Topics::Named(vec![topic.into()]), Some(subscription.into()))
    }

    /// Subscription `subscription` on each of `topics` (as [`PulsarSubscription::new`] takes
    /// one): one handler reads them all, each topic keeping its own subscription, backlog and
    /// order. An empty list is refused when the app starts.
    pub fn topics<T: Into<String>>(
        topics: impl IntoIterator<Item = T>,
        subscription: impl Into<String>,
    ) -> Self {
        Self::with_topics(
            Topics::Named(topics.into_iter().map(Into::into).collect()),
            Some(subscription.into()),
        )
    }

    /// Subscription `subscription` on every persistent topic of one namespace whose name
    /// `regex` matches as a whole (a partitioned topic by its own name), now and as they are
    /// created: the namespace is listed again every [`PulsarSubscription::pattern_refresh`].
    ///
    /// `regex` is bare (`orders-.*`, in the broker's namespace) or names its namespace
    /// (`tenant/namespace/orders-.*`, `persistent://tenant/namespace/orders-.*`). With the
    /// default [`InitialPosition::Latest`], what a new topic receives before the refresh that
    /// finds it is not delivered: use [`InitialPosition::Earliest`] to read it from its first
    /// message.
    pub fn pattern(regex: impl Into<String>, subscription: impl Into<String>) -> Self {
        Self::with_topics(Topics::Pattern(regex.into()), Some(subscription.into()))
    }

    /// The broker's default subscription on `topic` (what a bare topic name means).
    pub fn topic(topic: impl Into<String>) -> Self {
        Self::with_topics(Topics::Named(vec![topic.into()]), None)
    }

    /// A delivery neither acknowledged nor negatively acknowledged within `timeout` is asked
    /// for again by the client (pulsar-rs's unacked-message resend delay), counting as a
    /// redelivery. A `retry_after` delay must be shorter than this.
    pub fn ack_timeout(mut self, timeout: Duration) -> Self {
        self.ack_timeout = Some(timeout);
        self
    }

    /// The subscription type (Shared by default).
    pub fn subscription_type(mut self, kind: SubscriptionType) -> Self {
        self.kind = kind;
        self
    }

    /// Where the subscription starts when it does not exist yet: [`InitialPosition::Latest`]
    /// (the default, as in pulsar-rs and the Java client) delivers only what is published
    /// after it is created, [`InitialPosition::Earliest`] everything the topic still holds.
    /// A subscription that exists keeps its position whatever this says.
    pub fn initial_position(mut self, position: InitialPosition) -> Self {
        self.initial_position = position;
        self
    }

    /// How often a [`PulsarSubscription::pattern`] subscription lists its namespace's topics
    /// again (default [`DEFAULT_PATTERN_REFRESH`]): a topic created later is read within this
    /// long. No effect on named topics.
    pub fn pattern_refresh(mut self, every: Duration) -> Self {
        self.pattern_refresh = every;
        self
    }

    /// How many handlers of this subscription may run at once (default
    /// [`DEFAULT_CONCURRENCY`], and 1 on Exclusive and Failover, which exist to keep the
    /// broker's order). Also the receiver queue, unless [`PulsarSubscription::receiver_queue`]
    /// says otherwise.
    ///
    /// On Exclusive and Failover more than one is a choice to give up that order: handlers
    /// then overlap, unless [`PulsarSubscription::key_ordered`] keeps each key's messages in
    /// order.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = Some(limit.max(1));
        self
    }

    /// Run the messages of one key one at a time, in the order they were received, while
    /// messages of other keys run concurrently (up to the concurrency); messages without a
    /// key are not held. Always so on KeyShared; for Exclusive and Failover with
    /// [`PulsarSubscription::concurrency`] above 1 it keeps per-key order.
    pub fn key_ordered(mut self) -> Self {
        self.key_ordered = true;
        self
    }

    /// Keep each key's order across retries too (implies
    /// [`PulsarSubscription::key_ordered`]): while a message of key K is away for a `retry`,
    /// `retry_after` or `backoff`, or left to the ack timeout, the later messages of K that
    /// this consumer receives are held, and handed over only once it came back and settled;
    /// other keys flow. If it does not come back within
    /// `ruststream::broker::machine::RETRY_RETURN_GRACE` of when it was due (the broker gave its key
    /// to another consumer, or this one reconnected), the held ones go on without it. A
    /// `retry_later` copy is a new message: it does not keep the key.
    pub fn ordered_retries(mut self) -> Self {
        self.key_ordered = true;
        self.ordered_retries = true;
        self
    }

    /// How many received messages the consumer keeps ready for the handlers. Default: the
    /// concurrency.
    ///
    /// In process, the messages the consumer asks the broker for ahead (Pulsar's
    /// `receiverQueueSize`). On a broker, pulsar-rs's `receiver_queue_size`, which counts
    /// received entries (a batch is one) beside the 1,000 messages pulsar-rs asks the broker
    /// for ahead whatever the queue. A message's ack timeout starts when a handler takes it,
    /// not while it waits in this queue, as with the Java client.
    pub fn receiver_queue(mut self, messages: usize) -> Self {
        self.receiver_queue = Some(messages.max(1));
        self
    }
}

/// Handlers of one Shared or KeyShared subscription running at once when the registration
/// does not say (Exclusive and Failover run one at a time).
///
/// High enough that I/O-bound handlers keep a consumer busy, low enough that a stuck
/// dependency does not start thousands of handlers at once. It is also the default receiver
/// queue; pulsar-rs itself asks the broker for 1,000 messages ahead (its `batch_size`)
/// whatever the queue, so a live consumer can hold that many.
pub const DEFAULT_CONCURRENCY: usize = 32;

impl From<&str> for PulsarSubscription {
    fn from(topic: &str) -> Self {
        PulsarSubscription::topic(topic)
    }
}

impl From<String> for PulsarSubscription {
    fn from(topic: String) -> Self {
        PulsarSubscription::topic(topic)
    }
}

/// A `#[subscriber(..)]` descriptor the Pulsar broker understands: a [`PulsarSubscription`],
/// or a bare topic name (which joins the broker's default subscription).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say where a handler is mounted on Pulsar",
    label = "the handler's `#[subscriber(..)]` descriptor",
    note = "write `#[subscriber(\"topic\")]` or \
            `#[subscriber(PulsarSubscription::new(\"topic\", \"subscription\"))]`; a handler \
            written for another broker cannot be mounted on `PulsarBroker`"
)]
pub trait PulsarDescriptor {
    /// The descriptor as a subscription.
    fn into_subscription(self) -> PulsarSubscription;
}

impl PulsarDescriptor for PulsarSubscription {
    fn into_subscription(self) -> PulsarSubscription {
        self
    }
}

impl PulsarDescriptor for &str {
    fn into_subscription(self) -> PulsarSubscription {
        PulsarSubscription::topic(self)
    }
}

impl PulsarDescriptor for String {
    fn into_subscription(self) -> PulsarSubscription {
        PulsarSubscription::topic(self)
    }
}
