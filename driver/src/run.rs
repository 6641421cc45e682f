//! The driver loop: one task per subscription, the I/O around the core's subscription machine.
//!
//! It decides nothing. When the machine wants a delivery it takes one from the consumer; it
//! feeds the machine every event (a delivery, an invocation's end, a publish answered, a
//! transaction opened or committed, time, idling, stopping); and it carries out every command
//! the machine gives (`carry.rs`): it runs handlers (`invoke.rs`), makes the consumer calls
//! (those due at one flush together), publishes copies, opens, commits and aborts
//! transactions, logs what the machine tells, and releases what no longer counts as in flight
//! once the calls due for it were made. Then it arms one timer for the machine's next deadline.
//! Any broker's driver is this one: a broker gives it ports (`port/`).

use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use ruststream::batch::BatchPolicy;
use ruststream::broker::machine::{Admit, Event, MachineConfig, SubscriptionMachine};
use ruststream::broker::{Answered, Outbox};
use ruststream::handler::BoxFuture;
use ruststream::middleware::Stack;
use ruststream::publish::Publish;
use ruststream::runtime::{Runtime, Sleep};
use ruststream::transaction::TransactionPolicy;
use ruststream::{Handler, Instant, SubscriptionRules};

use crate::instruments::Instruments;
use crate::invoke::{BatchEnd, Invocation, Lists, Wrap};
use crate::kept::KeptRef;
use crate::outstanding::{Calls, Invoke, Io};
use crate::port::{ConsumerPort, Received, Republisher, Transaction, TransactionPort};
use crate::slots::Slots;
use crate::Handled;

/// How many events a driver handles before it yields to its executor once.
const YIELD_EVERY: u32 = 64;

/// What a driver needs besides its consumer and its handler.
pub struct DriverConfig<S> {
    /// The app's state, which handlers' `State<T>` parameters come from.
    pub state: Arc<S>,
    /// The runtime the broker connected on: the driver's clock, timers and tasks.
    pub runtime: Arc<dyn Runtime>,
    /// The subscription's completion rules.
    pub rules: SubscriptionRules,
    /// How its machine runs (concurrency, per-key order, attempts, topics declared, batches).
    pub machine: MachineConfig,
    /// The layers around the handler, mounted for it (`Stack::mount`).
    pub stack: Stack,
    /// Counts every delivery handed to the handler, for the broker's `handled`.
    pub handled: Arc<Handled>,
    /// The broker's publishing port for handlers' `Publisher` parameters (behind the layers'
    /// publish hooks, with the registration's compression), if it offers one.
    pub publisher: Option<Arc<dyn Publish>>,
    /// The broker's publishing port as it is, for the copies the machine orders.
    pub copies: Arc<dyn Publish>,
    /// How the broker writes those copies.
    pub republisher: Arc<dyn Republisher>,
    /// How long a stopping driver lets running handlers finish.
    pub shutdown_grace: std::time::Duration,
    /// The subscribed topics, for the lines that name a delivery.
    pub topic: Arc<str>,
    /// For a transactional registration, where its transactions are opened and how its
    /// handler's publisher wraps a transaction's port.
    pub transactions: Option<(Arc<dyn TransactionPort>, Wrap)>,
}

impl<S> DriverConfig<S> {
    /// The machine's configuration of a registration: `concurrency`, its batch policy and
    /// transaction policy, the rest as `config` says.
    pub fn machine_of(
        concurrency: usize,
        batch: Option<BatchPolicy>,
        transactional: Option<TransactionPolicy>,
    ) -> MachineConfig {
        MachineConfig {
            batch,
            transactional,
            ..MachineConfig::new(concurrency)
        }
    }
}

/// The machine as a driver runs it: deliveries as received, what is kept as shared, open
/// transactions as the broker gives them.
pub(crate) type Machine<Id> = SubscriptionMachine<Received<Id>, KeptRef<Id>, Transaction>;

