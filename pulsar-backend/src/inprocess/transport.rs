//! The in-process Pulsar as a broker's transport.

use std::sync::Arc;

use ruststream::app::{Health, HealthCheck, StartError};
use ruststream::handler::{BoxFuture, Publish, Publishing};
use ruststream::message::Record;
use ruststream::runtime::Runtime;
use ruststream::PublishError;
use ruststream_pulsar_model::HashingScheme;

use super::{InProcessConsumer, InProcessPulsar};
use crate::registration::CheckedSubscription;
use crate::transport::Transport;

/// One started broker's view of an in-process Pulsar (which several apps may share).
pub(crate) struct InProcessTransport {
    runtime: Arc<dyn Runtime>,
    publisher: Arc<InProcessPublisher>,
}

/// Publishing on the in-process Pulsar with the broker's namespace for short names, and its
/// way of routing keyed messages to partitions.
struct InProcessPublisher {
    pulsar: InProcessPulsar,
    topics: crate::topic::Resolved,
    hashing: HashingScheme,
}

impl InProcessTransport {
    /// Use `pulsar` from a broker started on `runtime`; its timers run there from now on.
    pub(crate) fn start(
        pulsar: InProcessPulsar,
        runtime: Arc<dyn Runtime>,
        namespace: Option<String>,
        hashing: HashingScheme,
    ) -> Self {
        pulsar.start_timer(runtime.clone());
        InProcessTransport {
            runtime,
            publisher: Arc::new(InProcessPublisher {
                pulsar,
                topics: crate::topic::Resolved::new(namespace),
                hashing,
            }),
        }
    }

    fn pulsar(&self) -> &InProcessPulsar {
        &self.publisher.pulsar
    }
}

impl InProcessPublisher {
    /// Store `record` on `topic` (a short name is in the broker's namespace) now, as the
    /// caller's span is the current one and no receipt is to wait for; what `id` makes of
    /// the model's id.
    fn store<T>(
        &self,
        topic: &str,
        mut record: Record,
        id: fn(ruststream_pulsar_model::MessageId) -> T,
    ) -> Result<T, PublishError> {
        crate::trace_context::inject(&mut record.headers);
        let topic = self
            .topics
            .get(topic)
            .map_err(PublishError::invalid_topic)?;
        self.pulsar.store(&topic, record, self.hashing).map(id)
    }
}

impl Publish for InProcessPublisher {
    fn publish<'a>(&'a self, topic: &'a str, record: Record) -> Publishing<'a, String> {
        Publishing::done(self.store(topic, record, super::printable))
    }

    fn publish_without_id<'a>(&'a self, topic: &'a str, record: Record) -> Publishing<'a, ()> {
        Publishing::done(self.store(topic, record, drop))
    }
}

impl Transport for InProcessTransport {
    type Consumer = InProcessConsumer;

    fn label(&self) -> String {
        "in-process".to_owned()
    }

    async fn subscribe<S: Send + Sync + 'static>(
        &self,
        subscription: &CheckedSubscription<S>,
    ) -> Result<InProcessConsumer, StartError> {
        self.pulsar()
            .subscribe(subscription, self.runtime.clone())
            .map_err(|source| StartError::Connect {
                broker: "pulsar",
                source,
            })
    }

    fn publisher(&self) -> Arc<dyn Publish> {
        self.publisher.clone()
    }

    fn publish_port(&self) -> &dyn Publish {
        &*self.publisher
    }

    fn publish_batch<'a>(
        &'a self,
        topic: &'a str,
        records: Vec<Record>,
    ) -> BoxFuture<'a, Result<Vec<String>, PublishError>> {
        Box::pin(async move {
            let topic = self
                .publisher
                .topics
                .get(topic)
                .map_err(PublishError::invalid_topic)?;
            self.pulsar()
                .publish_batch_to(&topic, records, self.publisher.hashing)
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
