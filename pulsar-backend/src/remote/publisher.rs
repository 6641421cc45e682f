//! Publishing on a Pulsar server: one producer per topic, opened on first use.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::lock::Mutex;
use pulsar::producer::ProducerOptions;
use pulsar::{Executor, Producer, Pulsar};
use ruststream::message::Record;
use ruststream::PublishError;

use super::consumer::printable;

/// The most messages one batched entry takes (the Java client's default
/// `batchingMaxMessages`).
const MAX_BATCH: u32 = 1000;

/// The app's producers.
pub(crate) struct Publisher<Exe: Executor> {
    pulsar: Pulsar<Exe>,
    namespace: Option<String>,
    producers: Mutex<HashMap<String, Producer<Exe>>>,
    /// Batching producers, for [`Publisher::publish_batch`].
    batching: Mutex<HashMap<String, Producer<Exe>>>,
}

impl<Exe: Executor> Publisher<Exe> {
    pub(crate) fn new(pulsar: Pulsar<Exe>, namespace: Option<String>) -> Self {
        Publisher {
            pulsar,
            namespace,
            producers: Mutex::new(HashMap::new()),
            batching: Mutex::new(HashMap::new()),
        }
    }

    /// Publish to `topic` (qualified here, so short names work on any broker) and wait for the
    /// broker's receipt. Returns the message id, `ledger:entry:partition`.
    pub(crate) async fn publish(
        &self,
        topic: &str,
        record: Record,
    ) -> Result<String, PublishError> {
        let topic = crate::topic::resolve(topic, self.namespace.as_deref())
            .map_err(PublishError::invalid_topic)?
            .to_string();
        let mut producers = self.producers.lock().await;
        // A non-batching producer: Pulsar honours delayed delivery only on messages that are
        // not batched.
        let producer = self.open(&mut producers, &topic, None).await?;
        let mut message = producer.create_message().with_content(record.payload);
        if let Some(key) = record.key {
            message = message.with_key(key);
        }
        for (name, value) in record.headers {
            message = message.with_property(name, value);
        }
        if let Some(at) = record.event_time {
            message = message.event_time(u64::try_from(at.as_millis()).unwrap_or(u64::MAX));
        }
        let deliver_at = match (record.deliver_after, record.deliver_at) {
            (Some(after), _) => Some(SystemTime::now() + after),
            (None, Some(at)) => Some(UNIX_EPOCH + at),
            (None, None) => None,
        };
        if let Some(at) = deliver_at {
            message = message
                .deliver_at(at)
                .map_err(|e| PublishError::broker(&topic, format!("delivery time {at:?}: {e}")))?;
        }
        let receipt = message
            .send_non_blocking()
            .await
            .map_err(|e| PublishError::broker(&topic, format!("sending: {e}")))?;
        drop(producers);
        let receipt = receipt
            .await
            .map_err(|e| PublishError::broker(&topic, format!("no receipt: {e}")))?;
        Ok(receipt
            .message_id
            .as_ref()
            .map(printable)
            .unwrap_or_default())
    }

    /// Publish `records` to `topic` as one batch, through a batching producer of its own (one
    /// per topic, opened on first use), and wait for the receipts. They share one entry.
    pub(crate) async fn publish_batch(
        &self,
        topic: &str,
        records: Vec<Record>,
    ) -> Result<Vec<String>, PublishError> {
        let topic = crate::topic::resolve(topic, self.namespace.as_deref())
            .map_err(PublishError::invalid_topic)?
            .to_string();
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut producers = self.batching.lock().await;
        // A longer batch is split into entries of `MAX_BATCH`; `send_batch` below closes the
        // last one.
        let producer = self.open(&mut producers, &topic, Some(MAX_BATCH)).await?;
        let mut receipts = Vec::with_capacity(records.len());
        for record in records {
            let mut message = producer.create_message().with_content(record.payload);
            if let Some(key) = record.key {
                message = message.with_key(key);
            }
            for (name, value) in record.headers {
                message = message.with_property(name, value);
            }
            receipts.push(
                message
                    .send_non_blocking()
                    .await
                    .map_err(|e| PublishError::broker(&topic, format!("sending: {e}")))?,
            );
        }
        producer
            .send_batch()
            .await
            .map_err(|e| PublishError::broker(&topic, format!("sending the batch: {e}")))?;
        drop(producers);
        let mut ids = Vec::with_capacity(receipts.len());
        for receipt in receipts {
            let receipt = receipt
                .await
                .map_err(|e| PublishError::broker(&topic, format!("no receipt: {e}")))?;
            ids.push(
                receipt
                    .message_id
                    .as_ref()
                    .map(printable)
                    .unwrap_or_default(),
            );
        }
        Ok(ids)
    }

    /// The producer of `topic` in `producers`, opened on first use: batching `batch_size`
    /// messages an entry, or not batching.
    async fn open<'p>(
        &self,
        producers: &'p mut HashMap<String, Producer<Exe>>,
        topic: &str,
        batch_size: Option<u32>,
    ) -> Result<&'p mut Producer<Exe>, PublishError> {
        if !producers.contains_key(topic) {
            let producer = self
                .pulsar
                .producer()
                .with_topic(topic.to_owned())
                .with_options(ProducerOptions {
                    // Wait for room instead of failing with SlowDown when receipts lag.
                    block_queue_if_full: true,
                    batch_size,
                    ..ProducerOptions::default()
                })
                .build()
                .await
                .map_err(|e| {
                    PublishError::broker(
                        topic,
                        format!(
                            "opening a producer: {e} (check that the broker is reachable and \
                             that the token may produce on this topic)"
                        ),
                    )
                })?;
            producers.insert(topic.to_owned(), producer);
        }
        Ok(producers.get_mut(topic).expect("inserted above"))
    }

    pub(crate) async fn close(&self) {
        let mut producers: Vec<_> = self.producers.lock().await.drain().collect();
        producers.extend(self.batching.lock().await.drain());
        for (topic, mut producer) in producers {
            if let Err(error) = producer.close().await {
                tracing::warn!(%topic, %error, "closing a producer failed");
            }
        }
    }
}

impl<Exe: Executor> ruststream::handler::Publish for Publisher<Exe> {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        record: Record,
    ) -> ruststream::handler::Publishing<'a, String> {
        let record = traced(record);
        ruststream::handler::Publishing::waiting(Box::pin(Publisher::publish(self, topic, record)))
    }

    /// The id dropped inside the one boxed future: the trait's default would box the receipt
    /// a second time to map it.
    fn publish_without_id<'a>(
        &'a self,
        topic: &'a str,
        record: Record,
    ) -> ruststream::handler::Publishing<'a, ()> {
        let record = traced(record);
        ruststream::handler::Publishing::waiting(Box::pin(async move {
            Publisher::publish(self, topic, record).await.map(drop)
        }))
    }
}

/// `record` with the caller's trace context in its headers: taken at the call, not in the
/// future, while the caller's span is the current one.
fn traced(mut record: Record) -> Record {
    crate::trace_context::inject(&mut record.headers);
    record
}