/// Runs one subscription until told to stop.
pub struct Driver<C: ConsumerPort, S, H> {
    pub(crate) consumer: C,
    pub(crate) machine: Machine<C::Id>,
    pub(crate) invocation: Arc<Invocation<S, H>>,
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) handled: Arc<Handled>,
    pub(crate) shutdown_grace: std::time::Duration,
    pub(crate) copies: Arc<dyn Publish>,
    pub(crate) republisher: Arc<dyn Republisher>,
    pub(crate) opener: Option<Arc<dyn TransactionPort>>,
    pub(crate) topic: Arc<str>,
    /// The sleep for the machine's next deadline, with that deadline. A fired sleep is moved
    /// on only after the calls it released were made: what `RunningBroker::in_flight`
    /// promises (work a fired sleep releases counts as in flight until the sleep is let go).
    timer: Option<(Instant, Sleep)>,
    pub(crate) instruments: Instruments,
    /// The latest time read while handling the current events (a handler's end), for the
    /// commands and the flush that follow: a time read a moment ago is never later than now,
    /// so no deadline fires early, and one that came due meanwhile has its timer fire at once.
    pub(crate) read_at: Option<Instant>,
    /// The calls and releases of the flush under way, made together.
    pub(crate) calls: Calls<C::Id>,
    /// The answers taken from the outbox, being handed to the machine (empty between turns).
    answers: Vec<Answered>,
    /// What is under way on the broker for the machine: opens, commits, aborts, copies.
    pub(crate) io: FuturesUnordered<BoxFuture<'static, Io>>,
    /// A batch's lists, kept from the last for the next.
    pub(crate) lists: Lists<C::Id>,
}

