//! Publishing on a Pulsar server: one producer per topic, opened on first use.
//!
//! A partitioned topic is looked up once, on its first publish (pulsar-rs's
//! `lookup_partitioned_topic_number`), and each message then goes to the partition the
//! official clients would pick ([`choose_partition`]): by its key with the broker's
//! [`HashingScheme`], or the next in turn without one; a batch's keyless messages share one
//! partition. Each partition has its own producer, and the id a publish returns names the
//! partition (`ledger:entry:partition`), as the Java client's does. Partitions added to a topic
//! later are used after the service restarts.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::lock::Mutex;
use pulsar::producer::ProducerOptions;
use pulsar::{Executor, Producer, Pulsar};
use ruststream::message::Message;
use ruststream::PublishError;
use ruststream::{Compression, MessageId, Schema};

use ruststream_pulsar_model::{choose_partition, HashingScheme, RoundRobin};

/// The id of a published message from its receipt, naming `partition` when it went to one:
/// the broker's receipt leaves the partition out, only the producer knows it.
fn receipt_id(
    topic: &str,
    id: Option<&pulsar::message::proto::MessageIdData>,
    partition: Option<i32>,
) -> Result<MessageId, PublishError> {
    let id = id.ok_or_else(|| {
        PublishError::broker(topic, "the broker's receipt names no message id".to_owned())
    })?;
    Ok(crate::message_id::of_proto(id, partition))
}

/// pulsar-rs's setting for `codec` (its Snappy is the raw block format the other clients use,
/// see patches/README.md).
#[cfg(feature = "compression")]
fn pulsar_compression(
    codec: Compression,
) -> Result<Option<pulsar::compression::Compression>, String> {
    use pulsar::compression as c;
    Ok(match codec {
        Compression::Lz4 => Some(c::Compression::Lz4(c::CompressionLz4::default())),
        Compression::Zlib => Some(c::Compression::Zlib(c::CompressionZlib::default())),
        Compression::Zstd => Some(c::Compression::Zstd(c::CompressionZstd::default())),
        Compression::Snappy => Some(c::Compression::Snappy(c::CompressionSnappy::default())),
        _ => None,
    })
}

/// Without the `compression` feature only uncompressed messages can be published.
#[cfg(not(feature = "compression"))]
fn pulsar_compression(
    codec: Compression,
) -> Result<Option<pulsar::compression::Compression>, String> {
    match codec {
        Compression::None => Ok(None),
        other => Err(format!(
            "the message asks for {other} compression, but ruststream-pulsar was built without \
             its `compression` feature: enable it, or publish without compression"
        )),
    }
}

/// The most messages one batched entry takes (the Java client's default
/// `batchingMaxMessages`).
const MAX_BATCH: u32 = 1000;

/// Producers by topic and compression: one per schema published with there (a producer
/// registers one schema, the one it was opened with; most topics see one, or none).
type Producers<Exe> = HashMap<(String, Compression), Vec<(Option<Schema>, Producer<Exe>)>>;

/// How a message's schema is named in an error: its kind, or that it has none.
fn schema_name(schema: Option<&Schema>) -> &'static str {
    schema.map_or("no schema", |s| s.kind().name())
}

/// The app's producers.
pub(crate) struct Publisher<Exe: Executor> {
    pulsar: Pulsar<Exe>,
    namespace: Option<String>,
    hashing: HashingScheme,
    /// One per topic and compression (pulsar-rs compresses per producer).
    producers: Mutex<Producers<Exe>>,
    /// Batching producers, for [`Publisher::publish_batch`].
    batching: Mutex<Producers<Exe>>,
    /// The partition count of each topic published to (0: not partitioned), and where its
    /// next keyless message goes.
    routes: std::sync::Mutex<HashMap<String, Route>>,
    /// Publish messages larger than this many bytes as chunks, if set
    /// ([`PulsarBroker::chunk_messages_over`](crate::PulsarBroker::chunk_messages_over)).
    chunk_over: Option<usize>,
}

/// Where a message goes: the topic (a partition's for a partitioned topic) and the
/// partition's index.
type Target = (String, Option<i32>);

/// A topic as its publishes are routed.
struct Route {
    partitions: u32,
    round_robin: RoundRobin,
}

