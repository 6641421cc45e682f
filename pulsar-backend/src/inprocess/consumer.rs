//! A driver's consumer on the in-process Pulsar.

use std::sync::Arc;
use std::task::{Context, Poll};

use ruststream::app::BoxError;
use ruststream::runtime::{Runtime, Sleep};
use ruststream::Instant;
use ruststream_pulsar_model::{Cluster, ConsumerId, MessageId, ModelError, TopicsConsumer};

use ruststream::broker::machine::{BatchSlot, EntryPosition};
use ruststream::handler::BoxFuture;
use ruststream_driver::port::{
    CommitError, ConsumerPort, Payload, Properties, Received, Transaction,
};

use super::transactions::InProcessTransaction;
use super::{InProcessPulsar, Inner};

/// One subscription's consumer on the in-process Pulsar: one model consumer per topic it
/// reads (a partitioned topic's partitions, several topics, a pattern's matches), as pulsar-rs
/// has one per topic behind its multi-topic consumer.
pub(crate) struct InProcessConsumer {
    pulsar: InProcessPulsar,
    topics: TopicsConsumer,
    /// The sleep until a pattern's next refresh that will find a topic, with its deadline;
    /// none while no topic is waiting to be found. A fired sleep is replaced only after the
    /// refresh it asked for was made (the virtual clock counts it as not yet observed until
    /// then).
    refresh: Option<(Instant, Sleep)>,
    /// For a pattern (the only kind whose topics change), its key in the in-process Pulsar's
    /// record of which pattern consumers have looked for new topics.
    pattern: Option<u64>,
    runtime: Arc<dyn Runtime>,
    closed: bool,
    prefetch: usize,
    /// Whether the subscription reads a retry topic: each delivery then says how many times
    /// it went through it (`RECONSUMETIMES`).
    retry_topic: bool,
    /// Deliveries received and not yet released.
    held: usize,
}

impl InProcessConsumer {
    pub(crate) fn new(
        pulsar: InProcessPulsar,
        topics: TopicsConsumer,
        pattern: Option<u64>,
        runtime: Arc<dyn Runtime>,
        (prefetch, retry_topic): (usize, bool),
    ) -> Self {
        InProcessConsumer {
            pulsar,
            pattern,
            topics,
            refresh: None,
            runtime,
            closed: false,
            prefetch,
            retry_topic,
            held: 0,
        }
    }

    /// Keep up to `prefetch` messages asked for: the permits the broker still holds plus the
    /// deliveries queued for this consumer. Like pulsar-rs's engine (`remaining <
    /// batch_size.div_ceil(2)` → `flow(batch_size − remaining)`), it asks again only once that
    /// falls below half, for everything missing, so that one `flow` and one dispatch pass serve
    /// many messages. Messages the client dead-letters use a permit without reaching the
    /// queue, which is why this counts a level rather than adding one permit per receive.
    /// Whether it asked for more.
    fn top_up(&self, inner: &mut Inner, now: ruststream::Instant) -> bool {
        let mut asked = false;
        for consumer in self.topics.consumers() {
            asked |= top_up_one(inner, consumer, self.prefetch, now);
        }
        asked
    }

    /// A pattern's refresh: wait for the next tick that finds a topic, if one is waiting; when
    /// it comes, subscribe the topics that appeared and give them their permits. Whether
    /// anything changed.
    fn poll_refresh(
        topics: &mut TopicsConsumer,
        refresh: &mut Option<(Instant, Sleep)>,
        (runtime, prefetch): (&Arc<dyn Runtime>, usize),
        inner: &mut Inner,
        cx: &mut Context<'_>,
    ) -> bool {
        let mut changed = false;
        // Until no tick is due or the sleep is pending: a sleep moved to a new deadline keeps
        // no waker, so it is polled again to be woken then.
        loop {
            match (topics.next_refresh(&inner.cluster), refresh.as_mut()) {
                (None, _) => {
                    *refresh = None;
                    return changed;
                }
                (Some(next), Some((at, sleep))) => {
                    if *at != next {
                        *at = next;
                        runtime.reset(sleep, next);
                    }
                }
                (Some(next), None) => *refresh = Some((next, runtime.sleep_until(next))),
            }
            let (_, sleep) = refresh.as_mut().expect("armed above");
            if sleep.as_mut().poll(cx).is_pending() {
                return changed;
            }
            let now = runtime.now();
            let (added, refused) = topics.refresh(&mut inner.cluster, now);
            if let Some(error) = refused {
                tracing::warn!(
                    %error,
                    "a topic the pattern matches could not be subscribed; it is tried again at \
                     the next refresh"
                );
            }
            for &consumer in &added {
                inner.attach(consumer);
                top_up_one(inner, consumer, prefetch, now);
            }
            changed |= !added.is_empty();
        }
    }