impl<C: ConsumerPort, S: Send + Sync + 'static, H: Handler<S>> Driver<C, S, H> {
    /// The driver of `handler` on `consumer`.
    pub fn new(consumer: C, config: DriverConfig<S>, handler: Arc<H>) -> Self {
        let machine_config = MachineConfig {
            batch_index_acks: consumer.acks_batch_index(),
            ..config.machine
        };
        let machine = SubscriptionMachine::new(config.rules.clone(), machine_config, C::entry)
            .with_seed(seed_of::<C::Id>);
        let instruments = Instruments::new(handler.name());
        let (opener, wrap) = match config.transactions {
            Some((opener, wrap)) => (Some(opener), Some(wrap)),
            None => (None, None),
        };
        let invocation = Arc::new(Invocation {
            handler,
            state: config.state,
            runtime: config.runtime.clone(),
            stack: config.stack,
            publisher: config.publisher,
            outbox: Outbox::new(),
            subscription: config.rules.subscription_name(),
            key_ordered: machine.config().key_ordered,
            wrap,
        });
        Driver {
            consumer,
            machine,
            invocation,
            runtime: config.runtime,
            handled: config.handled,
            shutdown_grace: config.shutdown_grace,
            copies: config.copies,
            republisher: config.republisher,
            opener,
            topic: config.topic,
            timer: None,
            instruments,
            read_at: None,
            calls: Calls::default(),
            answers: Vec::new(),
            io: FuturesUnordered::new(),
            lists: Lists::default(),
        }
    }

    /// Run until `stop` fires (or the consumer closes), then shut down gracefully: stop
    /// pulling, let running handlers finish and their publishes be answered, make the calls
    /// due, abandon `retry_after` waits, close the consumer.
    pub async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        enum Turn {
            Stop,
            Closed,
            /// An event was fed to the machine where it was polled (a delivery is not moved
            /// through a turn: each move is a copy).
            Fed,
            Timer,
            /// Nothing is ready, and something happened since the last flush.
            Idle,
        }
        // The running invocations, and a batch handler's batches; locals, as their futures'
        // types have no name. `one` starts a delivery the machine held, as a delivery that
        // starts as it arrives is (`Driver::invoke`): their futures are of one type.
        let one = |this: &mut Self, invoke| {
            let (received, start) = Self::unpack(invoke);
            this.invoke(received, start)
        };
        let mut running = Slots::new();
        let mut batches = Slots::new();
        let mut events: u32 = 0;
        // Events handled since the last flush. The calls they made due are made when nothing
        // else is ready, when the timer fires, and at the latest every `YIELD_EVERY` events:
        // what settles in one burst of events leaves as one command per kind, and no call
        // waits for time to pass (a sleep starts only after a flush).
        let mut unflushed = false;
        let mut flush_now = true;
        loop {
            events = events.wrapping_add(1);
            let burst_ended = events.is_multiple_of(YIELD_EVERY);
            if burst_ended {
                // A subscription that always has something ready (a flood of deliveries, or a
                // message redelivered at once forever) still lets the other tasks of a
                // single-threaded executor run.
                ruststream::runtime::yield_now().await;
            }
            if flush_now || (burst_ended && unflushed) {
                let now = self.read_at.take().unwrap_or_else(|| self.runtime.now());
                self.carry(&mut running, &mut batches, now, one, Self::batch);
                self.flush().await;
                self.show_gauges(running.len());
                self.arm_timer();
                // Where the driver is about to wait, what waits for time (a batch's max wait)
                // stops counting as in flight. A flush within a burst leaves it be (parking
                // each and acquiring it again would cost both for nothing), and asks for one
                // more flush once the burst is over.
                let waits = flush_now;
                if waits {
                    self.machine.handle(Event::Idle, now);
                    self.carry(&mut running, &mut batches, now, one, Self::batch);
                    // The last batch's decoded values, kept to be dropped at the next
                    // decode, go now: a quiet subscription holds none.
                    self.lists.spare.drop_values();
                }
                self.release();
                let gathered = self.machine.status().gathered > 0;
                (flush_now, unflushed) = (false, !waits && gathered);
            }
            let turn = poll_fn(|cx| {
                if stop.poll_unpin(cx).is_ready() {
                    return Poll::Ready(Turn::Stop);
                }
                if let Poll::Ready(Some(done)) = running.poll_next(cx) {
                    self.finished(done);
                    self.carry_ready(&mut running, &mut batches, one, Self::batch);
                    return Poll::Ready(Turn::Fed);
                }
                if batches.len() > 0 {
                    if let Poll::Ready(Some(end)) = poll_batches(&mut batches, cx) {
                        self.batch_ended(end);
                        self.carry_ready(&mut running, &mut batches, one, Self::batch);
                        return Poll::Ready(Turn::Fed);
                    }
                }
                if !self.io.is_empty() {
                    if let Poll::Ready(Some(io)) = self.io.poll_next_unpin(cx) {
                        self.io_done(io);
                        self.carry_ready(&mut running, &mut batches, one, Self::batch);
                        return Poll::Ready(Turn::Fed);
                    }
                }
                // Answers matter once a delivery waits for them (one that comes while its
                // handler runs is taken when the handler ends): no look, and no waker to
                // register, on every turn of a subscription that does not publish.
                if self.machine.status().awaiting_publishes > 0
                    && self.invocation.outbox.poll_answers(cx).is_ready()
                {
                    self.take_answers();
                    self.carry_ready(&mut running, &mut batches, one, Self::batch);
                    return Poll::Ready(Turn::Fed);
                }
                if self.machine.wants_delivery() {
                    match self.consumer.poll_receive(cx) {
                        Poll::Ready(Some(mut received)) => {
                            let runtime = &self.runtime;
                            match self.machine.receive(&mut received, || runtime.now()) {
                                // Most deliveries: the delivery goes straight into its
                                // invocation, moved once.
                                Admit::Start(start) => {
                                    let (index, mut slot) = running.free_slot();
                                    slot.set(Some(self.invoke(received, start)));
                                    if let Some(done) = running.started(index) {
                                        self.finished(done);
                                    }
                                }
                                Admit::Keep => self.machine.keep(received),
                                Admit::Drop => drop(received),
                            }
                            self.carry_ready(&mut running, &mut batches, one, Self::batch);
                            return Poll::Ready(Turn::Fed);
                        }
                        Poll::Ready(None) => return Poll::Ready(Turn::Closed),
                        Poll::Pending => {}
                    }
                }
                if let Some((at, sleep)) = &mut self.timer {
                    if sleep.as_mut().poll(cx).is_ready() {
                        // A sleep that completed is not polled again (a runtime's may stay
                        // pending for good): `arm_timer` makes it anew.
                        *at = Instant::MAX;
                        return Poll::Ready(Turn::Timer);
                    }
                }
                if unflushed {
                    return Poll::Ready(Turn::Idle);
                }
                Poll::Pending
            })
            .await;
            match turn {
                Turn::Stop | Turn::Closed => break,
                Turn::Fed => unflushed = true,
                // The due calls are made by `flush` at the top of the loop, before a fired
                // sleep is replaced.
                Turn::Idle => flush_now = true,
                // The deadline passed: the flush reads the time again rather than take the
                // latest read, which may be from before it.
                Turn::Timer => {
                    self.read_at = None;
                    flush_now = true;
                }
            }
        }
        self.shutdown(running, batches, one, Self::batch).await;
    }

    /// The time to take commands at between flushes: the latest read, or now.
    #[inline]
    pub(crate) fn now_read(&mut self) -> Instant {
        match self.read_at {
            Some(read) => read,
            None => {
                let now = self.runtime.now();
                self.read_at = Some(now);
                now
            }
        }
    }

    /// `at` was read: the latest time read, for what follows.
    #[inline]
    pub(crate) fn read(&mut self, at: Instant) {
        self.read_at = Some(self.read_at.map_or(at, |read| read.max(at)));
    }

    /// Hand the publish answers waiting in the outbox to the machine.
    pub(crate) fn take_answers(&mut self) {
        let mut answers = std::mem::take(&mut self.answers);
        self.invocation.outbox.take(&mut answers);
        if answers.is_empty() {
            self.answers = answers;
            return;
        }
        let now = self.runtime.now();
        self.read(now);
        for answer in answers.drain(..) {
            self.answered(answer, now);
        }
        self.answers = answers;
    }

    /// Make the timer match the machine's next deadline: the one sleep is moved in place (no
    /// allocation), made on first need, dropped when nothing waits.
    fn arm_timer(&mut self) {
        let next = self.machine.poll_timeout();
        match (&mut self.timer, next) {
            (Some((at, _)), Some(next)) if *at == next => {}
            (Some((at, sleep)), Some(next)) => {
                *at = next;
                self.runtime.reset(sleep, next);
            }
            (timer, next) => *timer = next.map(|at| (at, self.runtime.sleep_until(at))),
        }
    }

    /// Stop: take no more, let what runs finish within the grace period with its publishes
    /// answered and its calls made, then close the consumer.
    async fn shutdown<F, B>(
        mut self,
        mut running: Slots<F>,
        mut batches: Slots<B>,
        one: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> F + Copy,
        batch: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> B + Copy,
    ) where
        F: Future<Output = ruststream::broker::machine::Finished<C::Id, KeptRef<C::Id>>>,
        B: Future<Output = BatchEnd<C::Id>>,
    {
        let now = self.runtime.now();
        self.machine.handle(Event::Stop, now);
        let deadline = now.saturating_add(self.shutdown_grace);
        let mut grace = self.runtime.sleep_until(deadline);
        loop {
            let now = self.runtime.now();
            self.carry(&mut running, &mut batches, now, one, batch);
            self.flush().await;
            self.release();
            if running.len() == 0
                && batches.len() == 0
                && self.io.is_empty()
                && self.machine.status().is_settled()
            {
                break;
            }
            /// What happened while stopping.
            enum Stopping<One, Batch> {
                One(One),
                Batch(Batch),
                Io(Io),
                Answers,
                Grace,
            }
            let next = poll_fn(|cx| {
                if let Poll::Ready(Some(done)) = running.poll_next(cx) {
                    return Poll::Ready(Stopping::One(done));
                }
                if let Poll::Ready(Some(done)) = batches.poll_next(cx) {
                    return Poll::Ready(Stopping::Batch(done));
                }
                if self.invocation.outbox.poll_answers(cx).is_ready() {
                    return Poll::Ready(Stopping::Answers);
                }
                if let Poll::Ready(Some(io)) = self.io.poll_next_unpin(cx) {
                    return Poll::Ready(Stopping::Io(io));
                }
                grace.as_mut().poll(cx).map(|()| Stopping::Grace)
            })
            .await;
            match next {
                Stopping::One(done) => self.finished(done),
                Stopping::Batch(done) => self.batch_ended(done),
                Stopping::Io(io) => self.io_done(io),
                Stopping::Answers => self.take_answers(),
                Stopping::Grace => {
                    tracing::warn!(
                        count = running.len() + batches.len(),
                        awaiting_publishes = self.machine.status().awaiting_publishes,
                        grace = ?self.shutdown_grace,
                        "stopping: handlers still running, or publishes not answered, after the \
                         grace period; their messages stay unacknowledged and come back"
                    );
                    // Dropped: cancelled, no outcome. Closing the consumer releases them.
                    running.clear();
                    batches.clear();
                    break;
                }
            }
        }
        drop(grace);
        let now = self.runtime.now();
        self.machine.handle(Event::Abandon, now);
        self.carry(&mut running, &mut batches, now, one, batch);
        self.flush().await;
        self.release();
        self.show_gauges(running.len());
        self.timer = None;
        self.consumer.close().await;
    }
}

/// The next batch that ended, if one did. Not inlined: the driver's loop, where the handler
/// of one message runs, stays as small as without batch handlers.
#[inline(never)]
fn poll_batches<B: Future>(
    batches: &mut Slots<B>,
    cx: &mut Context<'_>,
) -> Poll<Option<B::Output>> {
    batches.poll_next(cx)
}

/// A number drawn from a message id, the same for the same id: what the backoff's jitter is
/// drawn from, so that a run repeats exactly (FNV-1a over the id as it prints).
fn seed_of<Id: std::fmt::Display>(id: &Id) -> u64 {
    struct Fnv(u64);
    impl std::fmt::Write for Fnv {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for byte in s.bytes() {
                self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01B3);
            }
            Ok(())
        }
    }
    let mut hash = Fnv(0xCBF2_9CE4_8422_2325);
    let _ = std::fmt::write(&mut hash, format_args!("{id}"));
    hash.0
}
