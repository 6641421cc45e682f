//! One producer: where the messages for one topic (one partition, one codec, one schema) are
//! batched, and the task that sends the batches and hands out their receipts.
//!
//! A publish appends its message to the open batch under a short lock and returns: it never
//! waits for the producer to open, for a send or for a receipt. The outlet's task opens the
//! pulsar-rs producer (not batching: the batches are made here), then sends each batch as it
//! is sealed (full, or its first message waited the batching delay) without waiting for the
//! broker's receipt, so many batches are in flight at once; each receipt, when it comes,
//! answers every message of its batch. A message the broker must not batch (a delivery time,
//! a chunk) seals the open batch and goes as an entry of its own, after it: one producer keeps
//! the order of what it was given.

use std::collections::{BTreeMap, VecDeque};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

use futures::stream::FuturesUnordered;
use futures::task::AtomicWaker;
use futures::StreamExt;
use pulsar::message::proto::CommandSendReceipt;
use pulsar::{Executor, Producer};
use ruststream::publish::{Batching, PublishError, Receipt};
use ruststream::runtime::{Runtime, Sleep};
use ruststream::Instant;

use super::batch::{Batch, Item, Receipts};
use super::room::Room;

/// What opens an outlet's producer, once, in its task.
pub(super) type Open<Exe> =
    Pin<Box<dyn Future<Output = Result<Producer<Exe>, PublishError>> + Send>>;

/// A producer's messages, shared between the publishes and the outlet's task.
pub(super) struct Outlet {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// The outlet's task, woken when a batch is sealed or a first message opens one.
    task: AtomicWaker,
    /// Who waits for the task to end ([`Outlet::close`]).
    closer: AtomicWaker,
    /// It takes no more messages (failed, closing or ended): read on every publish's way to
    /// it, without the lock.
    done: AtomicBool,
    batching: Batching,
    /// The partition the producer writes, `-1` for a topic that is not partitioned.
    partition: i64,
    /// The topic, for errors.
    topic: String,
    room: Arc<Room>,
    runtime: Arc<dyn Runtime>,
}

struct State {
    /// The batch being filled (one per key, with key-based batching).
    open: Filling,
    /// When the open batches' first message came: the batching delay runs from it.
    opened_at: Option<Instant>,
    /// Sealed, in order, for the task to send.
    ready: VecDeque<Entry>,
    /// The producer could not be opened: every message fails so.
    failed: Option<PublishError>,
    /// No more messages: send what is left, then close.
    closing: bool,
    /// The task has ended.
    ended: bool,
}

/// The open batches: one, or one per key.
enum Filling {
    One(Batch),
    ByKey(BTreeMap<Option<String>, Batch>),
}

impl Filling {
    fn is_empty(&self) -> bool {
        match self {
            Filling::One(batch) => batch.is_empty(),
            Filling::ByKey(batches) => batches.is_empty(),
        }
    }

    /// Move every open batch, in order, to `ready`.
    fn seal_into(&mut self, ready: &mut VecDeque<Entry>) {
        match self {
            Filling::One(batch) => {
                if !batch.is_empty() {
                    let batch = std::mem::replace(batch, Batch::new(false));
                    ready.push_back(Entry::Batch(batch));
                }
            }
            Filling::ByKey(batches) => {
                ready.extend(std::mem::take(batches).into_values().map(Entry::Batch));
            }
        }
    }

    /// Add `item`; the batch it filled, if it did.
    fn push(&mut self, item: Item, batching: &Batching) -> Option<Batch> {
        match self {
            Filling::One(batch) => {
                batch.push(item);
                batch
                    .is_full(batching)
                    .then(|| std::mem::replace(batch, Batch::new(false)))
            }
            Filling::ByKey(batches) => {
                let key = item.key.clone();
                let batch = batches
                    .entry(key.clone())
                    .or_insert_with(|| Batch::new(false));
                batch.push(item);
                if batch.is_full(batching) {
                    batches.remove(&key)
                } else {
                    None
                }
            }
        }
    }

