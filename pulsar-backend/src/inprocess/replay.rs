//! The dead-letter replay on the in-process Pulsar: a consumer of the model on the dead-letter
//! topic (Shared, from the earliest message) and the cluster's publish, on the caller's
//! runtime and clock.
//!
//! The model answers at once, so the replay knows when nothing is left: it asks the
//! subscription for one message at a time, and ends when none comes. No delivery is left
//! queued between two steps, so an app started on the same in-process Pulsar (a `TestApp`)
//! counts nothing of the replay as in flight. The model acknowledges whole entries only: a
//! message of a batched entry is acknowledged with its entry once all of it was moved.

use std::sync::Arc;

use ruststream::app::BoxError;
use ruststream::message::Message;
use ruststream::replay::{Replay, ReplayEnd, ReplayError, ReplaySummary};
use ruststream::runtime::Runtime;
use ruststream::{MessageId, PublishError, SubscriptionType};
use ruststream_pulsar_model::{
    ConsumerOptions, HashingScheme, InitialPosition, TopicSelection, TopicsConsumer,
};

use super::InProcessPulsar;
use crate::replay_loop::{Dead, DeadLetters, EntryKey, Next};
use crate::topic::Resolved;

/// Run `replay` on `pulsar`, short names in `namespace`, keyed copies to a partitioned topic
/// routed with `hashing`, timed by `runtime`.
pub(crate) async fn replay(
    pulsar: InProcessPulsar,
    namespace: Option<String>,
    hashing: HashingScheme,
    replay: Replay,
    runtime: Arc<dyn Runtime>,
) -> Result<ReplaySummary, ReplayError> {
    let topics = Resolved::new(namespace);
    let from = topics
        .get(&replay.options.from)
        .map_err(|e| ReplayError::InvalidTopic {
            topic: replay.options.from.clone(),
            what: "the dead-letter topic",
            reason: e.to_string(),
        })?;
    let consumer = {
        let mut inner = pulsar.lock();
        let now = runtime.now();
        let options = ConsumerOptions {
            initial_position: InitialPosition::Earliest,
            ..ConsumerOptions::default()
        };
        let consumer = TopicsConsumer::subscribe(
            &mut inner.cluster,
            TopicSelection::Topics(vec![from.clone()]),
            &replay.options.subscription,
            SubscriptionType::Shared,
            options,
            now,
        )
        .map_err(|e| ReplayError::Connect {
            broker: "pulsar",
            source: format!(
                "cannot subscribe `{}` to {from} on the in-process Pulsar: {e}",
                replay.options.subscription
            )
            .into(),
        })?;
        inner.notify();
        consumer
    };
    // The replay's clock stamps what it publishes, unless an app started on this Pulsar
    // already gave it one.
    pulsar.start_timer(runtime.clone());
    let source = InProcessDeadLetters {
        from: from.to_string(),
        pulsar: pulsar.clone(),
        consumer: Some(consumer),
        topics,
        hashing,
        runtime: runtime.clone(),
    };
    let summary = crate::replay_loop::run(source, replay, runtime).await;
    pulsar.stop_timer();
    summary
}

/// The replay's side of the in-process Pulsar.
struct InProcessDeadLetters {
    pulsar: InProcessPulsar,
    /// `None` once closed.
    consumer: Option<TopicsConsumer>,
    from: String,
    topics: Resolved,
    hashing: HashingScheme,
    runtime: Arc<dyn Runtime>,
}

impl InProcessDeadLetters {
    fn consumer(&self) -> Result<&TopicsConsumer, BoxError> {
        self.consumer
            .as_ref()
            .ok_or_else(|| "the replay's consumer is closed".into())
    }
}

impl DeadLetters for InProcessDeadLetters {
    type Id = ruststream_pulsar_model::MessageId;

    fn topic(&self) -> &str {
        &self.from
    }

    fn acks_batch_index(&self) -> bool {
        false
    }

    async fn next(&mut self) -> Result<Next<Self::Id>, BoxError> {
        let pulsar = self.pulsar.clone();
        let mut inner = pulsar.lock();
        let now = self.runtime.now();
        let consumer = self
            .consumer
            .as_mut()
            .ok_or("the replay's consumer is closed")?;
        let delivery = match consumer.receive(&mut inner.cluster, now) {
            Some(delivery) => Some(delivery),
            None => {
                // One permit for each topic it reads that has none asked for: what it gets now
                // is all the subscription has for it.
                for id in consumer.consumers().collect::<Vec<_>>() {
                    if inner.cluster.outstanding(id).unwrap_or(0) == 0 {
                        inner.cluster.flow(id, 1, now)?;
                    }
                }
                consumer.receive(&mut inner.cluster, now)
            }
        };
        inner.notify();
        let Some(delivery) = delivery else {
            return Ok(Next::End(ReplayEnd::Drained));
        };
        let id = delivery.message_id;
        if let Some(chunk) = delivery.content.chunk() {
            return Err(crate::chunked::replay_refused(
                &id.to_string(),
                &chunk.uuid,
                chunk.num_chunks,
            )
            .into());
        }
        Ok(Next::Message(Dead {
            message_id: crate::message_id::of_model(&id),
            entry: EntryKey {
                topic: delivery.topic.shared(),
                ledger: id.ledger_id,
                entry: id.entry_id,
            },
            batch: match (id.batch_index, delivery.batch_size) {
                (Some(index), Some(size)) => Some((u32::try_from(index).unwrap_or(0), size)),
                _ => None,
            },
            payload: delivery.content.payload().to_vec(),
            properties: delivery.content.properties().as_slice().to_vec(),
            key: delivery.key,
            event_time: delivery.event_time,
            id,
        }))
    }

    async fn publish(&mut self, copy: Message) -> Result<MessageId, PublishError> {
        let topic = self
            .topics
            .get(&copy.topic)
            .map_err(PublishError::invalid_topic)?;
        self.pulsar
            .store(&topic, copy, self.hashing)
            .map(|id| crate::message_id::of_model(&id))
    }

    async fn ack(&mut self, id: &Self::Id, index: Option<(u32, u32)>) -> Result<(), BoxError> {
        if index.is_some() {
            return Err("the in-process Pulsar acknowledges whole entries only".into());
        }
        let consumer = self
            .consumer()?
            .consumer_of(id)
            .ok_or_else(|| format!("message {id} was not read by the replay's consumer"))?;
        let mut inner = self.pulsar.lock();
        let now = self.runtime.now();
        inner.cluster.ack(consumer, id, now)?;
        inner.notify();
        Ok(())
    }

    async fn close(mut self) {
        if let Some(mut consumer) = self.consumer.take() {
            let mut inner = self.pulsar.lock();
            let now = self.runtime.now();
            consumer.close(&mut inner.cluster, now);
            inner.notify();
        }
    }
}