    /// Make a settlement call on the model, through the consumer that received `id`.
    /// Make `call` for each of `ids` under one lock, as the broker takes one command with
    /// several ids; the first failure is returned, after the others were made.
    fn settle(
        &mut self,
        ids: &[MessageId],
        call: impl Fn(
            &mut Cluster,
            ConsumerId,
            &MessageId,
            ruststream::Instant,
        ) -> Result<(), ModelError>,
    ) -> Result<(), BoxError> {
        let mut inner = self.pulsar.lock();
        let now = self.runtime.now();
        let mut first_error: Option<BoxError> = None;
        for id in ids {
            let result = match self.topics.consumer_of(id) {
                Some(consumer) => call(&mut inner.cluster, consumer, id, now).map_err(Into::into),
                None => Err(format!(
                    "message {id} was not received through this consumer: no topic it reads \
                     holds it"
                )
                .into()),
            };
            if let (Err(error), None) = (result, &first_error) {
                first_error = Some(error);
            }
        }
        inner.notify();
        first_error.map_or(Ok(()), Err)
    }
}

impl ConsumerPort for InProcessConsumer {
    type Id = MessageId;

    fn entry(id: &MessageId) -> EntryPosition {
        EntryPosition {
            ledger: id.ledger_id,
            entry: id.entry_id,
            partition: id.partition,
        }
    }

    #[inline]
    fn message_id(id: &MessageId) -> ruststream::MessageId {
        crate::message_id::of_model(id)
    }

    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received<MessageId>>> {
        if self.closed {
            return Poll::Ready(None);
        }
        let mut inner = self.pulsar.lock();
        if let Some(key) = self.pattern {
            let changed = Self::poll_refresh(
                &mut self.topics,
                &mut self.refresh,
                (&self.runtime, self.prefetch),
                &mut inner,
                cx,
            );
            inner.pattern_looked(key);
            if changed {
                inner.notify();
            }
        }
        let now = self.runtime.now();
        match self.topics.receive(&mut inner.cluster, now) {
            Some(d) => {
                // Counted as held in the same critical section that takes it off the queue, so
                // the in-flight count never dips to zero in between.
                inner.held += 1;
                self.held += 1;
                let asked = self.top_up(&mut inner, now);
                // Receiving may have run timers or dispatched after asking for more, which can
                // dead-letter messages (published elsewhere) or move deadlines. Taking a
                // delivery off the queue alone changes nothing another task waits for (it
                // stays in flight).
                if asked || inner.cluster.may_have_timers() {
                    inner.notify();
                }
                Poll::Ready(Some(Received {
                    // Before `content` moves below. The model stores payloads as they are:
                    // nothing is compressed.
                    unusual: crate::chunked::unusual(
                        d.content.chunk().cloned(),
                        d.content.unreadable_reason().map(str::to_owned),
                        None,
                    ),
                    republished: match self.retry_topic {
                        true => crate::republish::republished(d.content.properties().as_slice()),
                        false => 0,
                    },
                    id: d.message_id,
                    payload: Payload::Shared(d.content.clone()),
                    properties: Properties::Shared(d.content),
                    topic: d.topic.shared(),
                    key: d.key,
                    redelivery_count: Some(d.redelivery_count),
                    batch: batch_slot(&d.message_id, d.batch_size),
                    publish_time: Some(d.publish_time.elapsed_since_origin()),
                    event_time: d.event_time,
                }))
            }
            None => {
                if self.top_up(&mut inner, now) {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                for consumer in self.topics.consumers() {
                    inner.park(consumer, cx.waker());
                }
                if self.pattern.is_some() {
                    inner.watch_topics(cx.waker());
                }
                Poll::Pending
            }
        }
    }

    async fn ack(&mut self, ids: &[MessageId]) -> Result<(), BoxError> {
        self.settle(ids, |cluster, consumer, id, now| {
            cluster.ack(consumer, id, now).map(|_| ())
        })
    }

    async fn nack(&mut self, ids: &[MessageId]) -> Result<(), BoxError> {
        self.settle(ids, |cluster, consumer, id, now| {
            cluster.nack(consumer, id, now).map(|_| ())
        })
    }

    fn commit(
        &mut self,
        txn: &Transaction,
        acks: Vec<(MessageId, Option<BatchSlot>)>,
    ) -> BoxFuture<'static, Result<(), CommitError>> {
        // The model acknowledges a message of a batched entry at its index by its id; an
        // acknowledgement without a slot is of the whole entry (the machine commits an entry
        // whole when the transaction acknowledges all of it).
        let ids: Vec<MessageId> = (acks.into_iter())
            .map(|(id, slot)| match slot {
                Some(_) => id,
                None => id.entry(),
            })
            .collect();
        let committed = match InProcessTransaction::of(txn) {
            Err(error) => Err(CommitError::failed(error)),
            Ok(txn) => match txn.failed() {
                Some(error) => Err(CommitError::not_sent(&error)),
                None => {
                    let acked = self.settle(&ids, |cluster, consumer, id, now| {
                        cluster.ack_in(txn.txn, consumer, id, now)
                    });
                    match acked {
                        Err(error) => Err(CommitError::ack_refused(error)),
                        Ok(()) => {
                            let mut inner = self.pulsar.lock();
                            let now = self.runtime.now();
                            let committed = inner.cluster.commit(txn.txn, now);
                            inner.notify();
                            committed.map_err(|error| CommitError::failed(error.into()))
                        }
                    }
                }
            },
        };
        Box::pin(std::future::ready(committed))
    }

