use std::{
    collections::{HashMap, HashSet},
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{
    channel::{mpsc, mpsc::UnboundedSender},
    SinkExt, StreamExt,
};

use crate::{
    connection::Connection,
    consumer::{
        batched_message_iterator::BatchedMessageIterator,
        data::{DeadLetterPolicy, EngineEvent, EngineMessage, EntryDelivery},
        options::ConsumerOptions,
    },
    error::{ConnectionError, ConsumerError},
    message::{
        proto::{command_subscribe::SubType, MessageIdData},
        Message as RawMessage, Metadata,
    },
    producer::Message,
    proto,
    proto::{BaseCommand, CommandCloseConsumer, CommandMessage},
    retry_op::retry_subscribe_consumer,
    Error, Executor, Payload, Pulsar,
};

const SYSTEM_PROPERTY_REAL_TOPIC: &str = "REAL_TOPIC";
const SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";

pub struct ConsumerEngine<Exe: Executor> {
    client: Pulsar<Exe>,
    connection: Arc<Connection<Exe>>,
    /// The connection the consumer is on, kept up to date for what is sent on it without
    /// going through the engine (acknowledgements in a transaction).
    shared_connection: Arc<Mutex<Arc<Connection<Exe>>>>,
    topic: String,
    subscription: String,
    sub_type: SubType,
    id: u64,
    name: Option<String>,
    tx: mpsc::Sender<Result<EntryDelivery, Error>>,
    messages_rx: Option<mpsc::UnboundedReceiver<RawMessage>>,
    engine_rx: Option<mpsc::UnboundedReceiver<EngineMessage<Exe>>>,
    event_rx: mpsc::UnboundedReceiver<EngineEvent<Exe>>,
    event_tx: UnboundedSender<EngineEvent<Exe>>,
    batch_size: u32,
    remaining_messages: i64,
    unacked_message_redelivery_delay: Option<Duration>,
    unacked_messages: HashMap<MessageIdData, Instant>,
    dead_letter_policy: Option<DeadLetterPolicy>,
    options: ConsumerOptions,
}

impl<Exe: Executor> ConsumerEngine<Exe> {
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub fn new(
        client: Pulsar<Exe>,
        connection: Arc<Connection<Exe>>,
        topic: String,
        subscription: String,
        sub_type: SubType,
        id: u64,
        name: Option<String>,
        tx: mpsc::Sender<Result<EntryDelivery, Error>>,
        messages_rx: mpsc::UnboundedReceiver<RawMessage>,
        engine_rx: mpsc::UnboundedReceiver<EngineMessage<Exe>>,
        batch_size: u32,
        unacked_message_redelivery_delay: Option<Duration>,
        dead_letter_policy: Option<DeadLetterPolicy>,
        options: ConsumerOptions,
    ) -> ConsumerEngine<Exe> {
        let (event_tx, event_rx) = mpsc::unbounded();
        ConsumerEngine {
            client,
            shared_connection: Arc::new(Mutex::new(connection.clone())),
            connection,
            topic,
            subscription,
            sub_type,
            id,
            name,
            tx,
            messages_rx: Some(messages_rx),
            engine_rx: Some(engine_rx),
            event_rx,
            event_tx,
            batch_size,
            remaining_messages: batch_size as i64,
            unacked_message_redelivery_delay,
            unacked_messages: HashMap::new(),
            dead_letter_policy,
            options,
        }
    }

    /// The connection the consumer is on, as the engine replaces it when it reconnects.
    pub(crate) fn shared_connection(&self) -> Arc<Mutex<Arc<Connection<Exe>>>> {
        self.shared_connection.clone()
    }

    fn register_source<E, M>(&self, mut rx: mpsc::UnboundedReceiver<E>, mapper: M) -> Result<(), ()>
    where
        E: Send + 'static,
        M: Fn(Option<E>) -> EngineEvent<Exe> + Send + Sync + 'static,
    {
        let mut event_tx = self.event_tx.clone();

        self.client.executor.spawn(Box::pin(async move {
            while let Some(msg) = rx.next().await {
                let r = event_tx.send(mapper(Some(msg))).await;
                if let Err(err) = r {
                    log::error!("Error sending event to channel - {err}");
                    if err.is_disconnected() {
                        break;
                    }
                }
            }

            let send_end_res = event_tx.send(mapper(None)).await;
            if let Err(err) = send_end_res {
                log::debug!("Error sending close event to channel - {err}");
            }

            log::trace!("rx terminated");
        }))
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn engine(&mut self) -> Result<(), Error> {
        debug!("starting the consumer engine for topic {}", self.topic);

        loop {
            if !self.connection.is_valid() {
                if let Some(err) = self.connection.error() {
                    error!(
                        "Consumer: connection {} is not valid: {:?}",
                        self.connection.id(),
                        err
                    );
                    self.reconnect().await?;
                }
            }

            if let Some(messages_rx) = self.messages_rx.take() {
                self.register_source(messages_rx, |msg| EngineEvent::Message(msg))
                    .map_err(|_| {
                        Error::Custom(String::from("Error registering messages_rx source"))
                    })?;
            }

            if let Some(engine_rx) = self.engine_rx.take() {
                self.register_source(engine_rx, |msg| EngineEvent::EngineMessage(msg))
                    .map_err(|_| {
                        Error::Custom(String::from("Error registering engine_rx source"))
                    })?;
            }

            // In the casual workflow, we use the `batch_size` as a maximum number that we could
            // send using a send flow command message to ask the broker to send us
            // messages, which is why we have a subtraction below (`batch_size` -
            // `remaining_messages`).
            //
            // In the special case of batch messages (which is defined by clients), the number of
            // messages could be greater than the given batch size and the remaining
            // messages goes negative, which is why we use an `i64` as we want to keep
            // track of the number of negative messages as the next send flow will be
            // the batch_size - minus remaining messages which allow us to retrieve the casual
            // workflow of flow command messages.
            //
            // Here is the example of it works for a batch_size at 1000 and the error case:
            //
            // ```
            // Message (1) -> (batch_size = 1000, remaing_messages = 999, no flow message trigger)
            // ... 499 messages later ...
            // Message (1) -> (batch_size = 1000, remaing_messages = 499, flow message trigger, ask broker to send => batch_size - remaining_messages = 501)
            // ... 200 messages later ...
            // BatchMessage (1024) -> (batch_size = 1000, remaining_messages = 4294967096, no flow message trigger) [underflow on remaining messages - without the patch]
            // BatchMessage (1024) -> (batch_size = 1000, remaining_messages = -1124, flow message trigger, ask broker to send =>  batch_size - remaining_messages = 2124) [no underflow on remaining messages - with the patch]
            // ```
            match self.flow_if_low().await {
                Ok(()) => {}
                Err(ConnectionError::Disconnected) => {
                    debug!(
                        "consumer engine: consumer connection disconnected, trying to reconnect"
                    );
                    continue;
                }
                // we don't need to handle the SlowDown error, since send_flow waits on the
                // channel to be not full
                Err(e) => {
                    error!("consumer engine: we got a unrecoverable connection error, {e}");
                    return Err(e.into());
                }
            }

            match Self::timeout(self.event_rx.next(), Duration::from_secs(1)).await {
                Err(_) => {
                    // If you are reading this comment, you may have an issue where you have
                    // received a batched message that is greater that the batch
                    // size and then break the way that we send flow command message.
                    //
                    // In that case, you could increase your batch size or patch this driver by
                    // adding the following line, if you are sure that you have
                    // at least 1 incoming message per second.
                    //
                    // ```rust
                    // self.remaining_messages = 0;
                    // ```
                    debug!("consumer engine: timeout (1s)");
                }
                Ok(Some(EngineEvent::Message(msg))) => {
                    debug!("consumer engine: received message, {:?}", msg);
                    let out = self.handle_message_opt(msg).await;
                    if let Some(res) = out {
                        return res;
                    }
                }
                Ok(Some(EngineEvent::EngineMessage(msg))) => {
                    debug!("consumer engine: received engine message");
                    let continue_loop = self.handle_ack_opt(msg).await;
                    if !continue_loop {
                        return Ok(());
                    }
                }
                Ok(None) => {
                    log::warn!("Event stream is terminated");
                    return Ok(());
                }
            }
        }
    }

    /// Ask the broker for more messages once fewer than half of `batch_size` are left.
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn flow_if_low(&mut self) -> Result<(), ConnectionError> {
        if self.remaining_messages < (self.batch_size.div_ceil(2) as i64) {
            self.connection
                .sender()
                .send_flow(
                    self.id,
                    (self.batch_size as i64 - self.remaining_messages) as u32,
                )
                .await?;
            self.remaining_messages = self.batch_size as i64;
        }
        Ok(())
    }

    async fn handle_message_opt(
        &mut self,
        message_opt: Option<crate::message::Message>,
    ) -> Option<Result<(), Error>> {
        match message_opt {
            None => {
                debug!("Consumer: old message source terminated");
                None
            }
            Some(message) => {
                self.remaining_messages -= message
                    .payload
                    .as_ref()
                    .and_then(|payload| {
                        debug!(
                            "Consumer: received message payload, num_messages_in_batch = {:?}",
                            payload.metadata.num_messages_in_batch
                        );
                        payload.metadata.num_messages_in_batch
                    })
                    .unwrap_or(1) as i64;
                // More is asked for before this entry's messages go into the consumer's queue,
                // which can take until the consumer has taken all but a queue's worth of them:
                // the broker sends the next entry meanwhile, instead of after.
                if let Err(e) = self.flow_if_low().await {
                    debug!("consumer engine: cannot ask for more messages yet, {e}");
                }

                match self.process_message(message).await {
                    // Continue
                    Ok(true) => None,
                    // End of Topic
                    Ok(false) => Some(Ok(())),
                    Err(e) => {
                        if let Err(e) = self.tx.send(Err(e)).await {
                            error!("cannot send a message from the consumer engine to the consumer({}), stopping the engine", self.id);
                            Some(Err(Error::Consumer(e.into())))
                        } else {
                            None
                        }
                    }
                }
            }
        }
    }

    async fn handle_ack_opt(&mut self, ack_opt: Option<EngineMessage<Exe>>) -> bool {
        match ack_opt {
            None => {
                trace!("ack channel was closed");
                false
            }
            Some(EngineMessage::Ack(message_id, cumulative)) => {
                self.ack(message_id, cumulative).await;
                true
            }
            Some(EngineMessage::Nack(message_id)) => {
                if let Err(e) = self
                    .connection
                    .sender()
                    .send_redeliver_unacknowleged_messages(self.id, vec![message_id.clone()])
                    .await
                {
                    error!(
                        "could not ask for redelivery for message {:?}: {:?}",
                        message_id, e
                    );
                }
                true
            }
            Some(EngineMessage::AckMany(message_ids)) => {
                self.ack_many(message_ids).await;
                true
            }
            Some(EngineMessage::NackMany(message_ids)) => {
                if let Err(e) = self
                    .connection
                    .sender()
                    .send_redeliver_unacknowleged_messages(self.id, message_ids)
                    .await
                {
                    error!("could not ask for redelivery: {:?}", e);
                }
                true
            }
            Some(EngineMessage::UnackedRedelivery) => {
                let mut h = HashSet::new();
                let now = Instant::now();
                // info!("unacked messages length: {}", self.unacked_messages.len());
                for (id, t) in self.unacked_messages.iter() {
                    if *t < now {
                        h.insert(id.clone());
                    }
                }

                let ids: Vec<_> = h.iter().cloned().collect();
                if !ids.is_empty() {
                    // info!("will unack ids: {:?}", ids);
                    if let Err(e) = self
                        .connection
                        .sender()
                        .send_redeliver_unacknowleged_messages(self.id, ids)
                        .await
                    {
                        error!("could not ask for redelivery: {:?}", e);
                    } else {
                        for i in h.iter() {
                            self.unacked_messages.remove(i);
                        }
                    }
                }
                true
            }
            Some(EngineMessage::Received(message_id)) => {
                if let Some(duration) = self.unacked_message_redelivery_delay {
                    self.unacked_messages
                        .insert(message_id, Instant::now() + duration);
                }
                true
            }
            Some(EngineMessage::Restart(message_ids)) => {
                if let Some(duration) = self.unacked_message_redelivery_delay {
                    let deadline = Instant::now() + duration;
                    for id in &message_ids {
                        if let Some(t) = self.unacked_messages.get_mut(id) {
                            *t = deadline;
                        }
                    }
                }
                true
            }
            Some(EngineMessage::GetConnection(sender)) => {
                let _ = sender.send(self.connection.clone()).map_err(|_| {
                    error!(
                        "consumer requested the engine's connection but dropped the \
                                     channel before receiving"
                    );
                });
                true
            }
            Some(EngineMessage::AckedInTxn(message_ids)) => {
                for id in &message_ids {
                    self.unacked_messages.remove(id);
                    // the record is keyed by the id as received, without the batch size or
                    // ack set an acknowledgement may add
                    if id.batch_size.is_some() || !id.ack_set.is_empty() {
                        self.unacked_messages.remove(&MessageIdData {
                            batch_size: None,
                            ack_set: Vec::new(),
                            ..id.clone()
                        });
                    }
                }
                true
            }
        }
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn ack(&mut self, message_id: MessageIdData, cumulative: bool) {
        // FIXME: this does not handle cumulative acks
        self.unacked_messages.remove(&message_id);
        let res = self
            .connection
            .sender()
            .send_ack(self.id, vec![message_id], cumulative)
            .await;
        if res.is_err() {
            error!("ack error: {:?}", res);
        }
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn ack_many(&mut self, message_ids: Vec<MessageIdData>) {
        for id in &message_ids {
            self.unacked_messages.remove(id);
        }
        let res = self
            .connection
            .sender()
            .send_ack(self.id, once_per_entry(message_ids), false)
            .await;
        if res.is_err() {
            error!("ack error: {:?}", res);
        }
    }

    /// Process the message. Returns `true` if there are more messages to process
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn process_message(&mut self, message: RawMessage) -> Result<bool, Error> {
        match message {
            RawMessage {
                command:
                    BaseCommand {
                        reached_end_of_topic: Some(_),
                        ..
                    },
                ..
            } => {
                return Ok(false);
            }
            RawMessage {
                command:
                    BaseCommand {
                        active_consumer_change: Some(active_consumer_change),
                        ..
                    },
                ..
            } => {
                // TODO: Communicate this status to the Consumer and expose it
                debug!(
                    "Active consumer change for {} - Active: {:?}",
                    self.debug_format(),
                    active_consumer_change.is_active
                );
            }
            RawMessage {
                command:
                    BaseCommand {
                        message: Some(message),
                        ..
                    },
                payload: Some(payload),
            } => {
                self.process_payload(message, payload).await?;
            }
            RawMessage {
                command: BaseCommand {
                    message: Some(_), ..
                },
                payload: None,
            } => {
                error!(
                    "Consumer {} received message without payload",
                    self.debug_format()
                );
            }
            RawMessage {
                command:
                    BaseCommand {
                        close_consumer: Some(CommandCloseConsumer { consumer_id, .. }),
                        ..
                    },
                ..
            } => {
                error!(
                    "Broker notification of closed consumer {}: {}",
                    consumer_id,
                    self.debug_format()
                );

                self.reconnect().await?;
            }
            unexpected => {
                let r#type = proto::base_command::Type::try_from(unexpected.command.r#type)
                    .map(|t| format!("{t:?}"))
                    .unwrap_or_else(|_| unexpected.command.r#type.to_string());
                warn!(
                    "Unexpected message type sent to consumer: {}. This is probably a bug!",
                    r#type
                );
            }
        }
        Ok(true)
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn process_payload(
        &mut self,
        message: CommandMessage,
        payload: Payload,
    ) -> Result<(), Error> {
        // A chunk is handed over as stored: a producer compresses a chunked message whole
        // before it splits it, so only the joined message can be decompressed
        // (`decompress_joined`).
        let chunk = payload.metadata.num_chunks_from_msg.is_some_and(|n| n > 1);
        let decompressed = if chunk {
            Ok(None)
        } else {
            decompress(&payload)
        };
        // An entry the client cannot decode is handed over as it is, with the reason.
        let payload = match decompressed {
            Ok(None) => payload,
            Ok(Some(data)) => Payload { data, ..payload },
            Err(error) => return self.send_undecodable(message, payload, error).await,
        };

        // The entry goes to the consumer as one item, its messages taken there in turn: a
        // batch is not split here and sent on a message at a time, which moved each message
        // (several hundred bytes) through this future and the channel, and woke the consumer
        // and this engine for each.
        let redelivery_count = message.redelivery_count.unwrap_or(0);
        let mut delivery = if payload.metadata.num_messages_in_batch.is_some() {
            match BatchedMessageIterator::new(message.message_id.clone(), payload) {
                // With batch-index acknowledgement on the broker, a redelivered entry carries
                // the indexes still to acknowledge in `ack_set` (set bits); the others were
                // acknowledged already and are not handed over again (as the Java client does).
                Ok(batched) => EntryDelivery::batch(batched, message.ack_set, redelivery_count),
                Err((error, payload)) => {
                    return self.send_undecodable(message, payload, error.into()).await
                }
            }
        } else {
            EntryDelivery::one(message.message_id, payload, redelivery_count, None)
        };
        let dead_letter_policy = match (message.redelivery_count, &self.dead_letter_policy) {
            (Some(redelivery_count), Some(dead_letter_policy))
                if redelivery_count as usize >= dead_letter_policy.max_redeliver_count =>
            {
                dead_letter_policy.clone()
            }
            _ => return self.hand_over(delivery).await,
        };
        while let Some((message_id, payload)) = delivery.next_message() {
            // Send message to Dead Letter Topic and ack message in original topic
            let Payload { data, metadata } = payload;
            let mut properties = metadata
                .properties
                .into_iter()
                .map(|p| (p.key, p.value))
                .collect::<HashMap<_, _>>();
            properties
                .entry(SYSTEM_PROPERTY_REAL_TOPIC.to_string())
                .or_insert_with(|| self.topic.clone());
            properties
                .entry(SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID.to_string())
                .or_insert_with(|| {
                    if let Some(batch_index) = message_id.batch_index {
                        format!(
                            "{}:{}:{}:{}",
                            message_id.ledger_id,
                            message_id.entry_id,
                            message_id.partition.unwrap_or(-1),
                            batch_index
                        )
                    } else {
                        format!(
                            "{}:{}:{}",
                            message_id.ledger_id,
                            message_id.entry_id,
                            message_id.partition.unwrap_or(-1)
                        )
                    }
                });
            let message = Message {
                payload: data,
                properties,
                partition_key: metadata.partition_key,
                partition_key_b64_encoded: metadata.partition_key_b64_encoded,
                ordering_key: metadata.ordering_key,
                event_time: metadata.event_time,
                ..Default::default()
            };
            self.client
                .send(&dead_letter_policy.dead_letter_topic, message)
                .await?
                .await
                .map_err(|e| {
                    error!("One shot cancelled {:?}", e);
                    Error::Custom("DLQ send error".to_string())
                })?;

            self.ack(message_id, false).await;
        }
        Ok(())
    }

    /// Hand over an entry the client cannot decode (unknown or unavailable compression,
    /// corrupt compressed data, a batch that does not parse) as one message with the entry's
    /// id and stored payload, and the reason in [`Message::decode_failure`]: the application
    /// decides what becomes of it (dead-letter it, acknowledge it, leave it), instead of the
    /// entry staying unacknowledged without anyone being told.
    ///
    /// [`Message::decode_failure`]: crate::consumer::Message::decode_failure
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn send_undecodable(
        &mut self,
        message: CommandMessage,
        payload: Payload,
        error: Error,
    ) -> Result<(), Error> {
        debug!(
            "Consumer {} cannot decode entry {:?}: {}",
            self.debug_format(),
            message.message_id,
            error
        );
        let redelivery_count = message.redelivery_count.unwrap_or(0);
        self.hand_over(EntryDelivery::one(
            message.message_id,
            payload,
            redelivery_count,
            Some(error.to_string()),
        ))
        .await
    }

    /// Put an entry into the consumer's queue once it has room. The ack timeout of its messages
    /// (if set) starts as the consumer takes each ([`EngineMessage::Received`]).
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn hand_over(&mut self, delivery: EntryDelivery) -> Result<(), Error> {
        futures::future::poll_fn(|cx| self.tx.poll_ready(cx))
            .await
            .and_then(|()| self.tx.start_send(Ok(delivery)))
            .map_err(|e| {
                error!("tx returned {:?}", e);
                Error::Custom("tx closed".to_string())
            })
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    async fn reconnect(&mut self) -> Result<(), Error> {
        debug!("reconnecting consumer for topic: {}", self.topic);

        // send CloseConsumer to server
        // remove our resolver from the Connection consumers BTreeMap,
        // stopping the current Message source
        if let Err(e) = self.connection.sender().close_consumer(self.id).await {
            error!(
                "could not close consumer {:?}({}) for topic {}: {:?}",
                self.name, self.id, self.topic, e
            );
        }
        // should have logged "rx terminated" by now

        let broker_address = self.client.lookup_topic(&self.topic).await?;

        let messages = retry_subscribe_consumer(
            &self.client,
            &mut self.connection,
            broker_address,
            &self.topic,
            &self.subscription,
            self.sub_type,
            self.id,
            &self.name,
            &self.options,
            self.batch_size,
        )
        .await?;

        self.remaining_messages = self.batch_size as i64;
        self.messages_rx = Some(messages);
        *self
            .shared_connection
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = self.connection.clone();

        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    fn debug_format(&self) -> String {
        format!(
            "[{id} - {subscription}{name}: {topic}]",
            id = self.id,
            subscription = &self.subscription,
            name = self
                .name
                .as_ref()
                .map(|s| format!("({s})"))
                .unwrap_or_default(),
            topic = &self.topic
        )
    }

    #[cfg(feature = "async-std")]
    async fn timeout<F: Future<Output = O>, O>(
        fut: F,
        dur: Duration,
    ) -> Result<O, async_std::future::TimeoutError> {
        use async_std::prelude::FutureExt;
        fut.timeout(dur).await
    }

    #[cfg(all(not(feature = "async-std"), feature = "tokio"))]
    async fn timeout<F: Future<Output = O>, O>(
        fut: F,
        dur: Duration,
    ) -> Result<O, tokio::time::error::Elapsed> {
        tokio::time::timeout_at(tokio::time::Instant::now() + dur, fut).await
    }
}

/// `ids` with each entry acknowledged as a whole once: the broker reads an ID without an
/// `ack_set` as its whole entry, so the other messages of a batched entry add nothing but
/// bytes. IDs with an `ack_set` (batch index acknowledgements) are kept as they are.
pub(super) fn once_per_entry(mut ids: Vec<MessageIdData>) -> Vec<MessageIdData> {
    let mut whole = HashSet::new();
    ids.retain(|id| {
        !id.ack_set.is_empty() || whole.insert((id.ledger_id, id.entry_id, id.partition))
    });
    ids
}

/// Whether the broker's `ack_set` (empty: none sent) marks batch index `index` acknowledged: a
/// cleared bit, or a bit past the words sent, as Java's `BitSet.valueOf` reads it.
pub(super) fn acknowledged_in(ack_set: &[i64], index: Option<i32>) -> bool {
    match (ack_set.is_empty(), index) {
        (false, Some(index)) if index >= 0 => {
            let (word, bit) = (index as usize / 64, index as usize % 64);
            ack_set.get(word).is_none_or(|w| (w >> bit) & 1 == 0)
        }
        _ => false,
    }
}

impl<Exe: Executor> std::ops::Drop for ConsumerEngine<Exe> {
    fn drop(&mut self) {
        let conn = self.connection.clone();
        let id = self.id;
        let name = self.name.clone();
        let topic = self.topic.clone();
        let _ = self.client.executor.spawn(Box::pin(async move {
            if let Err(e) = conn.sender().close_consumer(id).await {
                error!(
                    "could not close consumer {:?}({}) for topic {}: {:?}",
                    name, id, topic, e
                );
            }
        }));
    }
}

/// The payload of a chunked message, joined from its chunks, decompressed as `metadata` (any
/// of its chunks') says: chunks are handed over as stored, since a producer compresses a
/// chunked message before it splits it. On error, the bytes come back with it.
pub fn decompress_joined(metadata: &Metadata, data: Vec<u8>) -> Result<Vec<u8>, (Error, Vec<u8>)> {
    let payload = Payload {
        metadata: metadata.clone(),
        data,
    };
    match decompress(&payload) {
        Ok(Some(decompressed)) => Ok(decompressed),
        Ok(None) => Ok(payload.data),
        Err(error) => Err((error, payload.data)),
    }
}

/// The entry's payload decompressed, `None` if it is not compressed.
#[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
fn decompress(payload: &Payload) -> Result<Option<Vec<u8>>, Error> {
    let compression = match payload.metadata.compression {
        None => proto::CompressionType::None,
        Some(compression) => proto::CompressionType::try_from(compression).map_err(|err| {
            error!("unknown compression type: {}", compression);
            Error::Consumer(ConsumerError::Io(std::io::Error::other(format!(
                "unknown compression type {compression}: {err}"
            ))))
        })?,
    };

    match compression {
        proto::CompressionType::None => Ok(None),
        proto::CompressionType::Lz4 => {
            #[cfg(not(feature = "lz4"))]
            {
                return Err(Error::Consumer(ConsumerError::Io(std::io::Error::other(
                    "got a LZ4 compressed message but 'lz4' cargo feature is deactivated",
                ))));
            }

            #[cfg(feature = "lz4")]
            {
                let decompressed_payload = lz4::block::decompress(
                    &payload.data[..],
                    payload.metadata.uncompressed_size.map(|i| i as i32),
                )
                .map_err(ConsumerError::Io)?;

                Ok(Some(decompressed_payload))
            }
        }
        proto::CompressionType::Zlib => {
            #[cfg(not(feature = "flate2"))]
            {
                return Err(Error::Consumer(ConsumerError::Io(std::io::Error::other(
                    "got a zlib compressed message but 'flate2' cargo feature is deactivated",
                ))));
            }

            #[cfg(feature = "flate2")]
            {
                use std::io::Read;

                use flate2::read::ZlibDecoder;

                let mut d = ZlibDecoder::new(&payload.data[..]);
                let mut decompressed_payload = Vec::new();
                d.read_to_end(&mut decompressed_payload)
                    .map_err(ConsumerError::Io)?;

                Ok(Some(decompressed_payload))
            }
        }
        proto::CompressionType::Zstd => {
            #[cfg(not(feature = "zstd"))]
            {
                return Err(Error::Consumer(ConsumerError::Io(std::io::Error::other(
                    "got a zstd compressed message but 'zstd' cargo feature is deactivated",
                ))));
            }

            #[cfg(feature = "zstd")]
            {
                let decompressed_payload =
                    zstd::decode_all(&payload.data[..]).map_err(ConsumerError::Io)?;

                Ok(Some(decompressed_payload))
            }
        }
        proto::CompressionType::Snappy => {
            #[cfg(not(feature = "snap"))]
            {
                return Err(Error::Consumer(ConsumerError::Io(std::io::Error::other(
                    "got a Snappy compressed message but 'snap' cargo feature is deactivated",
                ))));
            }

            #[cfg(feature = "snap")]
            {
                // Snappy's raw block format, as the Java and C++ clients write it.
                let decompressed_payload = snap::raw::Decoder::new()
                    .decompress_vec(&payload.data[..])
                    .map_err(|e| ConsumerError::Io(std::io::Error::other(e)))?;

                Ok(Some(decompressed_payload))
            }
        }
    }
}

#[cfg(test)]
mod once_per_entry_tests {
    use super::*;

    fn id(entry: u64, index: Option<i32>, ack_set: Vec<i64>) -> MessageIdData {
        MessageIdData {
            ledger_id: 7,
            entry_id: entry,
            batch_index: index,
            ack_set,
            ..Default::default()
        }
    }

    #[test]
    fn a_batched_entry_is_acknowledged_once() {
        let ids = (0..4).map(|i| id(1, Some(i), vec![])).collect();
        assert_eq!(once_per_entry(ids), vec![id(1, Some(0), vec![])]);
    }

    #[test]
    fn entries_and_index_acknowledgements_are_kept() {
        let ids = vec![
            id(1, None, vec![]),
            id(2, Some(0), vec![-2]),
            id(2, Some(1), vec![-4]),
            id(3, Some(0), vec![]),
            id(1, None, vec![]),
        ];
        assert_eq!(
            once_per_entry(ids),
            vec![
                id(1, None, vec![]),
                id(2, Some(0), vec![-2]),
                id(2, Some(1), vec![-4]),
                id(3, Some(0), vec![]),
            ]
        );
    }
}
