//! `b.include(handler).max_attempts(n).dead_letter(topic)`.

use std::num::NonZeroU32;
use std::sync::Arc;

use crate::subscription::PulsarSubscription;
use ruststream_driver::Mount;

/// A handler mounted on the broker, as declared.
pub(crate) struct Registration<S> {
    pub(crate) handler: Arc<Mount<S>>,
    /// Where its `#[subscriber(..)]` mounts it.
    pub(crate) descriptor: PulsarSubscription,
    pub(crate) max_attempts: Option<NonZeroU32>,
    pub(crate) dead_letter: Option<String>,
    /// Where `retry_later` republishes, as declared.
    pub(crate) retry_topic: Option<String>,
    /// Where `backoff()` and `backoff_later()` take their delay from.
    pub(crate) backoff: Option<ruststream::completion::Backoff>,
    /// How the handler's publishes are compressed where a message names no codec.
    pub(crate) compression: Option<ruststream::Compression>,
    /// The layers around this handler only (`Mounted::layer`), outermost first.
    pub(crate) layers: ruststream::middleware::Stack,
    /// Whether the handler declared that it may return `dead_letter` itself.
    pub(crate) dead_letters: bool,
    pub(crate) concurrency: Option<usize>,
    pub(crate) receiver_queue: Option<usize>,
    /// The handler's payload schema, which the broker checks when it subscribes.
    pub(crate) payload_schema: Option<ruststream::Schema>,
    /// The batch policy the registration sets (`Mounted::batch`).
    pub(crate) batch: Option<ruststream::batch::BatchPolicy>,
    /// The handler's own batch policy: `Some` for a batch handler (`Handler::batch_policy`).
    pub(crate) handler_batch: Option<ruststream::batch::BatchPolicy>,
    /// Each delivery in a transaction of its own (`Mounted::transactional`).
    pub(crate) transaction: Option<ruststream::transaction::TransactionPolicy>,
    /// What the handler reads, for the service's description (`Described::message`).
    pub(crate) message: ruststream::describe::MessageInfo,
    /// The topics it publishes to and what, as declared (`Mounted::publishes`).
    pub(crate) publishes: Vec<(String, ruststream::describe::MessageInfo)>,
}

impl<S> Registration<S> {
    pub(crate) fn new(
        handler: Arc<Mount<S>>,
        descriptor: PulsarSubscription,
        dead_letters: bool,
    ) -> Self {
        Registration {
            handler,
            descriptor,
            max_attempts: None,
            dead_letter: None,
            retry_topic: None,
            backoff: None,
            compression: None,
            layers: ruststream::middleware::Stack::new(),
            dead_letters,
            concurrency: None,
            receiver_queue: None,
            payload_schema: None,
            batch: None,
            handler_batch: None,
            transaction: None,
            message: ruststream::describe::MessageInfo::new("payload", "application/octet-stream"),
            publishes: Vec::new(),
        }
    }
}

/// A handler just mounted by `include`: declares how its messages are retried and how many
/// run at once.
///
/// `max_attempts(n)` counts every delivery of one message, the first included;
/// `dead_letter(topic)` names where a message goes once they are spent, and where the handler
/// sends one itself (`HandlerOutcome::dead_letter`). Declare both or neither; a topic alone is
/// for a handler that declares `#[subscriber(.., dead_letter)]`, and takes what it
/// dead-letters itself, payloads that do not decode and messages the client cannot read.
pub struct Mounted<'a, S> {
    registration: &'a mut Registration<S>,
}

impl<'a, S> Mounted<'a, S> {
    pub(crate) fn new(registration: &'a mut Registration<S>) -> Self {
        Mounted { registration }
    }

    /// Deliver one message at most `attempts` times, the first included.
    pub fn max_attempts(self, attempts: NonZeroU32) -> Self {
        self.registration.max_attempts = Some(attempts);
        self
    }

    /// Declare that the handler publishes `T` (an `#[outgoing]` type) to its topic, so that
    /// the service's description (`<service> asyncapi`) shows the topic and a send operation
    /// for it. Publishing works without it; the description cannot see inside a handler.
    pub fn publishes<T: ruststream::Outgoing>(self) -> Self {
        let topic = T::TOPIC.to_owned();
        if !self.registration.publishes.iter().any(|(t, _)| *t == topic) {
            self.registration.publishes.push((topic, T::message()));
        }
        self
    }

