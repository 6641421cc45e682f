//! Publishing on a Pulsar server: batched, pipelined, each message answered on its own.
//!
//! Each topic partition (and codec, schema and batching setting) has one [`Outlet`]: a
//! pulsar-rs producer that does not batch, fed with batches made here, as the Java client makes
//! them by default (at most 1,000 messages and 128 KiB an entry, 1 ms for others to join the
//! first; [`Batching`]). A publish hands its message over and returns; the broker's receipt of
//! its entry later tells the message's [`Receipt`]: a caller awaiting the id, the delivery
//! whose acknowledgement waits for it, or a file being published. Nothing is held across a
//! send or a receipt, so many publishes, from many handlers, fill one entry and many entries
//! are in flight at once. The messages handed over and not answered are bounded ([`Room`]);
//! a publish past the bound waits for room.
//!
//! A partitioned topic is looked up once, on its first publish (pulsar-rs's
//! `lookup_partitioned_topic_number`), and each message then goes to the partition the
//! official clients would pick ([`choose_partition`]): by its key with the broker's
//! [`HashingScheme`], or the next in turn without one; a batch's keyless messages share one
//! partition. The id a publish returns names the partition (`ledger:entry:partition`, plus
//! `:index` in a batch), as the Java client's does. Partitions added to a topic later are used
//! after the service restarts.

mod batch;
mod in_transaction;
mod outlet;
mod room;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use pulsar::producer::ProducerOptions;
use pulsar::{Executor, Pulsar};
use ruststream::message::Message;
use ruststream::publish::{Batching, Confirm, Publish, Publishing, Receipt, Reply, Tell};
use ruststream::runtime::Runtime;
use ruststream::{Compression, MessageId, PublishError, Schema};
use ruststream_pulsar_model::{choose_partition, HashingScheme, RoundRobin};

use batch::Item;
pub(crate) use in_transaction::InTransaction;
use in_transaction::TxnProducer;
use outlet::Outlet;
use room::Room;

/// How many messages every producer of a broker holds, handed over and not answered, before a
/// publish waits for room.
pub(crate) const MAX_PENDING_MESSAGES: usize = 10_000;

/// How many payload bytes every producer of a broker holds, handed over and not answered,
/// before a publish waits for room (the Java client's default memory limit).
pub(crate) const MAX_PENDING_BYTES: usize = 64 * 1024 * 1024;

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
            "the message asks for {other} compression, but rstream-pulsar was built without \
             its `compression` feature: enable it, or publish without compression"
        )),
    }
}

/// How a message's schema is named in an error: its kind, or that it has none.
fn schema_name(schema: Option<&Schema>) -> &'static str {
    schema.map_or("no schema", |s| s.kind().name())
}

/// What sets one producer apart from another of the same topic partition.
#[derive(Clone, PartialEq)]
struct Kind {
    codec: Compression,
    batching: Batching,
    schema: Option<Schema>,
}

/// A topic as its publishes are routed, with the producers of its partitions.
struct Route {
    /// 0: not partitioned.
    partitions: u32,
    round_robin: RoundRobin,
    /// The topic's name, or each partition's, by index.
    names: Vec<String>,
    /// The producers, by partition index (0 for a topic that is not partitioned).
    outlets: Vec<(usize, Kind, Arc<Outlet>)>,
}

/// The app's producers.
pub(crate) struct Publisher<Exe: Executor> {
    pulsar: Pulsar<Exe>,
    runtime: Arc<dyn Runtime>,
    topics: crate::topic::Resolved,
    hashing: HashingScheme,
    /// The broker's batching setting, for messages that name none.
    batching: Batching,
    /// Every topic published to, by its full name (foldhash: every publish looks its topic
    /// up; std's SipHash cost more than the look-up's lock).
    routes: Mutex<HashMap<String, Route, foldhash::fast::RandomState>>,
    room: Arc<Room>,
    /// Publish messages larger than this many bytes as chunks, if set
    /// ([`PulsarBroker::chunk_messages_over`](crate::PulsarBroker::chunk_messages_over)).
    chunk_over: Option<usize>,
    /// The producers of transactional sends, by partition name and kind.
    txn_producers: Mutex<Vec<(String, Kind, TxnProducer<Exe>)>>,
    /// How the service authenticates: the role a refusal names.
    credentials: Option<crate::credentials::Credentials>,
}

