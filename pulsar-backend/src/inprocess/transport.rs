//! The in-process Pulsar as a broker's transport.

use std::sync::Arc;

use ruststream::app::{Health, HealthCheck, StartError};
use ruststream::handler::BoxFuture;
use ruststream::message::Message;
use ruststream::publish::{Publish, Publishing, Receipt};
use ruststream::runtime::Runtime;
use ruststream::MessageId;
use ruststream::PublishError;
use ruststream_pulsar_model::HashingScheme;

use super::{InProcessConsumer, InProcessPulsar};
use crate::chunked::Chunked;
use crate::registration::CheckedSubscription;
use crate::transport::Transport;

/// One started broker's view of an in-process Pulsar (which several apps may share).
pub(crate) struct InProcessTransport {
    runtime: Arc<dyn Runtime>,
    publisher: Arc<InProcessPublisher>,
}

/// Publishing on the in-process Pulsar with the broker's namespace for short names, and its
/// way of routing keyed messages to partitions.
pub(super) struct InProcessPublisher {
    pub(super) pulsar: InProcessPulsar,
    pub(super) topics: crate::topic::Resolved,
    pub(super) hashing: HashingScheme,
    /// Publish messages larger than this many bytes as chunks, if set.
    chunk_over: Option<usize>,
}

impl InProcessTransport {
    /// Use `pulsar` from a broker started on `runtime`; its timers run there from now on.
    pub(crate) fn start(
        pulsar: InProcessPulsar,
        runtime: Arc<dyn Runtime>,
        namespace: Option<String>,
        hashing: HashingScheme,
        chunk_over: Option<usize>,
    ) -> Self {
        pulsar.start_timer(runtime.clone());
        InProcessTransport {
            runtime,
            publisher: Arc::new(InProcessPublisher {
                pulsar,
                topics: crate::topic::Resolved::new(namespace),
                hashing,
                chunk_over,
            }),
        }
    }

    fn pulsar(&self) -> &InProcessPulsar {
        &self.publisher.pulsar
    }
}

impl InProcessPublisher {
    /// Store `message` on its topic (a short name is in the broker's namespace) now, as the
    /// caller's span is the current one and no receipt is to wait for.
    #[inline(always)]
    fn store(&self, message: Message) -> Result<MessageId, PublishError> {
        let topic = self
            .topics
            .get(&message.topic)
            .map_err(PublishError::invalid_topic)?;
        let stored = match self.chunk_over {
            Some(max) if crate::chunked::needs_chunks(Some(max), &message) => {
                let size = crate::chunked::chunk_payload_size(max, &message);
                self.pulsar
                    .store_chunked(&topic, message, self.hashing, size, usize::MAX)
            }
            _ => self.pulsar.store(&topic, message, self.hashing),
        };
        stored.map(|id| crate::message_id::of_model(&id))
    }
}

/// The in-process Pulsar stores a message at the call: its answer is known at once, and
/// told at once.
impl Publish for InProcessPublisher {
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        let stored = self.store(message);
        let sent = stored.as_ref().map(drop).map_err(Clone::clone);
        receipt.tell(stored);
        Publishing::done(sent)
    }

    fn publish(&self, message: Message, receipt: Receipt) -> Publishing<'_, MessageId> {
        let stored = self.store(message);
        receipt.tell_copy(&stored);
        Publishing::done(stored)
    }
}

impl Transport for InProcessTransport {
    type Consumer = Chunked<InProcessConsumer>;

    fn label(&self) -> String {
        "in-process".to_owned()
    }

    async fn subscribe<S: Send + Sync + 'static>(
        &self,
        subscription: &CheckedSubscription<S>,
    ) -> Result<Chunked<InProcessConsumer>, StartError> {
        self.pulsar()
            .subscribe(subscription, self.runtime.clone())
            .map(|consumer| Chunked::new(consumer, self.runtime.clone()))
            .map_err(|source| {
                let reason = source.to_string();
                match &subscription.schema {
                    // The model refuses a schema as the broker does; the same startup error.
                    Some(schema) if crate::schema::is_incompatible(&reason) => {
                        StartError::Connect {
                            broker: "pulsar",
                            source: crate::schema::subscription_refused(
                                subscription.handler.name(),
                                &subscription.topics,
                                &subscription.subscription,
                                schema,
                                &reason,
                            )
                            .into(),
                        }
                    }
                    _ => StartError::Connect {
                        broker: "pulsar",
                        source,
                    },
                }
            })
    }

    fn publisher(&self) -> Arc<dyn Publish> {
        self.publisher.clone()
    }

    fn transactions(&self) -> Option<Arc<dyn ruststream_driver::port::TransactionPort>> {
        Some(Arc::new(super::transactions::InProcessTransactions {
            publisher: self.publisher.clone(),
        }))
    }

    fn publish_port(&self) -> &dyn Publish {
        &*self.publisher
    }

    /// Stored at the call: the answer is the caller's at once, with nobody else to tell.
    fn publish_awaited(&self, message: Message) -> Publishing<'_, MessageId> {
        Publishing::done(self.publisher.store(message))
    }

    fn publish_batch(
        &self,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<Vec<MessageId>, PublishError>> {
        Box::pin(async move {
            let Some(topic) = ruststream::message::batch_topic(&messages)? else {
                return Ok(Vec::new());
            };
            let chunk_over = self.publisher.chunk_over;
            if messages
                .iter()
                .any(|m| crate::chunked::needs_chunks(chunk_over, m))
            {
                // A chunked message cannot be batched: stored one by one, in order.
                return messages
                    .into_iter()
                    .map(|m| self.publisher.store(m))
                    .collect();
            }
            let topic = self
                .publisher
                .topics
                .get(topic)
                .map_err(PublishError::invalid_topic)?;
            self.pulsar()
                .publish_batch_to(&topic, messages, self.publisher.hashing)
        })
    }

    fn in_flight(&self) -> usize {
        self.pulsar().in_flight()
    }

    fn idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.pulsar().idle())
    }

    fn health(&self) -> HealthCheck {
        // In process there is no connection to lose.
        HealthCheck::new(|| Health::ready("pulsar (in-process): ready"))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.pulsar().stop_timer() })
    }
}