    /// Publish a message out of attempts, one the handler dead-letters and one whose payload
    /// does not decode (or that the client cannot read) to `topic` (short or fully qualified).
    pub fn dead_letter(self, topic: impl Into<String>) -> Self {
        self.registration.dead_letter = Some(topic.into());
        self
    }

    /// Republish a message whose handler returned `retry_later(d)` to `topic` (short or fully
    /// qualified), for the broker to deliver after `d`; the subscription reads `topic` too.
    /// A wait that survives the service's crash, with no bound from the ack timeout. The
    /// broker delays delivery only on Shared and KeyShared subscriptions, so an Exclusive or
    /// Failover one reads its retry topic through a Shared subscription of the same name. The
    /// convention of the Java client is `<topic>-<subscription>-RETRY`.
    pub fn retry_topic(self, topic: impl Into<String>) -> Self {
        self.registration.retry_topic = Some(topic.into());
        self
    }

    /// The delays of `HandlerOutcome::backoff()` (kept in the service, so each must end
    /// before the ack timeout: a cap that does not is refused at startup unless a retry topic
    /// is declared) and `HandlerOutcome::backoff_later()` (kept by the broker), by attempt.
    pub fn backoff(self, policy: ruststream::completion::Backoff) -> Self {
        self.registration.backoff = Some(policy);
        self
    }

    /// Compress what the handler publishes (through its `Publisher`) with `codec`, unless a
    /// message names its own (`Message::compression`, an `#[outgoing(compression = "..")]`
    /// type). Dead-letter and retry copies keep the bytes they copy and are not compressed.
    pub fn compression(self, codec: ruststream::Compression) -> Self {
        self.registration.compression = Some(codec);
        self
    }

    /// Put `layer` around this handler and what it publishes: the innermost scope, inside
    /// the app's and the broker's layers (see `ruststream::middleware`). Layers added later
    /// sit further in.
    pub fn layer(self, layer: impl ruststream::middleware::Layer) -> Self {
        let layers = std::mem::take(&mut self.registration.layers);
        self.registration.layers = layers.push(layer);
        self
    }

    /// How many handlers of this subscription run at once; overrides the descriptor's
    /// `concurrency` and [`crate::DEFAULT_CONCURRENCY`].
    pub fn concurrency(self, limit: usize) -> Self {
        self.registration.concurrency = Some(limit.max(1));
        self
    }

    /// Gather this batch handler's messages into batches by `policy` (max messages, max
    /// bytes, max wait), over the handler's own (`handler.batch(n)`, or
    /// [`BatchPolicy::default`](ruststream::batch::BatchPolicy::default)). Only for a handler
    /// whose first parameter is a slice: the broker refuses to start otherwise.
    pub fn batch(self, policy: ruststream::batch::BatchPolicy) -> Self {
        self.registration.batch = Some(policy);
        self
    }

    /// Run each delivery in a Pulsar transaction of its own (PIP-31): what the handler
    /// publishes through its `Publisher`, and a dead-letter or retry-topic copy, becomes
    /// visible exactly when the message is acknowledged, or never. `ack` and `drop` commit;
    /// `retry`, `retry_after`, an error, a panic, a timeout or a publish that failed abort, and
    /// the message comes back as without a transaction. The broker needs
    /// `transactionCoordinatorEnabled=true` (docs/transactions.md), and a service that cannot
    /// open transactions does not start. Transactions time out after
    /// [`TransactionPolicy::DEFAULT_TIMEOUT`](ruststream::transaction::TransactionPolicy::DEFAULT_TIMEOUT);
    /// [`Mounted::transactional_with`] sets another.
    pub fn transactional(self) -> Self {
        self.transactional_with(ruststream::transaction::TransactionPolicy::new())
    }

    /// [`Mounted::transactional`] with `policy` (the transaction timeout).
    pub fn transactional_with(self, policy: ruststream::transaction::TransactionPolicy) -> Self {
        self.registration.transaction = Some(policy);
        self
    }

    /// How many received messages the consumer keeps ready; overrides the descriptor's
    /// `receiver_queue` (see [`PulsarSubscription::receiver_queue`]). Default: the
    /// concurrency.
    pub fn receiver_queue(self, messages: usize) -> Self {
        self.registration.receiver_queue = Some(messages.max(1));
        self
    }
}
