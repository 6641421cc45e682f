//! The in-process Pulsar: the deterministic model of `rstream-pulsar-model`, shared behind a
//! lock, with wakers for the drivers and one timer task for the client-side ack timeouts.
//!
//! It also counts what is in flight (deliveries queued for a consumer or held by a driver
//! without a settlement call yet), which is how `TestApp` knows that "nothing more can happen
//! until time moves".

mod consumer;
mod replay;
mod transactions;
mod transport;

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use ruststream::app::BoxError;
use ruststream::message::{IntoMessage, Message};
use ruststream::runtime::{Runtime, Sleep};
use ruststream::MessageId;
use ruststream::{Instant, PublishError};
use ruststream_pulsar_model::{
    choose_partition, split_into_chunks, Cluster, ConsumerId, ConsumerOptions, HashingScheme,
    ModelError, OutgoingMessage, Retention, RoundRobin, TopicName, TopicNameError, TopicsConsumer,
};

pub(crate) use consumer::InProcessConsumer;
pub(crate) use replay::replay;
pub(crate) use transport::InProcessTransport;

use crate::registration::CheckedSubscription;
use ruststream_driver::Mount;

/// Make `handler` runnable on the in-process Pulsar's consumers.
pub(crate) fn add_driver<S: Send + Sync + 'static, H: ruststream::Handler<S>>(
    mount: &mut Mount<S>,
    handler: &Arc<H>,
) {
    mount.add::<crate::chunked::Chunked<InProcessConsumer>, H>(handler);
}

/// An in-process Pulsar cluster. Clones share it.
#[derive(Clone, Default)]
pub struct InProcessPulsar {
    shared: Arc<Mutex<Inner>>,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) cluster: Cluster,
    /// Attached consumers and the waker of the driver waiting on each
    /// ([`Inner::park`], [`Inner::detach`]).
    consumers: BTreeMap<ConsumerId, Option<Waker>>,
    /// How many of `consumers` hold a waker: a busy driver never waits, and then a change has
    /// no one to wake.
    parked: usize,
    /// Deliveries taken by a driver and not yet settled by a call or released.
    pub(crate) held: usize,
    idle_waiters: Vec<Waker>,
    /// The sleep for the model's next deadline, re-armed under the lock by every change, so
    /// that a virtual clock sees the deadline as soon as it exists. A fired sleep stays here
    /// until the timeouts it released were handled.
    timer: Option<(Instant, Sleep)>,
    timer_waker: Option<Waker>,
    timer_stopped: bool,
    /// How many started brokers use the timer (several apps can share one in-process Pulsar).
    timer_users: usize,
    /// The clock of the runtime the broker started on.
    runtime: Option<Arc<dyn Runtime>>,
    /// Where the next keyless message of each partitioned topic goes.
    round_robin: BTreeMap<TopicName, RoundRobin>,
    /// The drivers of pattern subscriptions, to wake when a topic appears (one with no topic
    /// yet has no consumer to be woken through), and the topic count they were woken at.
    topic_watchers: Vec<Waker>,
    topics_seen: u64,
    /// Each pattern consumer's [`Cluster::topics_created`] when it last looked for new topics:
    /// one that has not looked since a topic appeared has work in flight (it may have to wait
    /// for a refresh), so that a virtual clock does not move past that moment before it has.
    patterns: BTreeMap<u64, u64>,
    last_pattern: u64,
}

impl Inner {
    pub(crate) fn in_flight(&self) -> usize {
        // Every consumer of the cluster is one of ours.
        self.held + self.cluster.queued() + self.patterns_behind()
    }

    /// Pattern consumers that have not looked for new topics since the last one appeared.
    fn patterns_behind(&self) -> usize {
        if self.patterns.is_empty() {
            return 0;
        }
        let created = self.cluster.topics_created();
        self.patterns
            .values()
            .filter(|&&seen| seen != created)
            .count()
    }

    /// A pattern consumer joined, having listed the topics there are now; its key.
    pub(crate) fn add_pattern(&mut self) -> u64 {
        self.last_pattern += 1;
        let created = self.cluster.topics_created();
        self.patterns.insert(self.last_pattern, created);
        self.last_pattern
    }