    /// Every open batch, taken out.
    fn take(&mut self) -> Vec<Batch> {
        match self {
            Filling::One(batch) if batch.is_empty() => Vec::new(),
            Filling::One(batch) => vec![std::mem::replace(batch, Batch::new(false))],
            Filling::ByKey(batches) => std::mem::take(batches).into_values().collect(),
        }
    }
}

/// What the task sends as one entry.
enum Entry {
    Batch(Batch),
    /// A message sent on its own, not batched (a delivery time, a chunk, batching off), with
    /// its payload bytes for the room it holds.
    Single(pulsar::producer::Message, Receipt, usize),
}

impl Entry {
    /// The message to send, its receipts, and the payload bytes they hold of the room.
    fn into_parts(self) -> (pulsar::producer::Message, Receipts, usize) {
        match self {
            Entry::Batch(batch) => {
                let bytes = batch.bytes();
                let (message, receipts) = batch.into_entry();
                (message, receipts, bytes)
            }
            Entry::Single(message, receipt, bytes) => (message, Receipts::plain(receipt), bytes),
        }
    }
}

impl Outlet {
    /// An outlet for `topic` (partition `partition`, `-1` if not partitioned), whose task,
    /// spawned on `runtime`, opens its producer with `open` and then sends.
    pub(super) fn start<Exe: Executor>(
        topic: String,
        partition: i64,
        batching: Batching,
        room: Arc<Room>,
        runtime: Arc<dyn Runtime>,
        open: Open<Exe>,
    ) -> Self {
        let filling = if batching.is_key_based() {
            Filling::ByKey(BTreeMap::new())
        } else {
            Filling::One(Batch::new(false))
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                open: filling,
                opened_at: None,
                ready: VecDeque::new(),
                failed: None,
                closing: false,
                ended: false,
            }),
            task: AtomicWaker::new(),
            closer: AtomicWaker::new(),
            done: AtomicBool::new(false),
            batching,
            partition,
            topic,
            room,
            runtime: runtime.clone(),
        });
        runtime.spawn(Box::pin(run(shared.clone(), open)));
        Outlet { shared }
    }

    /// Whether it takes no more messages: its producer could not be opened, or it ended (a
    /// later publish opens another).
    #[inline]
    pub(super) fn is_done(&self) -> bool {
        self.shared.done.load(Ordering::Acquire)
    }

    /// Add `item` to the open batch (sent when full, or once its first message waited the
    /// batching delay; at once as an entry of its own where batching is off). Its room is
    /// taken already; its receipt is told the broker's answer.
    #[inline]
    pub(super) fn push(&self, item: Item) {
        let shared = &self.shared;
        let mut state = shared.lock();
        if let Some(error) = shared.refusal(&state) {
            drop(state);
            shared.refuse(item.receipt, item.payload.len(), error);
            return;
        }
        let batching = shared.batching;
        if !batching.is_enabled() {
            let bytes = item.payload.len();
            let (message, receipt) = item.into_plain();
            state
                .ready
                .push_back(Entry::Single(message, receipt, bytes));
            drop(state);
            shared.task.wake();
            return;
        }
        let mut wake = false;
        if state.open.is_empty() {
            // The batching delay starts now; the task arms its timer.
            state.opened_at = Some(shared.runtime.now());
            wake = true;
        }
        let State { open, ready, .. } = &mut *state;
        if let Some(full) = open.push(item, &batching) {
            ready.push_back(Entry::Batch(full));
            if open.is_empty() {
                state.opened_at = None;
            }
            wake = true;
        }
        drop(state);
        if wake {
            shared.task.wake();
        }
    }

    /// Send `message` as an entry of its own (not to be batched: a delivery time, a chunk),
    /// after what is open; it holds `bytes` of the room.
    pub(super) fn push_alone(
        &self,
        message: pulsar::producer::Message,
        receipt: Receipt,
        bytes: usize,
    ) {
        let shared = &self.shared;
        let mut state = shared.lock();
        if let Some(error) = shared.refusal(&state) {
            drop(state);
            shared.refuse(receipt, bytes, error);
            return;
        }
        let State { open, ready, .. } = &mut *state;
        open.seal_into(ready);
        state.opened_at = None;
        state
            .ready
            .push_back(Entry::Single(message, receipt, bytes));
        drop(state);
        shared.task.wake();
    }

    /// Send `items` as entries of their own, in order, after what is open: one entry per
    /// `max` messages, batch-framed even for one (an explicit batch).
    pub(super) fn push_batch(&self, items: Vec<Item>, max: u32) {
        let shared = &self.shared;
        let mut state = shared.lock();
        if let Some(error) = shared.refusal(&state) {
            drop(state);
            for item in items {
                shared.refuse(item.receipt, item.payload.len(), error.clone());
            }
            return;
        }
        let State { open, ready, .. } = &mut *state;
        open.seal_into(ready);
        state.opened_at = None;
        let mut batch = Batch::new(true);
        for item in items {
            if batch.len() >= max {
                let full = std::mem::replace(&mut batch, Batch::new(true));
                state.ready.push_back(Entry::Batch(full));
            }
            batch.push(item);
        }
        if !batch.is_empty() {
            state.ready.push_back(Entry::Batch(batch));
        }
        drop(state);
        shared.task.wake();
    }

    /// Stop taking messages: what is open is sent and answered, and the producer closed.
    /// Completes once the task has ended.
    pub(super) async fn close(&self) {
        self.shared.lock().closing = true;
        self.shared.done.store(true, Ordering::Release);
        self.shared.task.wake();
        poll_fn(|cx| {
            self.shared.closer.register(cx.waker());
            if self.shared.lock().ended {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why a message cannot be taken now, if it cannot.
    fn refusal(&self, state: &State) -> Option<PublishError> {
        if let Some(error) = &state.failed {
            return Some(error.clone());
        }
        (state.closing || state.ended).then(|| {
            PublishError::broker(
                &self.topic,
                "the broker is stopping: the message was not sent",
            )
        })
    }

    /// A message not taken: its receipt fails, its room is given back.
    fn refuse(&self, receipt: Receipt, bytes: usize, error: PublishError) {
        self.room.give_back(1, bytes);
        receipt.tell(Err(error));
    }

    /// The broker answered an entry of `bytes` payload bytes.
    fn answer(
        &self,
        result: Result<CommandSendReceipt, pulsar::Error>,
        receipts: Receipts,
        bytes: usize,
    ) {
        let count = receipts.len();
        match result {
            Ok(CommandSendReceipt {
                message_id: Some(id),
                ..
            }) => receipts.stored(id.ledger_id as i64, id.entry_id as i64, self.partition),
            Ok(_) => receipts.failed(&PublishError::broker(
                &self.topic,
                "the broker's receipt names no message id",
            )),
            Err(error) => receipts.failed(&PublishError::broker(
                &self.topic,
                format!("no receipt: {error}"),
            )),
        }
        self.room.give_back(count, bytes);
    }

    /// The producer could not be opened: every message taken, and every later one, fails so.
    fn fail(&self, error: PublishError) {
        self.done.store(true, Ordering::Release);
        let (batches, entries) = {
            let mut state = self.lock();
            state.failed = Some(error.clone());
            state.opened_at = None;
            (state.open.take(), std::mem::take(&mut state.ready))
        };
        let entries = batches.into_iter().map(Entry::Batch).chain(entries);
        for entry in entries {
            let (_, receipts, bytes) = entry.into_parts();
            let count = receipts.len();
            receipts.failed(&error);
            self.room.give_back(count, bytes);
        }
    }

    /// The task ended: tell whoever waits.
    fn end(&self) {
        self.done.store(true, Ordering::Release);
        self.lock().ended = true;
        self.closer.wake();
    }
}

/// When what was opened at `opened` is sent: the next beat of a clock beating every `delay`,
/// as the Java client's batch timer beats, so that a message waits at most `delay`, half of it
/// on average (not `delay` after the first message, which would make every message wait at
/// least that long). On a timer that fires up to `granularity` late by design (tokio's wheel
/// rounds up to its next 1 ms tick), the beat is aimed that much earlier, no earlier than
/// `opened`: a 1 ms delay on tokio then sends at its next tick, about 1.1 ms later, instead of
/// about 2.1 ms.
fn next_tick(
    opened: Instant,
    delay: std::time::Duration,
    granularity: std::time::Duration,
) -> Instant {
    let every = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX).max(1);
    let ticks = opened.as_nanos() / every + 1;
    let beat = Instant::from_nanos(ticks.saturating_mul(every));
    let early = u64::try_from(granularity.as_nanos()).unwrap_or(u64::MAX);
    Instant::from_nanos(beat.as_nanos().saturating_sub(early)).max(opened)
}

/// The outlet's task: open the producer, then send what is sealed and hand out the receipts,
/// until the outlet closes.
async fn run<Exe: Executor>(shared: Arc<Shared>, open: Open<Exe>) {
    let mut producer = match open.await {
        Ok(producer) => producer,
        Err(error) => {
            shared.fail(error);
            shared.end();
            return;
        }
    };
    let mut in_flight = FuturesUnordered::new();
    let mut timer: Option<(Instant, Sleep)> = None;
    loop {
        // Send everything sealed, without waiting for the receipts.
        loop {
            let entry = shared.lock().ready.pop_front();
            let Some(entry) = entry else { break };
            let (message, receipts, bytes) = entry.into_parts();
            match producer.send_non_blocking(message).await {
                Ok(receipt) => in_flight.push(async move { (receipt.await, receipts, bytes) }),
                Err(error) => shared.answer(Err(error), receipts, bytes),
            }
        }
        let finished = poll_fn(|cx| {
            shared.task.register(cx.waker());
            while let Poll::Ready(Some((result, receipts, bytes))) = in_flight.poll_next_unpin(cx) {
                shared.answer(result, receipts, bytes);
            }
            let mut state = shared.lock();
            if !state.ready.is_empty() {
                return Poll::Ready(false);
            }
            if state.closing {
                if !state.open.is_empty() {
                    let State { open, ready, .. } = &mut *state;
                    open.seal_into(ready);
                    state.opened_at = None;
                    return Poll::Ready(false);
                }
                return if in_flight.is_empty() {
                    Poll::Ready(true)
                } else {
                    Poll::Pending
                };
            }
            let Some(opened) = state.opened_at else {
                timer = None;
                return Poll::Pending;
            };
            drop(state);
            let deadline = next_tick(
                opened,
                shared.batching.delay(),
                shared.runtime.granularity(),
            );
            let sleep = match &mut timer {
                Some((at, sleep)) if *at == deadline => sleep,
                Some((at, sleep)) => {
                    *at = deadline;
                    shared.runtime.reset(sleep, deadline);
                    sleep
                }
                None => {
                    &mut timer
                        .insert((deadline, shared.runtime.sleep_until(deadline)))
                        .1
                }
            };
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // The first message waited long enough: send what is open as it is.
            let mut state = shared.lock();
            if state.opened_at == Some(opened) {
                let State { open, ready, .. } = &mut *state;
                open.seal_into(ready);
                state.opened_at = None;
            }
            Poll::Ready(false)
        })
        .await;
        if finished {
            break;
        }
    }
    if let Err(error) = producer.close().await {
        tracing::warn!(topic = %shared.topic, %error, "closing a producer failed");
    }
    shared.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_batch_is_sent_at_the_next_tick_of_its_delay() {
        let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
        let delay = Duration::from_millis(1);
        let precise = Duration::ZERO;
        assert_eq!(
            next_tick(ms(5), delay, precise),
            ms(6),
            "on a beat: the next one"
        );
        let just_after = Instant::from_nanos(5_000_001);
        assert_eq!(next_tick(just_after, delay, precise), ms(6));
        assert_eq!(
            next_tick(ms(5), Duration::ZERO, precise),
            Instant::from_nanos(5_000_001)
        );
        let wheel = Duration::from_millis(1);
        assert_eq!(
            next_tick(just_after, delay, wheel),
            just_after,
            "a wheel that fires a tick late is aimed a tick early, not before the batch opened"
        );
        assert_eq!(next_tick(ms(5), Duration::from_millis(4), wheel), ms(7));
    }
}
