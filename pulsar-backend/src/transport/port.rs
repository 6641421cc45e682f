//! The transport port.

use std::future::Future;
use std::sync::Arc;

use ruststream::app::{HealthCheck, StartError};
use ruststream::handler::{BoxFuture, Publish, Publishing};
use ruststream::message::{Message, MessageId};
use ruststream::publish::Receipt;
use ruststream::PublishError;

use crate::registration::CheckedSubscription;
use ruststream_driver::port::ConsumerPort;

/// Where a broker's consumers and producers live: a Pulsar server through pulsar-rs, or the
/// in-process Pulsar.
pub(crate) trait Transport: Send + Sync + 'static {
    /// A subscription's consumer, owned by its driver.
    type Consumer: ConsumerPort;

    /// A short label for logs: the server's URL, or "in-process".
    fn label(&self) -> String;

    /// Subscribe `subscription` with its type, ack timeout and prefetch.
    fn subscribe<S: Send + Sync + 'static>(
        &self,
        subscription: &CheckedSubscription<S>,
    ) -> impl Future<Output = Result<Self::Consumer, StartError>> + Send;

    /// How handlers and the dead-letter step publish: each call waits for the receipt.
    fn publisher(&self) -> Arc<dyn Publish>;

    /// The same publisher, borrowed: the app's own publish returns its boxed future as it
    /// is, rather than boxing a future that awaits it (one allocation per message less).
    fn publish_port(&self) -> &dyn Publish;

    /// Publish `message` for the app's own caller, the only one waiting for its answer:
    /// through [`Transport::publish_port`] with an empty receipt, unless the transport knows
    /// the answer at the call.
    fn publish_awaited(&self, message: Message) -> Publishing<'_, MessageId> {
        self.publish_port().publish(message, Receipt::none())
    }

    /// Publish `messages`, all to one topic, as one batched entry.
    fn publish_batch(
        &self,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<Vec<MessageId>, PublishError>>;

    /// Where transactional registrations open their transactions; `None` where the
    /// transport has none.
    fn transactions(&self) -> Option<Arc<dyn ruststream_driver::port::TransactionPort>> {
        None
    }

    /// Deliveries in flight (see `RunningBroker::in_flight` for what counts).
    fn in_flight(&self) -> usize;

    /// Completes once nothing is in flight.
    fn idle(&self) -> BoxFuture<'_, ()>;

    /// Whether the transport can do its work now: a check to keep and ask while it runs.
    fn health(&self) -> HealthCheck;

    /// Close what the transport opened, once every driver has ended.
    fn close(&self) -> BoxFuture<'_, ()>;
}