/// Where one message goes: a partition of a looked-up topic.
struct Target {
    outlet: Arc<Outlet>,
}

impl<Exe: Executor> Publisher<Exe> {
    pub(crate) fn new(
        pulsar: Pulsar<Exe>,
        runtime: Arc<dyn Runtime>,
        namespace: Option<String>,
        hashing: HashingScheme,
    ) -> Self {
        Publisher {
            pulsar,
            runtime,
            topics: crate::topic::Resolved::new(namespace),
            hashing,
            batching: Batching::default(),
            routes: Mutex::new(HashMap::default()),
            room: Arc::new(Room::new(MAX_PENDING_MESSAGES, MAX_PENDING_BYTES)),
            chunk_over: None,
            txn_producers: Mutex::new(Vec::new()),
            credentials: None,
        }
    }

    /// Name the role of `credentials` when the broker refuses a publish to it.
    pub(crate) fn credentials(
        mut self,
        credentials: Option<crate::credentials::Credentials>,
    ) -> Self {
        self.credentials = credentials;
        self
    }

    /// Publish messages larger than `chunk_over` bytes as chunks, if set.
    pub(crate) fn chunking(mut self, chunk_over: Option<usize>) -> Self {
        self.chunk_over = chunk_over;
        self
    }

    /// Batch as `batching` says the messages that name no setting of their own.
    pub(crate) fn batching(mut self, batching: Batching) -> Self {
        self.batching = batching;
        self
    }

    /// Hold at most `messages` messages and `bytes` payload bytes handed over and not answered.
    pub(crate) fn pending(mut self, messages: usize, bytes: usize) -> Self {
        self.room = Arc::new(Room::new(messages, bytes));
        self
    }

