//! Where a handler is mounted on Pulsar.

use std::time::Duration;

use ruststream::SubscriptionType;

/// A Pulsar subscription for `#[subscriber(..)]`: a topic, a subscription name and its options.
///
/// ```
/// use std::time::Duration;
/// use ruststream_pulsar::prelude::*;
///
/// #[subscriber(PulsarSubscription::new("refunds", "refunds").ack_timeout(Duration::from_secs(120)))]
/// async fn process_refund(id: &u64) -> HandlerOutcome {
///     HandlerOutcome::ack()
/// }
/// ```
///
/// A handler can also be mounted by a bare topic name (`#[subscriber("refunds")]`); it then
/// joins the broker's default subscription (see `PulsarBroker::default_subscription`), Shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulsarSubscription {
    pub(crate) topic: String,
    pub(crate) subscription: Option<String>,
    pub(crate) kind: SubscriptionType,
    pub(crate) ack_timeout: Option<Duration>,
    pub(crate) concurrency: Option<usize>,
    pub(crate) receiver_queue: Option<usize>,
}

impl PulsarSubscription {
    /// Subscription `subscription` on `topic`, Shared, without ack timeout.
    ///
    /// `topic` may be short (`refunds`, meaning `persistent://public/default/refunds`) or fully
    /// qualified; it is checked when the app starts.
    pub fn new(topic: impl Into<String>, subscription: impl Into<String>) -> Self {
        PulsarSubscription {
            topic: topic.into(),
            subscription: Some(subscription.into()),
            kind: SubscriptionType::Shared,
            ack_timeout: None,
            concurrency: None,
            receiver_queue: None,
        }
    }

    /// The broker's default subscription on `topic` (what a bare topic name means).
    pub fn topic(topic: impl Into<String>) -> Self {
        PulsarSubscription {
            topic: topic.into(),
            subscription: None,
            kind: SubscriptionType::Shared,
            ack_timeout: None,
            concurrency: None,
            receiver_queue: None,
        }
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

    /// How many handlers of this subscription may run at once (default
    /// [`DEFAULT_CONCURRENCY`]). Also the receiver queue, unless
    /// [`PulsarSubscription::receiver_queue`] says otherwise.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = Some(limit.max(1));
        self
    }

    /// How many received messages the consumer keeps ready for the handlers: pulsar-rs's
    /// `receiver_queue_size` (Pulsar's `receiverQueueSize`). Default: the concurrency.
    ///
    /// A message's ack timeout starts when it enters this queue, so a long queue in front of
    /// slow handlers can time messages out before they run. A queue as long as pulsar-rs's own
    /// default (1,000) costs less CPU per message for fast handlers: the consumer hands over
    /// whole batches instead of waking the driver for every few messages (see
    /// `docs/performance.md`). The in-process Pulsar keeps as many messages asked for.
    pub fn receiver_queue(mut self, messages: usize) -> Self {
        self.receiver_queue = Some(messages.max(1));
        self
    }
}

/// Handlers of one subscription running at once when the registration does not say.
///
/// High enough that I/O-bound handlers keep a consumer busy, low enough that a stuck
/// dependency does not start thousands of handlers at once. It is also the default receiver
/// queue; pulsar-rs itself asks the broker for 1,000 messages ahead (its `batch_size`)
/// whatever the queue, so a live consumer can hold that many before its queue.
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