    fn restart_ack_timeout<'a>(&mut self, ids: impl Iterator<Item = &'a MessageId>) {
        if !self.topics.has_ack_timeout() {
            return;
        }
        let now = self.runtime.now();
        let mut inner = self.pulsar.lock();
        self.topics
            .restart_ack_timeout(&mut inner.cluster, ids, now);
        inner.notify();
    }

    fn release(&mut self, _id: &MessageId) {
        debug_assert!(self.held > 0, "released more deliveries than were received");
        self.held = self.held.saturating_sub(1);
        let mut inner = self.pulsar.lock();
        inner.held = inner.held.saturating_sub(1);
        inner.wake_if_idle();
    }

    fn acquire(&mut self, _id: &MessageId) {
        self.held += 1;
        self.pulsar.lock().held += 1;
    }

    async fn close(mut self) {
        self.disconnect();
    }
}

impl InProcessConsumer {
    /// Leave the cluster: on Shared and KeyShared the unacknowledged messages go to the other
    /// consumers, on Failover a standby takes over. Whether closed on purpose or dropped with
    /// a task that ended (a process that died), the broker sees the same.
    fn disconnect(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let pulsar = self.pulsar.clone();
        let mut inner = pulsar.lock();
        let now = self.runtime.now();
        for consumer in self.topics.consumers() {
            inner.detach(consumer);
        }
        if let Some(key) = self.pattern {
            inner.remove_pattern(key);
        }
        self.topics.close(&mut inner.cluster, now);
        self.refresh = None;
        inner.held -= std::mem::take(&mut self.held);
        inner.notify();
    }
}

impl Drop for InProcessConsumer {
    fn drop(&mut self) {
        self.disconnect();
    }
}

/// Keep up to `prefetch` messages asked for on one model consumer (see
/// [`InProcessConsumer::top_up`]); whether it asked for more.
fn top_up_one(inner: &mut Inner, consumer: ConsumerId, prefetch: usize, now: Instant) -> bool {
    let outstanding = inner.cluster.outstanding(consumer).unwrap_or(0);
    let want = prefetch as u64;
    if outstanding >= want.div_ceil(2) {
        return false;
    }
    let more = u32::try_from(want - outstanding).unwrap_or(u32::MAX);
    inner.cluster.flow(consumer, more, now).is_ok()
}

/// The place of a delivered message in its batched entry, if it has one.
fn batch_slot(id: &MessageId, batch_size: Option<u32>) -> Option<BatchSlot> {
    Some(BatchSlot {
        entry: <InProcessConsumer as ConsumerPort>::entry(id),
        index: u32::try_from(id.batch_index?).ok()?,
        size: std::num::NonZeroU32::new(batch_size?)?,
    })
}