    fn lock_routes(&self) -> MutexGuard<'_, HashMap<String, Route, foldhash::fast::RandomState>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `topic` qualified (short names in the broker's namespace).
    fn resolve(&self, topic: &str) -> Result<ruststream_pulsar_model::TopicName, PublishError> {
        self.topics.get(topic).map_err(PublishError::invalid_topic)
    }

    /// Look `topic` up (its partitions), once.
    async fn look_up(&self, topic: &str) -> Result<(), PublishError> {
        if self.lock_routes().contains_key(topic) {
            return Ok(());
        }
        let partitions = self
            .pulsar
            .lookup_partitioned_topic_number(topic)
            .await
            .map_err(|e| match super::authorization::is_refused(&e) {
                true => PublishError::not_authorized(
                    topic,
                    super::authorization::refused(
                        self.credentials.as_ref(),
                        "look up",
                        topic,
                        "produce",
                        &e,
                    ),
                ),
                false => PublishError::broker(
                    topic,
                    format!(
                        "looking up its partitions: {e} (check that the broker is reachable \
                         and that the token may look the topic up)"
                    ),
                ),
            })?;
        let names = if partitions == 0 {
            vec![topic.to_owned()]
        } else {
            (0..partitions)
                .map(|index| format!("{topic}-partition-{index}"))
                .collect()
        };
        self.lock_routes().entry(topic.to_owned()).or_insert(Route {
            partitions,
            round_robin: RoundRobin::new(),
            names,
            outlets: Vec::new(),
        });
        Ok(())
    }

    /// The producer of `topic` (looked up already) that `key` goes to, for messages of
    /// `kind`; opened now if there is none. `keyless` is the partition a batch's keyless
    /// messages share, if chosen. `None` if the topic was not looked up.
    fn target(
        &self,
        topic: &str,
        key: Option<&str>,
        kind: &Kind,
        keyless: Option<usize>,
    ) -> Option<Target> {
        let mut routes = self.lock_routes();
        let route = routes.get_mut(topic)?;
        let index = match (route.partitions, key, keyless) {
            (0, _, _) => 0,
            (_, None, Some(shared)) => shared,
            (partitions, key, _) => {
                choose_partition(self.hashing, key, partitions, &mut route.round_robin) as usize
            }
        };
        let found = route
            .outlets
            .iter()
            .position(|(at, k, outlet)| *at == index && k == kind && !outlet.is_done());
        let outlet = match found {
            Some(found) => route.outlets[found].2.clone(),
            None => {
                route
                    .outlets
                    .retain(|(at, k, outlet)| !(*at == index && k == kind && outlet.is_done()));
                let name = route.names[index].clone();
                let partition = if route.partitions == 0 {
                    -1
                } else {
                    index as i64
                };
                let outlet = Arc::new(self.open(name, partition, kind.clone()));
                route.outlets.push((index, kind.clone(), outlet.clone()));
                outlet
            }
        };
        Some(Target { outlet })
    }

    /// An outlet for `topic` (partition `partition`) whose task opens its producer.
    fn open(&self, topic: String, partition: i64, kind: Kind) -> Outlet {
        let batching = kind.batching;
        let open = self.build_producer(topic.clone(), kind);
        Outlet::start(
            topic,
            partition,
            batching,
            self.room.clone(),
            self.runtime.clone(),
            open,
        )
    }

    /// Open a producer (not batching) of `topic` for messages of `kind`.
    fn build_producer(&self, topic: String, kind: Kind) -> outlet::Open<Exe> {
        let pulsar = self.pulsar.clone();
        let credentials = self.credentials.clone();
        let name = topic;
        let Kind {
            codec,
            batching: _,
            schema,
        } = kind;
        Box::pin(async move {
            let compression =
                pulsar_compression(codec).map_err(|e| PublishError::broker(&name, e))?;
            pulsar
                .producer()
                .with_topic(name.clone())
                .with_options(ProducerOptions {
                    // Wait for room in the connection instead of failing with SlowDown.
                    block_queue_if_full: true,
                    // The batches are made by the outlet; pulsar-rs sends each as it is.
                    batch_size: None,
                    compression,
                    schema: schema.as_ref().map(crate::schema::to_proto),
                    ..ProducerOptions::default()
                })
                .build()
                .await
                .map_err(|e| match &schema {
                    Some(schema) if crate::schema::is_incompatible(&e.to_string()) => {
                        PublishError::schema(
                            &name,
                            format!(
                                "opening a producer: {e} ({})",
                                crate::schema::producer_refused(&name, schema, &e)
                            ),
                        )
                    }
                    _ if super::authorization::is_refused(&e) => PublishError::not_authorized(
                        &name,
                        super::authorization::refused(
                            credentials.as_ref(),
                            "publish to",
                            &name,
                            "produce",
                            &e,
                        ),
                    ),
                    _ => PublishError::broker(
                        &name,
                        format!(
                            "opening a producer: {e} (check that the broker is reachable and \
                             that the token may produce on this topic)"
                        ),
                    ),
                })
        })
    }

    /// The kind of producer `message` goes through.
    fn kind_of(&self, message: &Message) -> Kind {
        Kind {
            codec: message.compression.unwrap_or(Compression::None),
            batching: message.batching.unwrap_or(self.batching),
            schema: message.schema.clone(),
        }
    }

    /// Hand `message` over: to the open batch of its producer, or (a delivery time, chunks)
    /// as entries of its own. Waits only for the topic's first look-up and for room.
    fn hand_over(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        let topic = match self.resolve(&message.topic) {
            Ok(topic) => topic,
            Err(error) => return refuse(receipt, error),
        };
        let chunked = crate::chunked::needs_chunks(self.chunk_over, &message);
        let delayed = message.deliver_after.is_some() || message.deliver_at.is_some();
        if !chunked && !delayed && self.room.try_take(message.payload.len()) {
            let kind = self.kind_of(&message);
            if let Some(target) = self.target(topic.as_str(), message.key.as_deref(), &kind, None) {
                target.outlet.push(item(message, receipt));
                return Publishing::done(Ok(()));
            }
            // Not looked up yet: the room is taken again below, once it is.
            self.room.give_back(1, message.payload.len());
        }
        Publishing::waiting(Box::pin(async move {
            let topic = topic.as_str();
            if let Err(error) = self.look_up(topic).await {
                return Err(refused(receipt, error));
            }
            if chunked {
                return self.send_chunks(topic, message, receipt).await;
            }
            let bytes = message.payload.len();
            std::future::poll_fn(|cx| self.room.poll_take(bytes, cx)).await;
            let kind = self.kind_of(&message);
            let target = self
                .target(topic, message.key.as_deref(), &kind, None)
                .expect("looked up above");
            match delayed {
                false => target.outlet.push(item(message, receipt)),
                true => {
                    let (plain, receipt) = delayed_message(message, receipt);
                    target.outlet.push_alone(plain, receipt, bytes);
                }
            }
            Ok(())
        }))
    }

    /// Hand `message`, too large for the broker, over as chunks (PIP-37), each an entry of its
    /// own, uncompressed (the chunks are slices of the payload as it is): `receipt` is told
    /// the last chunk's id once every chunk is stored, or the first failure.
    async fn send_chunks(
        &self,
        topic: &str,
        record: Message,
        receipt: Receipt,
    ) -> Result<(), PublishError> {
        let max = self.chunk_over.expect("chunking is on");
        let size = crate::chunked::chunk_payload_size(max, &record);
        let uuid = crate::chunked::next_uuid();
        let total = match i32::try_from(record.payload.len()) {
            Ok(total) => total,
            Err(_) => {
                let error = PublishError::broker(
                    topic,
                    format!(
                        "a payload of {} bytes is too large to chunk: Pulsar counts a chunked \
                         message's size in 32 bits (at most 2 GiB)",
                        record.payload.len()
                    ),
                );
                return Err(refused(receipt, error));
            }
        };
        let pieces: Vec<&[u8]> = record.payload.chunks(size).collect();
        let count = i32::try_from(pieces.len()).unwrap_or(i32::MAX);
        let properties: HashMap<String, String> = record.properties.iter().cloned().collect();
        let event_time = record
            .event_time
            .map(|at| u64::try_from(at.as_millis()).unwrap_or(u64::MAX));
        let deliver_at = deliver_at_millis(&record);
        // Uncompressed: pulsar-rs would compress each chunk on its own, which no consumer
        // reads. With the message's schema, as its unchunked publish would register it; never
        // batched.
        let kind = Kind {
            codec: Compression::None,
            batching: Batching::off(),
            schema: record.schema.clone(),
        };
        let group = Arc::new(Chunks::new(pieces.len(), receipt));
        for (index, piece) in pieces.iter().enumerate() {
            std::future::poll_fn(|cx| self.room.poll_take(piece.len(), cx)).await;
            let target = self
                .target(topic, record.key.as_deref(), &kind, None)
                .expect("looked up by the caller");
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
            let confirm = Receipt::to(Confirm::new(group.clone(), index as u64));
            target.outlet.push_alone(chunk, confirm, piece.len());
        }
        Ok(())
    }

    /// Publish `records` to one topic as one batch: one entry (of at most 1,000 messages) per
    /// partition they go to (keyed ones by their key, keyless ones all to the next partition in
    /// turn), and wait for their receipts. The ids come in the records' order.
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
                ids.push(self.publish(record, Receipt::none()).await?);
            }
            return Ok(ids);
        }
        let schema = records.first().and_then(|r| r.schema.clone());
        if let Some(other) = records.iter().find(|r| r.schema != schema) {
            return Err(PublishError::schema(
                topic,
                format!(
                    "one batch cannot register two schemas ({} and {}): a batched entry is \
                     written by one producer, with one schema; publish them in two batches",
                    schema_name(schema.as_ref()),
                    schema_name(other.schema.as_ref())
                ),
            ));
        }
        let topic = self.resolve(topic)?;
        let topic = topic.as_str();
        self.look_up(topic).await?;
        // An entry is compressed as one block: with the first record's codec.
        let kind = Kind {
            codec: records
                .first()
                .and_then(|r| r.compression)
                .unwrap_or(Compression::None),
            batching: self.batching,
            schema,
        };
        // One turn of the round-robin for the batch's keyless records.
        let keyless = {
            let mut routes = self.lock_routes();
            let route = routes.get_mut(topic).expect("looked up above");
            (route.partitions > 0).then(|| {
                choose_partition(self.hashing, None, route.partitions, &mut route.round_robin)
                    as usize
            })
        };
        let mut by_outlet: Vec<(Arc<Outlet>, Vec<Item>)> = Vec::new();
        let mut replies = Vec::with_capacity(records.len());
        for record in records {
            let bytes = record.payload.len();
            std::future::poll_fn(|cx| self.room.poll_take(bytes, cx)).await;
            let target = self
                .target(topic, record.key.as_deref(), &kind, keyless.or(Some(0)))
                .expect("looked up above");
            let (reply, confirm) = Reply::new();
            replies.push(reply);
            let item = item(record, Receipt::to(confirm));
            match by_outlet
                .iter_mut()
                .find(|(outlet, _)| Arc::ptr_eq(outlet, &target.outlet))
            {
                Some((_, items)) => items.push(item),
                None => by_outlet.push((target.outlet, vec![item])),
            }
        }
        for (outlet, items) in by_outlet {
            outlet.push_batch(items, 1000);
        }
        let mut ids = Vec::with_capacity(replies.len());
        for reply in replies {
            ids.push(reply.await?);
        }
        Ok(ids)
    }

    /// Send what is open, wait for the answers, close every producer.
    pub(crate) async fn close(&self) {
        let outlets: Vec<Arc<Outlet>> = self
            .lock_routes()
            .values()
            .flat_map(|route| route.outlets.iter().map(|(_, _, outlet)| outlet.clone()))
            .collect();
        for outlet in outlets {
            outlet.close().await;
        }
        // Dropped, they close: what they sent was answered (a transaction's commit waits
        // for its sends).
        self.txn_producers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

impl<Exe: Executor> Publish for Publisher<Exe> {
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        self.hand_over(message, receipt)
    }
}

