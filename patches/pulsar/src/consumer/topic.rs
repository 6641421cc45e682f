use std::{
    marker::PhantomData,
    pin::Pin,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    task::{Context, Poll},
    time::Duration,
};

use chrono::{DateTime, Utc};
use futures::{
    channel::{mpsc, oneshot},
    FutureExt, SinkExt, Stream, StreamExt,
};

use crate::{
    connection::Connection,
    consumer::{
        config::ConsumerConfig,
        data::{
            DeadLetterPolicy, EngineMessage, EntryDelivery, MessageData, MessageIdDataReceiver,
        },
        engine::{once_per_entry, ConsumerEngine},
        message::Message,
    },
    error::{ConnectionError, ConsumerError},
    message::proto::{MessageIdData, Schema},
    proto::CommandConsumerStatsResponse,
    retry_op::retry_subscribe_consumer,
    transaction::Transaction,
    BrokerAddress, DeserializeMessage, Error, Executor, Payload, Pulsar,
};

// this is entirely public for use in reader.rs
pub struct TopicConsumer<T: DeserializeMessage, Exe: Executor> {
    pub(crate) consumer_id: u64,
    pub(crate) config: ConsumerConfig,
    topic: String,
    messages: Pin<Box<MessageIdDataReceiver>>,
    /// The entry whose messages are being handed over.
    current: Option<EntryDelivery>,
    engine_tx: mpsc::UnboundedSender<EngineMessage<Exe>>,
    /// The connection the consumer is on (the engine replaces it when it reconnects).
    connection: Arc<Mutex<Arc<Connection<Exe>>>>,
    data_type: PhantomData<fn(Payload) -> T::Output>,
    pub(crate) dead_letter_policy: Option<DeadLetterPolicy>,
    pub(super) last_message_received: Option<DateTime<Utc>>,
    pub(super) messages_received: u64,
}