impl<Exe: Executor> Publisher<Exe> {
    pub(crate) fn new(
        pulsar: Pulsar<Exe>,
        namespace: Option<String>,
        hashing: HashingScheme,
    ) -> Self {
        Publisher {
            pulsar,
            namespace,
            hashing,
            producers: Mutex::new(HashMap::new()),
            batching: Mutex::new(HashMap::new()),
            routes: std::sync::Mutex::new(HashMap::new()),
            chunk_over: None,
        }
    }

    /// Publish messages larger than `chunk_over` bytes as chunks, if set.
    pub(crate) fn chunking(mut self, chunk_over: Option<usize>) -> Self {
        self.chunk_over = chunk_over;
        self
    }

    /// How many partitions `topic` has (0 if it is not partitioned), asked once.
    async fn partitions(&self, topic: &str) -> Result<u32, PublishError> {
        if let Some(route) = self.lock_routes().get(topic) {
            return Ok(route.partitions);
        }
        let partitions = self
            .pulsar
            .lookup_partitioned_topic_number(topic)
            .await
            .map_err(|e| {
                PublishError::broker(
                    topic,
                    format!(
                        "looking up its partitions: {e} (check that the broker is reachable \
                         and that the token may look the topic up)"
                    ),
                )
            })?;
        self.lock_routes().entry(topic.to_owned()).or_insert(Route {
            partitions,
            round_robin: RoundRobin::new(),
        });
        Ok(partitions)
    }

    fn lock_routes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Route>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where a message with `key` goes: the partition topic and its index, or `topic` itself
    /// when it is not partitioned.
    async fn route(&self, topic: &str, key: Option<&str>) -> Result<Target, PublishError> {
        let partitions = self.partitions(topic).await?;
        if partitions == 0 {
            return Ok((topic.to_owned(), None));
        }
        let index = {
            let mut routes = self.lock_routes();
            let route = routes.get_mut(topic).expect("looked up above");
            choose_partition(self.hashing, key, partitions, &mut route.round_robin)
        };
        Ok((format!("{topic}-partition-{index}"), Some(index as i32)))
    }