/// `message` as an outlet takes it.
#[inline]
fn item(message: Message, receipt: Receipt) -> Item {
    Item {
        payload: message.payload,
        properties: message.properties,
        key: message.key,
        event_time: message
            .event_time
            .map(|at| u64::try_from(at.as_millis()).unwrap_or(u64::MAX)),
        receipt,
    }
}

/// When `message` is to be delivered, in milliseconds since the Unix epoch, if it says.
fn deliver_at_millis(message: &Message) -> Option<i64> {
    match (message.deliver_after, message.deliver_at) {
        (Some(after), _) => Some(SystemTime::now() + after),
        (None, Some(at)) => Some(UNIX_EPOCH + at),
        (None, None) => None,
    }
    .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
    .map(|at| i64::try_from(at.as_millis()).unwrap_or(i64::MAX))
}

/// `message`, with a delivery time, as an entry of its own (Pulsar honours delayed delivery
/// only on messages that are not batched).
fn delayed_message(message: Message, receipt: Receipt) -> (pulsar::producer::Message, Receipt) {
    let deliver_at = deliver_at_millis(&message);
    let (mut plain, receipt) = item(message, receipt).into_plain();
    plain.deliver_at_time = deliver_at;
    (plain, receipt)
}

/// A message not sent: its receipt is told why, and so is the caller.
fn refuse(receipt: Receipt, error: PublishError) -> Publishing<'static, ()> {
    Publishing::done(Err(refused(receipt, error)))
}