    /// Pattern consumer `key` looked for new topics (and armed its refresh if one is waiting).
    pub(crate) fn pattern_looked(&mut self, key: u64) {
        let created = self.cluster.topics_created();
        if let Some(seen) = self.patterns.get_mut(&key) {
            if *seen != created {
                *seen = created;
                self.wake_if_idle();
            }
        }
    }

    /// Pattern consumer `key` left.
    pub(crate) fn remove_pattern(&mut self, key: u64) {
        if self.patterns.remove(&key).is_some() {
            self.wake_if_idle();
        }
    }

    /// After any change: wake every driver that may have something to receive, the timer task
    /// (the next deadline may have moved), and idle waiters if nothing is in flight.
    pub(crate) fn notify(&mut self) {
        if self.parked > 0 {
            self.parked = 0;
            for waker in self.consumers.values_mut() {
                if let Some(w) = waker.take() {
                    w.wake();
                }
            }
        }
        let created = self.cluster.topics_created();
        if created != self.topics_seen {
            self.topics_seen = created;
            for w in self.topic_watchers.drain(..) {
                w.wake();
            }
        }
        self.arm_timer();
        self.wake_if_idle();
    }

    /// The driver of a pattern subscription waits: wake it when a topic appears.
    pub(crate) fn watch_topics(&mut self, waker: &Waker) {
        if !self.topic_watchers.iter().any(|w| w.will_wake(waker)) {
            self.topic_watchers.push(waker.clone());
        }
    }

    /// Wake whoever waits for nothing to be in flight, if nothing is: all a release can
    /// change (it moves no message and no deadline).
    pub(crate) fn wake_if_idle(&mut self) {
        if !self.idle_waiters.is_empty() && self.in_flight() == 0 {
            for w in self.idle_waiters.drain(..) {
                w.wake();
            }
        }
    }

    /// The driver of `consumer` waits for a delivery: wake it at the next change.
    pub(crate) fn park(&mut self, consumer: ConsumerId, waker: &Waker) {
        if let Some(slot) = self.consumers.get_mut(&consumer) {
            if slot.replace(waker.clone()).is_none() {
                self.parked += 1;
            }
        }
    }

    /// `consumer` joined: its driver is woken by changes from now on.
    pub(crate) fn attach(&mut self, consumer: ConsumerId) {
        self.consumers.insert(consumer, None);
    }

    /// `consumer` left.
    pub(crate) fn detach(&mut self, consumer: ConsumerId) {
        if let Some(Some(_)) = self.consumers.remove(&consumer) {
            self.parked -= 1;
        }
    }

    fn arm_timer(&mut self) {
        let Some(runtime) = &self.runtime else { return };
        let next = if self.timer_stopped {
            None
        } else {
            self.cluster.next_deadline()
        };
        if self.timer.as_ref().map(|(at, _)| *at) != next {
            match (&mut self.timer, next) {
                // Moved in place: no allocation per change of deadline.
                (Some((at, sleep)), Some(next)) => {
                    *at = next;
                    runtime.reset(sleep, next);
                }
                (timer, next) => *timer = next.map(|at| (at, runtime.sleep_until(at))),
            }
            if let Some(w) = self.timer_waker.take() {
                w.wake();
            }
        }
    }

    pub(crate) fn now(&self) -> Instant {
        self.runtime.as_ref().map_or(Instant::ZERO, |rt| rt.now())
    }

    /// The partition of `topic` a message with `key` goes to, as a producer routing with
    /// `hashing` picks it; `None` when `topic` is not partitioned.
    fn route(
        &mut self,
        topic: &TopicName,
        key: Option<&str>,
        hashing: HashingScheme,
    ) -> Option<TopicName> {
        let partitions = self.cluster.partition_names(topic)?;
        let count = partitions.len() as u32;
        let round_robin = self.round_robin.entry(topic.clone()).or_default();
        let index = choose_partition(hashing, key, count, round_robin);
        Some(partitions[index as usize].clone())
    }
}

impl std::fmt::Debug for InProcessPulsar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("InProcessPulsar")
            .field("consumers", &inner.consumers.len())
            .field("in_flight", &inner.in_flight())
            .finish()
    }
}