impl<T: DeserializeMessage, Exe: Executor> TopicConsumer<T, Exe> {
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub(super) async fn new(
        client: Pulsar<Exe>,
        topic: String,
        addr: BrokerAddress,
        config: ConsumerConfig,
    ) -> Result<TopicConsumer<T, Exe>, Error> {
        static CONSUMER_ID_GENERATOR: AtomicU64 = AtomicU64::new(0);

        let ConsumerConfig {
            subscription,
            sub_type,
            batch_size,
            consumer_name,
            consumer_id,
            unacked_message_redelivery_delay,
            options,
            dead_letter_policy,
        } = config.clone();
        let consumer_id =
            consumer_id.unwrap_or_else(|| CONSUMER_ID_GENERATOR.fetch_add(1, Ordering::SeqCst));
        let batch_size = batch_size.unwrap_or(1000);
        let mut connection = client.manager.get_connection(&addr).await?;

        let messages = retry_subscribe_consumer(
            &client,
            &mut connection,
            addr,
            &topic,
            &subscription,
            sub_type,
            consumer_id,
            &consumer_name,
            &options,
            batch_size,
        )
        .await?;

        let (engine_tx, engine_rx) = mpsc::unbounded();

        if unacked_message_redelivery_delay.is_some() {
            let mut redelivery_tx = engine_tx.clone();
            let mut interval = client.executor.interval(Duration::from_millis(500));
            let res = client.executor.spawn(Box::pin(async move {
                while interval.next().await.is_some() {
                    if redelivery_tx
                        .send(EngineMessage::UnackedRedelivery)
                        .await
                        .is_err()
                    {
                        // Consumer shut down - stop ticker
                        break;
                    }
                }
            }));
            if res.is_err() {
                return Err(Error::Executor);
            }
        }
        let receiver_queue_size = options.receiver_queue_size.unwrap_or(1000);
        let (tx, rx) = mpsc::channel(receiver_queue_size as usize);
        let mut c = ConsumerEngine::new(
            client.clone(),
            connection.clone(),
            topic.clone(),
            subscription.clone(),
            sub_type,
            consumer_id,
            consumer_name,
            tx,
            messages,
            engine_rx,
            batch_size,
            unacked_message_redelivery_delay,
            dead_letter_policy.clone(),
            options.clone(),
        );
        let shared_connection = c.shared_connection();
        let engine_task = client.executor.spawn(Box::pin(async move {
            c.engine()
                .map(|res| {
                    debug!("consumer engine stopped: {:?}", res);
                })
                .await;
        }));
        if engine_task.is_err() {
            return Err(Error::Executor);
        }

        Ok(TopicConsumer {
            consumer_id,
            config,
            topic,
            messages: Box::pin(rx),
            current: None,
            engine_tx,
            connection: shared_connection,
            data_type: PhantomData,
            dead_letter_policy,
            last_message_received: None,
            messages_received: 0,
        })
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub fn topic(&self) -> String {
        self.topic.clone()
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn connection(&mut self) -> Result<Arc<Connection<Exe>>, Error> {
        let (resolver, response) = oneshot::channel();
        self.engine_tx
            .send(EngineMessage::GetConnection(resolver))
            .await
            .map_err(|_| ConsumerError::Connection(ConnectionError::Disconnected))?;

        response.await.map_err(|oneshot::Canceled| {
            error!("the consumer engine dropped the request");
            ConnectionError::Disconnected.into()
        })
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn get_stats(&mut self) -> Result<CommandConsumerStatsResponse, Error> {
        let consumer_id = self.consumer_id;
        let conn = self.connection().await?;
        let consumer_stats_response = conn.sender().get_consumer_stats(consumer_id).await?;
        Ok(consumer_stats_response)
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn check_connection(&mut self) -> Result<(), Error> {
        let conn = self.connection().await?;
        info!("check connection for id {}", conn.id());
        conn.sender().send_ping().await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn ack(&mut self, msg: &Message<T>) -> Result<(), ConsumerError> {
        self.engine_tx
            .send(EngineMessage::Ack(msg.message_id().clone(), false))
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn ack_with_id(&mut self, msg_id: MessageIdData) -> Result<(), ConsumerError> {
        self.engine_tx
            .send(EngineMessage::Ack(msg_id, false))
            .await?;
        Ok(())
    }

    /// acknowledges the messages with the given IDs in one command to the broker
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn ack_many_with_id(
        &mut self,
        msg_ids: Vec<MessageIdData>,
    ) -> Result<(), ConsumerError> {
        if msg_ids.is_empty() {
            return Ok(());
        }
        self.engine_tx.send(EngineMessage::AckMany(msg_ids)).await?;
        Ok(())
    }

    /// acknowledges the messages with the given IDs in a transaction (PIP-31), in one command
    /// to the broker, and waits for the broker's answer to it
    ///
    /// The first acknowledgement on this topic (partition) and subscription in the
    /// transaction registers them with its coordinator first (`ADD_SUBSCRIPTION_TO_TXN`). The
    /// acknowledgements take effect when the transaction commits; if it aborts, the messages
    /// can be received again. An ID without an `ack_set` acknowledges its whole entry, as
    /// with [`ack_many_with_id`](Self::ack_many_with_id); give the IDs of a batched entry
    /// its `batch_size` (its number of messages): without it the broker takes the entry off
    /// the consumer's count of unacknowledged messages (`maxUnackedMessagesPerConsumer`) as
    /// one message. The messages' ack timeouts end once the broker took the
    /// acknowledgement, not as it is sent.
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn ack_many_with_id_in(
        &mut self,
        msg_ids: Vec<MessageIdData>,
        txn: &Transaction<Exe>,
    ) -> Result<(), ConsumerError> {
        self.ack_many_with_id_in_detached(msg_ids, txn).await
    }

    /// [`ack_many_with_id_in`](Self::ack_many_with_id_in) as a future that borrows nothing
    /// of the consumer: acknowledgements in several transactions can be under way while the
    /// consumer goes on receiving. The transaction counts the acknowledgement from this call
    /// on, so a commit made after it waits for its answer even before the future is polled.
    pub fn ack_many_with_id_in_detached(
        &self,
        msg_ids: Vec<MessageIdData>,
        txn: &Transaction<Exe>,
    ) -> Pin<Box<dyn std::future::Future<Output = Result<(), ConsumerError>> + Send + 'static>>
    {
        if msg_ids.is_empty() {
            return Box::pin(async { Ok(()) });
        }
        // Counted from here: if anything below fails, or this future is dropped before the
        // broker answered, the transaction fails (commit aborts it).
        let op = txn.begin_op();
        let engine_tx = self.engine_tx.clone();
        let connection = self.connection.clone();
        let consumer_id = self.consumer_id;
        let topic = self.topic.clone();
        let subscription = self.config.subscription.clone();
        let txn = txn.clone();
        Box::pin(async move {
            let op = op?;
            txn.register_subscription(&topic, &subscription).await?;
            // Sent on the consumer's connection, not through its engine: the engine waits for
            // room in the consumer's queue before it takes its next command, and an
            // application that takes no more messages until its commits are answered would
            // wait for ever.
            let connection = connection.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let txn_id = txn.id();
            let answered = async move {
                let sent = once_per_entry(msg_ids.clone());
                let response = (connection.sender())
                    .send_ack_in_txn(consumer_id, sent, txn_id)
                    .await?;
                response.await?;
                // The broker took it: the messages' ack timeouts end.
                let _ = engine_tx.unbounded_send(EngineMessage::AckedInTxn(msg_ids));
                Ok(())
            };
            txn.track_ack(op, answered).await
        })
    }

    /// acknowledges a message in a transaction (its whole entry, as [`ack`](Self::ack)
    /// does), as [`ack_many_with_id_in`](Self::ack_many_with_id_in) does
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn ack_with_txn(
        &mut self,
        msg: &Message<T>,
        txn: &Transaction<Exe>,
    ) -> Result<(), ConsumerError> {
        self.ack_many_with_id_in(vec![id_with_batch_size(msg)], txn)
            .await
    }

    /// starts the ack timeout of the messages with the given IDs again, from now: for an
    /// application that received them earlier but hands them on to its own code only now
    /// (a batch it gathered). Messages no longer awaiting their ack are left alone; without
    /// an ack timeout this does nothing.
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub fn restart_ack_timeout(&self, msg_ids: Vec<MessageIdData>) -> Result<(), ConsumerError> {
        if msg_ids.is_empty() || self.config.unacked_message_redelivery_delay.is_none() {
            return Ok(());
        }
        self.engine_tx
            .unbounded_send(EngineMessage::Restart(msg_ids))
            .map_err(|e| e.into_send_error())?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub(crate) fn acker(&self) -> mpsc::UnboundedSender<EngineMessage<Exe>> {
        self.engine_tx.clone()
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn cumulative_ack(&mut self, msg: &Message<T>) -> Result<(), ConsumerError> {
        self.engine_tx
            .send(EngineMessage::Ack(msg.message_id().clone(), true))
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn cumulative_ack_with_id(
        &mut self,
        msg_id: MessageIdData,
    ) -> Result<(), ConsumerError> {
        self.engine_tx
            .send(EngineMessage::Ack(msg_id, true))
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn nack(&mut self, msg: &Message<T>) -> Result<(), ConsumerError> {
        self.engine_tx
            .send(EngineMessage::Nack(msg.message_id().clone()))
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn nack_with_id(&mut self, msg_id: MessageIdData) -> Result<(), ConsumerError> {
        self.engine_tx.send(EngineMessage::Nack(msg_id)).await?;
        Ok(())
    }

    /// asks the broker to redeliver the messages with the given IDs, in one command
    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn nack_many_with_id(
        &mut self,
        msg_ids: Vec<MessageIdData>,
    ) -> Result<(), ConsumerError> {
        if msg_ids.is_empty() {
            return Ok(());
        }
        self.engine_tx
            .send(EngineMessage::NackMany(msg_ids))
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn seek(
        &mut self,
        message_id: Option<MessageIdData>,
        timestamp: Option<u64>,
    ) -> Result<(), Error> {
        let consumer_id = self.consumer_id;
        self.connection()
            .await?
            .sender()
            .seek(consumer_id, message_id, timestamp)
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn unsubscribe(&mut self) -> Result<(), Error> {
        let consumer_id = self.consumer_id;
        self.connection()
            .await?
            .sender()
            .unsubscribe(consumer_id)
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn close(&mut self) -> Result<(), Error> {
        let consumer_id = self.consumer_id;
        self.connection()
            .await?
            .sender()
            .close_consumer(consumer_id)
            .await?;
        Ok(())
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub async fn get_last_message_id(&mut self) -> Result<MessageIdData, Error> {
        let consumer_id = self.consumer_id;
        let conn = self.connection().await?;
        let get_last_message_id_response = conn.sender().get_last_message_id(consumer_id).await?;
        Ok(get_last_message_id_response.last_message_id)
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub fn last_message_received(&self) -> Option<DateTime<Utc>> {
        self.last_message_received
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub fn messages_received(&self) -> u64 {
        self.messages_received
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    fn create_message(&self, message_id: MessageIdData, payload: Payload) -> Message<T> {
        let message_id = MessageData {
            id: message_id,
            batch_size: payload.metadata.num_messages_in_batch,
        };
        Message::new(&self.topic, message_id, payload)
    }

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    pub(crate) async fn get_schema(
        &mut self,
        version: Option<Vec<u8>>,
    ) -> Result<Option<Schema>, Error> {
        let conn = self.connection().await?;
        let schema_response = conn.sender().get_schema(&self.topic, version).await?;
        Ok(schema_response.schema)
    }
}

/// The message's id with its entry's batch size, which a transactional acknowledgement of a
/// batched entry gives the broker.
pub(crate) fn id_with_batch_size<T>(msg: &Message<T>) -> MessageIdData {
    MessageIdData {
        batch_size: msg.message_id.id.batch_size.or(msg.message_id.batch_size),
        ..msg.message_id.id.clone()
    }
}

impl<T: DeserializeMessage, Exe: Executor> Stream for TopicConsumer<T, Exe> {
    type Item = Result<Message<T>, Error>;

    #[cfg_attr(feature = "telemetry", tracing::instrument(skip_all))]
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(delivery) = self.current.as_mut() {
                if let Some((id, payload)) = delivery.next_message() {
                    let redelivery_count = delivery.redelivery_count;
                    let decode_failure = delivery.decode_failure.take();
                    self.messages_received += 1;
                    if self.config.unacked_message_redelivery_delay.is_some() {
                        // The engine is gone only when the consumer is closing.
                        let _ = self
                            .engine_tx
                            .unbounded_send(EngineMessage::Received(id.clone()));
                    }
                    let mut message = self.create_message(id, payload);
                    message.redelivery_count = redelivery_count;
                    message.decode_failure = decode_failure;
                    return Poll::Ready(Some(Ok(message)));
                }
                self.current = None;
            }
            match self.messages.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Ok(delivery))) => {
                    self.last_message_received = Some(Utc::now());
                    self.current = Some(delivery);
                }
                Poll::Ready(Some(Err(e))) => {
                    error!("we are using in the single-consumer and we got an error, {e}");
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}