    /// Publish `record` to its topic (qualified here, so short names work on any broker) and
    /// wait for the broker's receipt. Returns the message id, `ledger:entry:partition`.
    pub(crate) async fn publish(&self, record: Message) -> Result<MessageId, PublishError> {
        let topic = crate::topic::resolve(&record.topic, self.namespace.as_deref())
            .map_err(PublishError::invalid_topic)?
            .to_string();
        let (topic, partition) = self.route(&topic, record.key.as_deref()).await?;
        if crate::chunked::needs_chunks(self.chunk_over, &record) {
            return self.publish_chunks(&topic, partition, record).await;
        }
        let mut producers = self.producers.lock().await;
        // A non-batching producer: Pulsar honours delayed delivery only on messages that are
        // not batched.
        let codec = record.compression.unwrap_or(Compression::None);
        let producer = self
            .open(&mut producers, &topic, None, codec, record.schema.as_ref())
            .await?;
        let mut message = producer.create_message().with_content(record.payload);
        if let Some(key) = record.key {
            message = message.with_key(key);
        }
        for (name, value) in record.properties {
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
        receipt_id(&topic, receipt.message_id.as_ref(), partition)
    }

    /// Publish `record`, too large for the broker, as chunks (PIP-37) through the non-batching
    /// producer of `topic` (uncompressed: the chunks are slices of the payload as it is); the
    /// last chunk's id once the broker has stored every chunk.
    async fn publish_chunks(
        &self,
        topic: &str,
        partition: Option<i32>,
        record: Message,
    ) -> Result<MessageId, PublishError> {
        let max = self.chunk_over.expect("chunking is on");
        let size = crate::chunked::chunk_payload_size(max, &record);
        let uuid = crate::chunked::next_uuid();
        let total = i32::try_from(record.payload.len()).map_err(|_| {
            PublishError::broker(
                topic,
                format!(
                    "a payload of {} bytes is too large to chunk: Pulsar counts a chunked \
                     message's size in 32 bits (at most 2 GiB)",
                    record.payload.len()
                ),
            )
        })?;
        let pieces: Vec<&[u8]> = record.payload.chunks(size).collect();
        let count = i32::try_from(pieces.len()).unwrap_or(i32::MAX);
        let properties: HashMap<String, String> = record.properties.iter().cloned().collect();
        let event_time = record
            .event_time
            .map(|at| u64::try_from(at.as_millis()).unwrap_or(u64::MAX));
        let deliver_at = match (record.deliver_after, record.deliver_at) {
            (Some(after), _) => Some(SystemTime::now() + after),
            (None, Some(at)) => Some(UNIX_EPOCH + at),
            (None, None) => None,
        }
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .map(|at| i64::try_from(at.as_millis()).unwrap_or(i64::MAX));
        let mut producers = self.producers.lock().await;
        // Uncompressed: pulsar-rs would compress each chunk on its own, which no consumer reads.
        // With the message's schema, as its unchunked publish would register it.
        let producer = self
            .open(
                &mut producers,
                topic,
                None,
                Compression::None,
                record.schema.as_ref(),
            )
            .await?;
        let mut receipts = Vec::with_capacity(pieces.len());
        for (index, piece) in pieces.iter().enumerate() {
            let chunk = pulsar::producer::Message {
                payload: piece.to_vec(),
                properties: properties.clone(),
                partition_key: record.key.clone(),
                event_time,
                deliver_at_time: deliver_at,
                uuid: Some(uuid.clone()),
                chunk_id: i32::try_from(index).ok(),
                num_chunks_from_msg: Some(count),
                total_chunk_msg_size: Some(total),
                ..pulsar::producer::Message::default()
            };
            receipts.push(producer.send_non_blocking(chunk).await.map_err(|e| {
                PublishError::broker(topic, format!("sending chunk {index} of {count}: {e}"))
            })?);
        }
        drop(producers);
        let mut last = None;
        for receipt in receipts {
            last = Some(
                receipt
                    .await
                    .map_err(|e| PublishError::broker(topic, format!("no receipt: {e}")))?,
            );
        }
        let last = last.expect("a chunked message has chunks");
        receipt_id(topic, last.message_id.as_ref(), partition)
    }

    /// Publish `records` to `topic` as one batch, through a batching producer of its own (one
    /// per topic, opened on first use), and wait for the receipts. They share one entry; on a
    /// partitioned topic, one entry per partition the records go to (keyed ones by their key,
    /// keyless ones all to the next partition in turn). The ids come in the records' order.
    pub(crate) async fn publish_batch(
        &self,
        records: Vec<Message>,
    ) -> Result<Vec<MessageId>, PublishError> {
        let Some(topic) = ruststream::message::batch_topic(&records)? else {
            return Ok(Vec::new());
        };
        if records
            .iter()
            .any(|r| crate::chunked::needs_chunks(self.chunk_over, r))
        {
            // A chunked message cannot be batched: publish them one by one, in order.
            let mut ids = Vec::with_capacity(records.len());
            for record in records {
                ids.push(self.publish(record).await?);
            }
            return Ok(ids);
        }
        let topic = crate::topic::resolve(topic, self.namespace.as_deref())
            .map_err(PublishError::invalid_topic)?
            .to_string();
        if self.partitions(&topic).await? == 0 {
            return self.publish_batch_to(&topic, None, records).await;
        }
        // One turn of the round-robin for the batch's keyless records.
        let keyless = self.route(&topic, None).await?;
        let mut batches: std::collections::BTreeMap<Target, Vec<(usize, Message)>> =
            std::collections::BTreeMap::new();
        let count = records.len();
        for (i, record) in records.into_iter().enumerate() {
            let target = match record.key.as_deref() {
                Some(key) => self.route(&topic, Some(key)).await?,
                None => keyless.clone(),
            };
            batches.entry(target).or_default().push((i, record));
        }
        let mut ids = vec![MessageId::new(&[]); count];
        for ((partition_topic, partition), batch) in batches {
            let (places, records): (Vec<usize>, Vec<Message>) = batch.into_iter().unzip();
            let stored = self
                .publish_batch_to(&partition_topic, partition, records)
                .await?;
            for (place, id) in places.into_iter().zip(stored) {
                ids[place] = id;
            }
        }
        Ok(ids)
    }

    /// Publish `records` as one batch to `topic` itself (partition `partition` of a
    /// partitioned topic, for the ids).
    async fn publish_batch_to(
        &self,
        topic: &str,
        partition: Option<i32>,
        records: Vec<Message>,
    ) -> Result<Vec<MessageId>, PublishError> {
        let topic = topic.to_owned();
        let schema = records.first().and_then(|r| r.schema.clone());
        if let Some(other) = records.iter().find(|r| r.schema != schema) {
            return Err(PublishError::schema(
                &topic,
                format!(
                    "one batch cannot register two schemas ({} and {}): a batched entry is \
                     written by one producer, with one schema; publish them in two batches",
                    schema_name(schema.as_ref()),
                    schema_name(other.schema.as_ref())
                ),
            ));
        }
        // An entry is compressed as one block: with the first record's codec.
        let codec = records
            .first()
            .and_then(|r| r.compression)
            .unwrap_or(Compression::None);
        let mut producers = self.batching.lock().await;
        // A longer batch is split into entries of `MAX_BATCH`; `send_batch` below closes the
        // last one.
        let producer = self
            .open(
                &mut producers,
                &topic,
                Some(MAX_BATCH),
                codec,
                schema.as_ref(),
            )
            .await?;
        let mut receipts = Vec::with_capacity(records.len());
        for record in records {
            let mut message = producer.create_message().with_content(record.payload);
            if let Some(key) = record.key {
                message = message.with_key(key);
            }
            for (name, value) in record.properties {
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
            ids.push(receipt_id(&topic, receipt.message_id.as_ref(), partition)?);
        }
        Ok(ids)
    }

    /// The producer of `topic` in `producers` that compresses with `codec` and registers
    /// `schema`, opened on first use: batching `batch_size` messages an entry, or not batching.
    async fn open<'p>(
        &self,
        producers: &'p mut Producers<Exe>,
        topic: &str,
        batch_size: Option<u32>,
        codec: Compression,
        schema: Option<&Schema>,
    ) -> Result<&'p mut Producer<Exe>, PublishError> {
        let opened = producers.entry((topic.to_owned(), codec)).or_default();
        let index = match opened.iter().position(|(s, _)| s.as_ref() == schema) {
            Some(index) => index,
            None => {
                let compression =
                    pulsar_compression(codec).map_err(|e| PublishError::broker(topic, e))?;
                let producer = self
                    .pulsar
                    .producer()
                    .with_topic(topic.to_owned())
                    .with_options(ProducerOptions {
                        // Wait for room instead of failing with SlowDown when receipts lag.
                        block_queue_if_full: true,
                        batch_size,
                        compression,
                        schema: schema.map(crate::schema::to_proto),
                        ..ProducerOptions::default()
                    })
                    .build()
                    .await
                    .map_err(|e| match schema {
                        Some(schema) if crate::schema::is_incompatible(&e.to_string()) => {
                            PublishError::schema(
                                topic,
                                format!(
                                    "opening a producer: {e} ({})",
                                    crate::schema::producer_refused(topic, schema, &e)
                                ),
                            )
                        }
                        _ => PublishError::broker(
                            topic,
                            format!(
                                "opening a producer: {e} (check that the broker is reachable \
                                 and that the token may produce on this topic)"
                            ),
                        ),
                    })?;
                opened.push((schema.cloned(), producer));
                opened.len() - 1
            }
        };
        Ok(&mut opened[index].1)
    }

    pub(crate) async fn close(&self) {
        let mut producers: Vec<_> = self.producers.lock().await.drain().collect();
        producers.extend(self.batching.lock().await.drain());
        let producers = producers.into_iter().flat_map(|((topic, _), opened)| {
            opened.into_iter().map(move |(_, p)| (topic.clone(), p))
        });
        for (topic, mut producer) in producers {
            if let Err(error) = producer.close().await {
                tracing::warn!(%topic, %error, "closing a producer failed");
            }
        }
    }
}

impl<Exe: Executor> ruststream::handler::Publish for Publisher<Exe> {
    fn publish(&self, message: Message) -> ruststream::handler::Publishing<'_, MessageId> {
        let message = traced(message);
        ruststream::handler::Publishing::waiting(Box::pin(Publisher::publish(self, message)))
    }
}

/// `message` with the caller's trace context in its properties: taken at the call, not in the
/// future, while the caller's span is the current one.
fn traced(mut message: Message) -> Message {
    crate::trace_context::inject(&mut message.properties);
    message
}