/// `receipt` told `error`, which is returned.
fn refused(receipt: Receipt, error: PublishError) -> PublishError {
    receipt.tell(Err(error.clone()));
    error
}

/// The chunks of one message, answered one by one: the message's receipt is told once all
/// are, the last chunk's id or the first failure.
struct Chunks {
    state: Mutex<ChunksAnswered>,
}

struct ChunksAnswered {
    left: usize,
    /// The id of the last chunk answered so far, by index.
    last: Option<(u64, MessageId)>,
    failure: Option<PublishError>,
    receipt: Option<Receipt>,
}

impl Chunks {
    fn new(count: usize, receipt: Receipt) -> Self {
        Chunks {
            state: Mutex::new(ChunksAnswered {
                left: count,
                last: None,
                failure: None,
                receipt: Some(receipt),
            }),
        }
    }
}

impl Tell for Chunks {
    fn tell(&self, index: u64, result: Result<MessageId, PublishError>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.left -= 1;
        match result {
            Ok(id) if state.last.is_none_or(|(last, _)| index > last) => {
                state.last = Some((index, id));
            }
            Ok(_) => {}
            Err(error) => {
                state.failure.get_or_insert(error);
            }
        }
        if state.left > 0 {
            return;
        }
        let answer = match (state.failure.take(), state.last) {
            (Some(error), _) => Err(error),
            (None, Some((_, id))) => Ok(id),
            (None, None) => Err(PublishError::Abandoned),
        };
        let receipt = state.receipt.take();
        drop(state);
        if let Some(receipt) = receipt {
            receipt.tell(answer);
        }
    }
}