impl InProcessPulsar {
    /// An empty cluster that keeps every message ever published ([`Retention::KeepAll`]), so
    /// that a test reads back what reached a topic ([`InProcessPulsar::topic_messages`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cluster whose topics keep what `retention` says.
    /// [`Retention::until_acknowledged`] frees a message once every subscription of its topic
    /// acknowledged it: what `run --embedded` uses (a broker started in process without a
    /// cluster of its own gets one), so that a long run holds flat memory;
    /// [`InProcessPulsar::topic_messages`] then lists only what is still held.
    pub fn with_retention(retention: Retention) -> Self {
        InProcessPulsar {
            shared: Arc::new(Mutex::new(Inner {
                cluster: Cluster::with_retention(retention),
                ..Inner::default()
            })),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the model as it was between two calls; keep
        // going rather than poisoning every later test assertion.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publish `message` (a [`Message`], or `&value` of an `#[outgoing]` type): payload,
    /// properties, key, event time, delayed delivery, to its topic (short names in
    /// `public/default`); its id. A delivery time is on the app's clock: `deliver_at` counts
    /// from when it started. On a partitioned topic the message goes to the partition its key
    /// picks with the Java client's default hash ([`HashingScheme::JavaString`]), or to the
    /// next in turn without a key. It is stored at the call: nothing waits for handlers.
    pub fn publish(&self, message: impl IntoMessage) -> Result<MessageId, PublishError> {
        let message = message.into_message()?;
        let topic = TopicName::parse(&message.topic).map_err(PublishError::invalid_topic)?;
        self.store(&topic, message, HashingScheme::default())
            .map(|id| crate::message_id::of_model(&id))
    }

    /// Publish `message` as a chunking producer of another client does (PIP-37): a payload
    /// larger than `chunk_size` bytes is stored as chunks of at most that size, each a message
    /// of its own with the chunk metadata, which consumers receive one by one and ruststream
    /// joins before the handler; the last chunk's id. A payload within `chunk_size` is stored
    /// whole, as [`InProcessPulsar::publish`] does.
    pub fn publish_chunked(
        &self,
        message: impl IntoMessage,
        chunk_size: usize,
    ) -> Result<MessageId, PublishError> {
        self.publish_chunks(message, chunk_size, usize::MAX)
    }

    /// Store only the first `count` chunks of `message` split as
    /// [`InProcessPulsar::publish_chunked`] does: a chunking producer that stopped in the
    /// middle of a message, whose chunks can never be joined; the last stored chunk's id.
    pub fn publish_first_chunks(
        &self,
        message: impl IntoMessage,
        chunk_size: usize,
        count: usize,
    ) -> Result<MessageId, PublishError> {
        self.publish_chunks(message, chunk_size, count.max(1))
    }

    /// Store the first `count` chunks of `message` with the default hashing; the last stored
    /// chunk's id.
    fn publish_chunks(
        &self,
        message: impl IntoMessage,
        chunk_size: usize,
        count: usize,
    ) -> Result<MessageId, PublishError> {
        let message = message.into_message()?;
        let topic = TopicName::parse(&message.topic).map_err(PublishError::invalid_topic)?;
        self.store_chunked(&topic, message, HashingScheme::default(), chunk_size, count)
            .map(|id| crate::message_id::of_model(&id))
    }

    /// Publish `message` as one no client can read: as a producer writes it with a
    /// compression the client cannot undo, or with corrupt bytes. Each delivery comes with
    /// `reason`, as the Pulsar client hands over an entry it could not read, so the handler is
    /// never called: the message goes to the dead-letter topic with its bytes where one is
    /// declared, and is otherwise left unacknowledged with an ERROR
    /// (`Rejection::Unreadable`). What a test of that path publishes; its id.
    pub fn publish_unreadable(
        &self,
        message: impl IntoMessage,
        reason: impl Into<String>,
    ) -> Result<MessageId, PublishError> {
        let message = message.into_message()?;
        let topic = TopicName::parse(&message.topic).map_err(PublishError::invalid_topic)?;
        self.store_as(
            &topic,
            message,
            HashingScheme::default(),
            Some(reason.into()),
        )
        .map(|id| crate::message_id::of_model(&id))
    }

    /// Publish `messages`, all to one topic, as one batch: one entry, each message with its
    /// batch index, as a batching producer writes them (on a partitioned topic, one entry per
    /// partition they go to); their ids.
    pub fn publish_batch<M: IntoMessage>(
        &self,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<Vec<MessageId>, PublishError> {
        let messages = messages
            .into_iter()
            .map(IntoMessage::into_message)
            .collect::<Result<Vec<_>, _>>()?;
        let Some(topic) = ruststream::message::batch_topic(&messages)? else {
            return Ok(Vec::new());
        };
        let topic = TopicName::parse(topic).map_err(PublishError::invalid_topic)?;
        self.publish_batch_to(&topic, messages, HashingScheme::default())
    }

    /// Create `topic` (short or fully qualified) as a partitioned topic of `partitions`
    /// partitions, as Pulsar's admin API does: handlers mounted on its name read every
    /// partition, and publishing to its name routes each message to one of them. Refused where
    /// a topic of that name exists already.
    pub fn create_partitioned_topic(&self, topic: &str, partitions: u32) -> Result<(), BoxError> {
        let topic = TopicName::parse(topic)?;
        let mut inner = self.lock();
        let now = inner.now();
        inner
            .cluster
            .create_partitioned_topic(&topic, partitions, now)?;
        inner.notify();
        Ok(())
    }

    /// Publish to a topic whose name is resolved already (a partitioned topic's name routes
    /// to one of its partitions, keyed messages with `hashing`); the model's id, not printed.
    #[inline(always)]
    pub(crate) fn store(
        &self,
        topic: &TopicName,
        message: Message,
        hashing: HashingScheme,
    ) -> Result<ruststream_pulsar_model::MessageId, PublishError> {
        self.store_as(topic, message, hashing, None)
    }

    /// [`Self::store`] in transaction `txn`: stored now, visible to consumers once it commits.
    pub(crate) fn store_in(
        &self,
        txn: ruststream_pulsar_model::TxnId,
        topic: &TopicName,
        message: Message,
        hashing: HashingScheme,
    ) -> Result<ruststream_pulsar_model::MessageId, PublishError> {
        let mut inner = self.lock();
        let now = inner.now();
        let partition = inner.route(topic, message.key.as_deref(), hashing);
        let topic = partition.as_ref().unwrap_or(topic);
        let stored = outgoing(message, now);
        let id = inner
            .cluster
            .publish_in(txn, topic, stored, now)
            .map_err(|e| refused(topic, e))?;
        inner.notify();
        drop(inner);
        Ok(id)
    }

    /// [`Self::store`], for a message a client cannot read when `unreadable` says why.
    fn store_as(
        &self,
        topic: &TopicName,
        message: Message,
        hashing: HashingScheme,
        unreadable: Option<String>,
    ) -> Result<ruststream_pulsar_model::MessageId, PublishError> {
        let mut inner = self.lock();
        let now = inner.now();
        let partition = inner.route(topic, message.key.as_deref(), hashing);
        let topic = partition.as_ref().unwrap_or(topic);
        let mut stored = outgoing(message, now);
        stored.unreadable = unreadable;
        let id = inner
            .cluster
            .publish(topic, stored, now)
            .map_err(|e| refused(topic, e))?;
        inner.notify();
        drop(inner);
        Ok(id)
    }

    /// [`InProcessPulsar::store`] as chunks of at most `chunk_size` bytes (the first `count` of
    /// them), all to the partition the message's key picks; the last stored chunk's id.
    pub(crate) fn store_chunked(
        &self,
        topic: &TopicName,
        message: Message,
        hashing: HashingScheme,
        chunk_size: usize,
        count: usize,
    ) -> Result<ruststream_pulsar_model::MessageId, PublishError> {
        let mut inner = self.lock();
        let now = inner.now();
        let partition = inner.route(topic, message.key.as_deref(), hashing);
        let topic = partition.as_ref().unwrap_or(topic);
        let uuid = crate::chunked::next_uuid();
        let mut last = None;
        for chunk in split_into_chunks(outgoing(message, now), chunk_size, &uuid)
            .into_iter()
            .take(count)
        {
            last = Some(
                inner
                    .cluster
                    .publish(topic, chunk, now)
                    .map_err(|e| PublishError::broker(topic.to_string(), e))?,
            );
        }
        inner.notify();
        drop(inner);
        Ok(last.expect("a message makes at least one chunk"))
    }

    /// Publish a batch to a topic whose name is resolved already. On a partitioned topic the
    /// records are split by partition (keyed ones by their key with `hashing`, keyless ones
    /// all to the next partition in turn), one batch each; the ids come in the records' order.
    pub(crate) fn publish_batch_to(
        &self,
        topic: &TopicName,
        records: Vec<Message>,
        hashing: HashingScheme,
    ) -> Result<Vec<MessageId>, PublishError> {
        let mut inner = self.lock();
        let now = inner.now();
        if inner.cluster.partition_names(topic).is_none() {
            let messages = records.into_iter().map(|r| outgoing(r, now)).collect();
            let ids = inner
                .cluster
                .publish_batch(topic, messages, now)
                .map_err(|e| refused(topic, e))?;
            inner.notify();
            return Ok(ids.iter().map(crate::message_id::of_model).collect());
        }
        // One turn of the round-robin for the batch's keyless records, as a batching producer
        // sends a batch to one partition.
        let keyless = inner.route(topic, None, hashing);
        let mut batches: BTreeMap<TopicName, Vec<(usize, Message)>> = BTreeMap::new();
        for (i, record) in records.into_iter().enumerate() {
            let partition = match record.key.as_deref() {
                Some(key) => inner.route(topic, Some(key), hashing),
                None => keyless.clone(),
            }
            .expect("the topic is partitioned");
            batches.entry(partition).or_default().push((i, record));
        }
        let mut ids = vec![MessageId::new(&[]); batches.values().map(Vec::len).sum()];
        for (partition, batch) in batches {
            let (places, messages): (Vec<usize>, Vec<OutgoingMessage>) = batch
                .into_iter()
                .map(|(i, record)| (i, outgoing(record, now)))
                .unzip();
            let stored = inner
                .cluster
                .publish_batch(&partition, messages, now)
                .map_err(|e| refused(&partition, e))?;
            for (place, id) in places.into_iter().zip(stored) {
                ids[place] = crate::message_id::of_model(&id);
            }
        }
        inner.notify();
        Ok(ids)
    }

    /// The messages that reached `topic`, in order, with payload and properties: every one
    /// under [`Retention::KeepAll`] (the default); under [`Retention::UntilAcknowledged`]
    /// those still held (one every subscription acknowledged may be gone, or listed with an
    /// empty payload and no properties).
    pub fn topic_messages(&self, topic: &str) -> Result<Vec<TopicMessage>, TopicNameError> {
        let topic = TopicName::parse(topic)?;
        let inner = self.lock();
        Ok(inner
            .cluster
            .topic_messages(&topic)
            .iter()
            .map(|m| TopicMessage {
                message_id: crate::message_id::of_model(&m.id),
                payload: m.payload().to_vec(),
                properties: m.properties().as_slice().to_vec(),
                key: m.key.clone(),
                published_at: m.publish_time,
            })
            .collect())
    }

    /// Messages of `subscription` on `topic` not acknowledged yet, or `None` if there is no
    /// such subscription.
    pub fn backlog(
        &self,
        topic: &str,
        subscription: &str,
    ) -> Result<Option<usize>, TopicNameError> {
        let topic = TopicName::parse(topic)?;
        Ok(self.lock().cluster.backlog(&topic, subscription))
    }

    /// Deliveries queued for a consumer or held by a driver without a settlement call.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight()
    }

    /// Completes once nothing is in flight.
    pub async fn idle(&self) {
        poll_fn(|cx| {
            let mut inner = self.lock();
            if inner.in_flight() == 0 {
                Poll::Ready(())
            } else {
                // Once per waker: a caller that also wakes on other events (each delivery
                // handled) polls this again and again while work goes on.
                if !inner.idle_waiters.iter().any(|w| w.will_wake(cx.waker())) {
                    inner.idle_waiters.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
        .await
    }

    pub(crate) fn subscribe(
        &self,
        planned: &CheckedSubscription<impl Send + Sync + 'static>,
        runtime: Arc<dyn Runtime>,
    ) -> Result<InProcessConsumer, BoxError> {
        let mut inner = self.lock();
        let now = runtime.now();
        // No client-side dead-letter policy: the driver dead-letters message by message
        // (see `driver::dead_letter`), as it does over pulsar-rs.
        let options = ConsumerOptions {
            ack_timeout: planned.ack_timeout,
            initial_position: planned.initial_position,
            schema: planned.schema.clone(),
            ..ConsumerOptions::default()
        };
        let topics = TopicsConsumer::subscribe(
            &mut inner.cluster,
            planned.topics.clone(),
            &planned.subscription,
            planned.kind,
            options,
            now,
        )?;
        let permits = u32::try_from(planned.receiver_queue).unwrap_or(u32::MAX);
        for consumer in topics.consumers() {
            inner.cluster.flow(consumer, permits, now)?;
            inner.attach(consumer);
        }
        inner.notify();
        let pattern = topics.is_pattern().then(|| inner.add_pattern());
        Ok(InProcessConsumer::new(
            self.clone(),
            topics,
            pattern,
            runtime,
            (planned.receiver_queue, planned.retry_topic.is_some()),
        ))
    }

    /// Start the task that fires the model's deadlines (client ack timeouts) on `runtime`.
    pub(crate) fn start_timer(&self, runtime: Arc<dyn Runtime>) {
        {
            let mut inner = self.lock();
            inner.timer_users += 1;
            if inner.runtime.is_some() && !inner.timer_stopped {
                return;
            }
            inner.runtime = Some(runtime.clone());
            inner.timer_stopped = false;
            inner.notify();
        }
        let me = self.clone();
        runtime.spawn(Box::pin(async move { me.timer_loop().await }));
    }

    pub(crate) fn stop_timer(&self) {
        let mut inner = self.lock();
        inner.timer_users = inner.timer_users.saturating_sub(1);
        if inner.timer_users > 0 {
            return;
        }
        inner.timer_stopped = true;
        inner.notify();
        if let Some(w) = inner.timer_waker.take() {
            w.wake();
        }
    }

    async fn timer_loop(self) {
        loop {
            let fired = poll_fn(|cx| {
                let mut inner = self.lock();
                if inner.timer_stopped {
                    return Poll::Ready(false);
                }
                inner.timer_waker = Some(cx.waker().clone());
                match &mut inner.timer {
                    Some((_, sleep)) => sleep.as_mut().poll(cx).map(|()| true),
                    None => Poll::Pending,
                }
            })
            .await;
            if !fired {
                return;
            }
            let mut inner = self.lock();
            let now = inner.now();
            inner.cluster.handle_timeouts(now);
            // Re-arms, dropping the fired sleep only now that its timeouts were handled.
            inner.notify();
        }
    }
}

/// The model's refusal of a publish to `topic` as a [`PublishError`]: a schema of another
/// kind than the topic's is a refusal nothing will change, as on the broker.
fn refused(topic: &TopicName, error: ModelError) -> PublishError {
    match error {
        ModelError::IncompatibleSchema { .. } => PublishError::schema(topic.to_string(), error),
        other => PublishError::broker(topic.to_string(), other),
    }
}

/// What the model stores for `record` published at `now`.
#[inline(always)]
fn outgoing(record: Message, now: Instant) -> OutgoingMessage {
    let mut message = OutgoingMessage::new(record.payload);
    message.properties = record.properties.into();
    message.key = record.key;
    message.event_time = record.event_time;
    message.schema = record.schema;
    message.deliver_at = match (record.deliver_after, record.deliver_at) {
        (Some(after), _) => Some(now.saturating_add(after)),
        (None, Some(at)) => Some(Instant::ZERO.saturating_add(at)),
        (None, None) => None,
    };
    message
}

/// A message as stored on a topic of the in-process Pulsar.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopicMessage {
    /// Its id, `ledger:entry:partition`, plus `:index` for a message of a batch.
    pub message_id: MessageId,
    /// The payload.
    pub payload: Vec<u8>,
    /// The properties, in name order.
    pub properties: Vec<(String, String)>,
    /// The key, if any.
    pub key: Option<String>,
    /// When it was published, on the app's clock.
    pub published_at: Instant,
}

impl TopicMessage {
    /// The value of property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The payload decoded from JSON.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.payload)
    }
}
