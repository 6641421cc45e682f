//! The driver loop.

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::oneshot;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use ruststream::batch::Spare;
use ruststream::completion::{Completion, Republish, Settlement, SubscriptionRules};
use ruststream::handler::{BoxFuture, Incoming, Publish};
use ruststream::machine::{
    Admission, Arrival, Call, Delivered, Ended, Gathered, MachineConfig, SubscriptionMachine,
};
use ruststream::middleware::{Delivery, End, Entered, Stack};
use ruststream::publish::{Answered, HandlerPort, Origin, Outbox, Receipt, Token};
use ruststream::runtime::{Runtime, Sleep};
use ruststream::{Handler, Instant};

use super::ended::Ran;
use super::in_span::InSpan;
use super::instruments::{Instruments, SettlementCall};
use super::slots::Slots;
use super::transactions::Ended as TxnEnded;
use super::transactions::{self, Transactions};
use super::{retry_letter, ConsumerPort, DeadLetter, Received, RetryLetter, Why};
use crate::layers::HandlerLayers;
use crate::report;
use crate::transaction::{Transaction, TransactionSettings};

/// How many events a driver handles before it yields to its executor once.
const YIELD_EVERY: u32 = 64;

/// What a driver needs besides its consumer.
pub(crate) struct DriverConfig<S> {
    pub(crate) state: Arc<S>,
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) rules: SubscriptionRules,
    pub(crate) concurrency: usize,
    /// The layers around the handler, mounted for it (`Stack::mount`).
    pub(crate) stack: Stack,
    /// Counts every delivery handed to the handler, for the broker's `handled`.
    pub(crate) handled: Arc<super::Handled>,
    /// The broker's publishing port, for handlers' `Publisher` parameters (behind the
    /// layers' publish hooks, with the registration's compression).
    pub(crate) publisher: Option<Arc<dyn Publish>>,
    /// The broker's publishing port as it is, for the copies the machine orders.
    pub(crate) copies: Arc<dyn Publish>,
    /// How long a stopping driver lets running handlers finish.
    pub(crate) shutdown_grace: std::time::Duration,
    /// Where messages out of attempts go, when the registration declared it.
    pub(crate) dead_letter: Option<DeadLetter>,
    /// Where `retry_later` republishes, when the registration declared it.
    pub(crate) retry: Option<RetryLetter>,
    /// The subscribed topics, for the lines that name a delivery.
    pub(crate) topic: Arc<str>,
    /// Whether deliveries of one key run one at a time, in order.
    pub(crate) key_ordered: bool,
    /// Whether a retried message keeps its key until it comes back.
    pub(crate) ordered_retries: bool,
    /// For a batch handler, how its deliveries are gathered into batches.
    pub(crate) batch: Option<ruststream::batch::BatchPolicy>,
    /// For a transactional registration, how its transactions are opened.
    pub(crate) transactions: Option<TransactionSettings>,
}

/// What every handler invocation of a driver uses, shared: one reference count per delivery
/// rather than one per part.
struct Invocation<S, H> {
    handler: Arc<H>,
    state: Arc<S>,
    runtime: Arc<dyn Runtime>,
    layers: HandlerLayers,
    publisher: Option<Arc<dyn Publish>>,
    /// Where the answers of the handlers' publishes go.
    outbox: Arc<Outbox>,
    subscription: Arc<str>,
    key_ordered: bool,
    /// For a transactional registration, how each delivery's transaction is opened.
    transactions: Option<TransactionSettings>,
}

impl<S, H> Invocation<S, H> {
    /// The publisher lent to the handler of delivery `token`, which counts what it publishes.
    #[inline(always)]
    fn lend(&self, token: Token) -> Option<HandlerPort<'_>> {
        (self.publisher.as_ref()).map(|p| HandlerPort::new(p).counted(&self.outbox, token))
    }
}

/// What the layers' `completed` hooks need of a delivery the machine decides the end of,
/// besides the delivery itself.
struct Kept {
    /// The error that came with its end (also the copy's `DEAD_LETTER_ERROR`).
    error: Option<String>,
    /// When its handling started, and ended.
    started: Instant,
    ended: Instant,
    /// The layers it passed.
    entered: Entered,
    /// Whether the handler was called.
    by_handler: bool,
}

impl Kept {
    /// What to keep of `delivery`, which ended as `end` after passing the layers `entered`.
    fn of(entered: Entered, delivery: &Delivery<'_>, end: &End<'_>) -> Self {
        Kept {
            error: end.error().map(|error| error.to_string()),
            started: delivery.started(),
            ended: end.ended(),
            entered,
            by_handler: end.by_handler(),
        }
    }
}

/// A handler invocation that ended.
struct Finished<Id> {
    id: Delivered<Id>,
    completion: Completion,
    /// When the handler ended: the time its outcome is settled at (a `retry_after` wait
    /// counts from it), read once for the duration metric and the settlement.
    ended: Instant,
    token: Token,
    /// How many messages the handler published.
    publishes: u32,
    /// The delivery's attempt count (its redelivery count, copies included).
    attempt: u32,
    /// What only some deliveries carry: the key of a key-ordered one, the content of one the
    /// machine may copy. One pointer, so that what every delivery carries stays small.
    tail: Option<Box<Tail<Id>>>,
}

impl<Id> Finished<Id> {
    /// Keep `copy` with it, for the copy the machine may order.
    fn keep_copy(&mut self, copy: Box<CopySource<Id>>) {
        match &mut self.tail {
            Some(tail) => tail.copy = Some(copy),
            None => {
                self.tail = Some(Box::new(Tail {
                    key: None,
                    span: None,
                    copy: Some(copy),
                    txn: None,
                }))
            }
        }
    }
}

/// What a batch gives back when it ends: each delivery's end, and its lists, emptied, for
/// the next batch (a batch's lists are large: allocating them anew for each batch costs more
/// than batching saves, as `scripts/bench` showed).
struct BatchEnd<Id> {
    ends: Vec<Finished<Id>>,
    /// The machine's storage the batch was handed in.
    storage: Vec<Gathered<(Received<Id>, Admission)>>,
    lists: Lists,
}

/// One delivery of a batch, as the layers and the handler take it.
struct Member<'a> {
    delivery: Delivery<'a>,
    entered: Entered,
    /// What ran where the handler was not called; `None` where it was due.
    ran: Option<Ran>,
}

/// A batch's lists of what borrows from it, emptied between batches.
#[derive(Default)]
struct Lists {
    members: Vec<Member<'static>>,
    messages: Vec<Incoming<'static>>,
    /// What the handler's call keeps from one batch to the next (its values and answers).
    spare: Spare,
}

/// `view_of`, as the closure that reads a batch member's message (in an `Option`, to fill an
/// array) for the borrow `'a` of the batch: a closure's signature alone would not tie what
/// it returns to its argument's borrow, and a function returning `impl Fn` would hide that
/// the view has nothing to drop, which an array holding views that borrow it needs.
fn views_for<'a, Id: 'a, V>(
    view_of: impl Fn(&'a Gathered<(Received<Id>, Admission)>) -> Option<V>,
) -> impl Fn(&'a Gathered<(Received<Id>, Admission)>) -> Option<V> {
    view_of
}

/// The next batch that ended, if one did. Not inlined: the driver's loop, where the handler
/// of one message runs, stays as small as before batch handlers (inlined, it cost each
/// message of a handler of one about 130 instructions, in copies of the loop's state).
#[inline(never)]
fn poll_batches<B: Future>(
    batches: &mut Slots<B>,
    cx: &mut Context<'_>,
) -> Poll<Option<B::Output>> {
    batches.poll_next(cx)
}

/// How many views of a batch's messages are kept on the batch's own stack (the future's
/// state, 8 bytes each) before they take a list on the heap: a batch of up to this many
/// allocates none.
const VIEWS_INLINE: usize = 128;

/// A batch as the machine hands it over: its deliveries, each with its admission.
type Members<Id> = Vec<Gathered<(Received<Id>, Admission)>>;

/// `list`, emptied, as a list of another type of the same size and alignment, with its
/// allocation: the standard library collects a mapped `vec::IntoIter` in place. What a
/// batch's lists hold borrows from the batch; their room is kept from one batch to the next.
fn recycle<T, U>(mut list: Vec<T>) -> Vec<U> {
    list.clear();
    list.into_iter()
        .map(|_| unreachable!("the list was emptied"))
        .collect()
}

/// What only some finished invocations carry.
struct Tail<Id> {
    /// Its key where the subscription keeps per-key order.
    key: Option<String>,
    /// The delivery's span, to log its settlement in, where it is enabled (DEBUG): at the
    /// default level it is off, and lines about the delivery make their own context
    /// (`report::context`).
    span: Option<tracing::Span>,
    /// The delivery, where its end may call for a copy (`Completion::may_republish`).
    copy: Option<Box<CopySource<Id>>>,
    /// Its transaction, for a transactional registration, with the token the machine names
    /// it by.
    txn: Option<(Token, Transaction)>,
}

/// A delivery kept for the copy the machine may order (or the delay it decides), until the
/// layers are told how it ended.
struct CopySource<Id> {
    received: Received<Id>,
    kept: Kept,
}

/// A copy the machine ordered, until its answer comes.
struct CopyInFlight<Id> {
    republish: Republish,
    /// The topic it goes to.
    to: Arc<str>,
    span: tracing::Span,
    /// The delivery it is a copy of, for the layers' `completed`.
    source: Box<CopySource<Id>>,
    message_id: String,
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

/// Runs one subscription until told to stop: the I/O loop around its
/// [`SubscriptionMachine`], which decides everything (what to take, start, call, copy and
/// release).
pub(crate) struct Driver<C: ConsumerPort, S, H> {
    consumer: C,
    config: DriverConfig<S>,
    /// Held deliveries keep their admission: a move to the dead-letter topic waits for its key
    /// as a handler call does.
    machine: SubscriptionMachine<C::Id, (Received<C::Id>, Admission)>,
    invocation: Arc<Invocation<S, H>>,
    /// The sleep for the machine's next deadline, with that deadline. A fired sleep is moved
    /// on only after the calls it released were made: what `RunningBroker::in_flight` promises
    /// (work a fired sleep releases counts as in flight until the sleep is let go).
    timer: Option<(Instant, Sleep)>,
    /// The handler's metric handles.
    instruments: Instruments,
    /// The latest time read while handling the current event (a handler's end), for the
    /// flush that follows it: a time read a moment ago is never later than now, so no deadline
    /// fires early, and one that came due meanwhile has its timer fire at once.
    read_at: Option<Instant>,
    /// The acknowledgements of the flush under way (empty between flushes).
    acks: Vec<C::Id>,
    /// The negative acknowledgements of the flush under way (empty between flushes).
    nacks: Vec<C::Id>,
    /// The next delivery's token.
    next_token: u32,
    /// The answers taken from the outbox, being handed to the machine (empty between turns).
    answers: Vec<Answered>,
    /// The copies ordered and not answered yet.
    copies: HashMap<Token, CopyInFlight<C::Id>>,
    /// A delivery of each commit sent and not answered, acquired: the machine lets the
    /// deliveries go as they wait for their commit, and a virtual clock must not move while
    /// one is in flight, or the ack timeout could bring a message back before its failed
    /// commit's negative acknowledgement, and then the nack again (twice).
    committing: HashMap<Token, C::Id>,
    /// Those whose commit was answered: let go after the flush that makes what it released.
    commit_answered: Vec<C::Id>,
    /// The copies being handed to the producer (waiting for room, or for the topic's
    /// partitions); each is answered through the outbox either way.
    sending: FuturesUnordered<BoxFuture<'static, ()>>,
    /// The list the next batch's ends are written to, kept from the last: a batch's lists
    /// are large, and allocating them anew would cost more than the batch saves.
    spare_ends: Vec<Finished<C::Id>>,
    /// The lists of the next batch's members and messages, kept from the last.
    spare_lists: Lists,
    /// When the first delivery of the batch being gathered was gathered.
    gathered_since: Option<Instant>,
    /// A transactional registration's transactions, from the handler's end until the call
    /// that ends them.
    txns: Transactions,
}

impl<C: ConsumerPort, S: Send + Sync + 'static, H: Handler<S>> Driver<C, S, H> {
    pub(crate) fn new(consumer: C, config: DriverConfig<S>, handler: Arc<H>) -> Self {
        let rules = config.rules.clone();
        let machine_config = MachineConfig {
            key_ordered: config.key_ordered,
            ordered_retries: config.ordered_retries,
            max_attempts: config.dead_letter.as_ref().and_then(|d| d.max_attempts),
            batch_index_acks: consumer.acks_batch_index(),
            transactional: config.transactions.as_ref().map(|t| t.policy),
            dead_letter_topic: config.dead_letter.is_some(),
            retry_topic: config.retry.is_some(),
            batch: config.batch,
            ..MachineConfig::new(config.concurrency)
        };
        let machine =
            SubscriptionMachine::new(rules.clone(), machine_config, C::entry).with_seed(seed_of);
        let instruments = Instruments::new(handler.name());
        let invocation = Arc::new(Invocation {
            handler,
            state: config.state.clone(),
            runtime: config.runtime.clone(),
            layers: HandlerLayers::new(&config.stack),
            publisher: config.publisher.clone(),
            outbox: Outbox::new(),
            subscription: rules.subscription_name(),
            key_ordered: machine.config().key_ordered,
            transactions: config.transactions.clone(),
        });
        Driver {
            invocation,
            instruments,
            consumer,
            machine,
            config,
            timer: None,
            read_at: None,
            acks: Vec::new(),
            nacks: Vec::new(),
            next_token: 0,
            answers: Vec::new(),
            copies: HashMap::new(),
            committing: HashMap::new(),
            commit_answered: Vec::new(),
            sending: FuturesUnordered::new(),
            spare_ends: Vec::new(),
            spare_lists: Lists::default(),
            gathered_since: None,
            txns: Transactions::default(),
        }
    }

    /// Run until `stop` fires (or the consumer closes), then shut down gracefully: stop
    /// pulling, let running handlers finish and their publishes be answered, flush
    /// settlements, abandon `retry_after` waits, close the consumer.
    pub(crate) async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        enum Event {
            Stop,
            Closed,
            /// A delivery arrived, a handler finished or publishes were answered, and it was
            /// dealt with where it was polled (a delivery is not moved through an event: each
            /// move is a copy).
            Handled,
            Timer,
            /// Nothing is ready, and something happened since the last flush.
            Idle,
        }
        // The running handler invocations, and a batch handler's running batches; locals, as
        // their futures' types have no name.
        let mut running = Slots::new();
        let mut batches = Slots::new();
        let mut events: u32 = 0;
        // Events handled since the last flush. The calls they made due are made when nothing
        // else is ready, when the timer fires, and at the latest every `YIELD_EVERY` events:
        // what settles in one burst of events leaves as one command per kind, and no call
        // waits for time to pass (a sleep starts only after a flush).
        let mut unflushed = false;
        let mut flush_now = true;
        // Start `$received` and what it lets start: a handler that finishes as it starts is
        // settled at once, and may let the next delivery of its key start. A macro, as the
        // invocations' future type has no name to write a method over.
        // (A delivery is moved as little as can be: each move is a copy of 192 bytes.)
        // A batch handler's delivery is gathered for its batch instead (`hand_over`).
        macro_rules! start_one {
            ($received:expr, $admission:expr) => {{
                if self.machine.gathers() {
                    self.gather($received, $admission);
                } else {
                    let (index, mut slot) = running.free_slot();
                    slot.set(Some(self.begin($received, $admission)));
                    let finished = running.started(index);
                    if let Some(done) = finished {
                        self.finish(done);
                    }
                }
            }};
        }
        // Start every delivery the machine lets start now.
        macro_rules! start_ready {
            () => {{
                while let Some(((received, admission), parked)) = self.machine.poll_start() {
                    if parked {
                        self.consumer.acquire(&received.id);
                    }
                    start_one!(received, admission);
                }
            }};
        }
        loop {
            events = events.wrapping_add(1);
            let burst_ended = events.is_multiple_of(YIELD_EVERY);
            if burst_ended {
                // A subscription that always has something ready (a flood of deliveries, or a
                // message redelivered at once forever) still lets the other tasks of a
                // single-threaded executor run.
                ruststream::runtime::yield_now().await;
            }
            if self.machine.gathers() {
                // A batch that ended as it started left settlements to flush.
                unflushed |= self.hand_over_full(&mut batches, Self::begin_batch);
            }
            if flush_now || (burst_ended && unflushed) {
                if self.machine.awaits_retries() {
                    let now = self.config.runtime.now();
                    while let Some(((received, admission), parked)) = self.machine.poll_expired(now)
                    {
                        if parked {
                            self.consumer.acquire(&received.id);
                        }
                        tracing::warn!(
                            message_id = %received.id,
                            grace = ?ruststream::machine::RETRY_RETURN_GRACE,
                            "a retried message did not come back to this consumer in time \
                             (another consumer may have its key now): the messages held \
                             behind it go on without it"
                        );
                        start_one!(received, admission);
                        start_ready!();
                    }
                }
                // Batches due by their max wait go first: one that ends as it starts has its
                // settlements made by this flush, before its deliveries are released below
                // (released first, they would stop counting as in flight with their
                // acknowledgements still to send).
                self.hand_over(&mut batches, Self::begin_batch);
                self.flush().await;
                self.show_gauges(running.len());
                self.arm_timer();
                // Where the driver is about to wait, gathered deliveries wait for their
                // batch's max wait (or for a running batch), not for a handler: they do not
                // count as in flight meanwhile. A flush within a burst leaves them be (parking
                // each and acquiring it again would cost both for nothing), and asks for one
                // more flush once the burst is over.
                let waits = flush_now;
                if waits {
                    let consumer = &mut self.consumer;
                    self.machine
                        .park_gathered(|(received, _)| consumer.release(&received.id));
                    // The last batch's decoded values, kept to be dropped at the next
                    // decode (`Spare`), go now: a quiet subscription holds none.
                    self.spare_lists.spare.drop_values();
                }
                while let Some(id) = self.machine.poll_release() {
                    self.consumer.release(&id);
                }
                for id in self.commit_answered.drain(..) {
                    self.consumer.release(&id);
                }
                let gathered = self.machine.batches().1 > 0;
                (flush_now, unflushed) = (false, !waits && gathered);
            }
            let event = poll_fn(|cx| {
                if stop.poll_unpin(cx).is_ready() {
                    return Poll::Ready(Event::Stop);
                }
                if let Poll::Ready(Some(done)) = running.poll_next(cx) {
                    self.finish(done);
                    start_ready!();
                    return Poll::Ready(Event::Handled);
                }
                if batches.len() > 0 {
                    if let Poll::Ready(Some(done)) = poll_batches(&mut batches, cx) {
                        self.batch_ended(done);
                        return Poll::Ready(Event::Handled);
                    }
                }
                if self.txns.ending() {
                    if let Poll::Ready(ended) = self.txns.poll_ended(cx) {
                        self.txn_ended(ended);
                        start_ready!();
                        return Poll::Ready(Event::Handled);
                    }
                }
                // Answers matter once a delivery waits for them (one that comes while its
                // handler runs is taken when the handler ends): no look, and no waker to
                // register, on every turn of a subscription that does not publish.
                if self.machine.awaiting_publishes() > 0 {
                    if self.invocation.outbox.poll_answers(cx).is_ready() {
                        self.take_answers();
                        start_ready!();
                        return Poll::Ready(Event::Handled);
                    }
                    if !self.sending.is_empty() {
                        while let Poll::Ready(Some(())) = self.sending.poll_next_unpin(cx) {}
                    }
                }
                if self.machine.wants_delivery() {
                    match self.consumer.poll_receive(cx) {
                        Poll::Ready(Some(mut received)) => {
                            if self.config.retry.is_some() {
                                // One attempt count: the copies it went through on the
                                // retry topic, plus the broker's count of this one.
                                let copies = retry_letter::republished(&received);
                                if copies > 0 {
                                    let broker = received.redelivery_count.unwrap_or(0);
                                    received.redelivery_count = Some(broker.saturating_add(copies));
                                }
                            }
                            let admission = self.machine.arrive(&Arrival {
                                id: &received.id,
                                batch: received.batch,
                                redelivery_count: received.redelivery_count,
                            });
                            if admission == Admission::Skip {
                                tracing::debug!(
                                    message_id = %received.id,
                                    "not handed over again: its batch came back for a sibling"
                                );
                            } else if self.machine.start(
                                admission,
                                received.key.as_deref(),
                                &received.id,
                            ) {
                                start_one!(received, admission);
                                start_ready!();
                            } else {
                                // Waits for the delivery of its key that runs.
                                let key = received.key.clone().unwrap_or_default();
                                let id = received.id.clone();
                                if self
                                    .machine
                                    .hold(&key, &id, (received, admission))
                                    .is_some()
                                {
                                    tracing::debug!(
                                        message_id = %id,
                                        "not held twice: a copy of it waits for its key already"
                                    );
                                }
                            }
                            return Poll::Ready(Event::Handled);
                        }
                        Poll::Ready(None) => return Poll::Ready(Event::Closed),
                        Poll::Pending => {}
                    }
                }
                if let Some((_, sleep)) = &mut self.timer {
                    if sleep.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Event::Timer);
                    }
                }
                if unflushed {
                    return Poll::Ready(Event::Idle);
                }
                Poll::Pending
            })
            .await;
            match event {
                Event::Stop | Event::Closed => break,
                Event::Handled => unflushed = true,
                // The due calls are made by `flush` at the top of the loop, before a fired
                // sleep is replaced.
                Event::Timer | Event::Idle => flush_now = true,
            }
        }
        self.shutdown(running, batches, Self::begin_batch).await;
    }

    /// The handler invocation for `received`: the layers' `before` hooks, the handler (unless
    /// a layer answered, or the delivery is out of attempts), their `after` hooks, and where
    /// its end is final already their `completed` hooks; then what the machine gets back.
    ///
    /// The handler's `Incoming` is built where the handler keeps it (the layers read theirs
    /// through `message`), and what the machine gets back is moved out of `received` field by
    /// field: moving a whole delivery copies all of it, and each copy shows in the figures.
    #[inline(always)]
    fn begin(
        &mut self,
        received: Received<C::Id>,
        admission: Admission,
    ) -> impl Future<Output = Finished<C::Id>> + Send + 'static {
        self.config.handled.bump();
        let token = Token(self.next_token);
        self.next_token = self.next_token.wrapping_add(1);
        let invocation = self.invocation.clone();
        // A transactional registration's delivery runs in the transaction the machine puts
        // it in (its own, or a group's): its handler publishes in it.
        let joined = (self.config.transactions.as_ref()).map(|settings| {
            let joined = (self.machine).transaction_of(token, self.config.runtime.now());
            (joined.leader, self.txns.join(joined, settings))
        });
        async move {
            let inv = &*invocation;
            let (txn, txn_port, not_opened) =
                transactions::opened(inv.transactions.as_ref(), joined).await;
            // In a transaction its publishes are not counted: the commit waits for them, and
            // fails if one did (so they may be batched until it).
            let lent = match &txn_port {
                Some(port) => Some(HandlerPort::new(port)),
                None if not_opened.is_some() => None,
                None => inv.lend(token),
            };
            let message = || incoming_of::<C>(&received);
            let out_of_attempts = admission == Admission::DeadLetter;
            let unreadable = received.unreadable();
            let started = inv.runtime.now();
            let mut delivery =
                Delivery::new(&message, inv.handler.name(), &inv.subscription, started);
            unreadable.inspect(|why| delivery.set_unreadable(why));
            if out_of_attempts {
                delivery.set_out_of_attempts();
            }
            let entered = inv.layers.before(&mut delivery);
            let ran = match (out_of_attempts, entered.answer(), unreadable) {
                _ if not_opened.is_some() => {
                    let failed = not_opened.expect("matched as Some");
                    let answer = ruststream::Answer::new(ruststream::HandlerOutcome::Retry);
                    Ran::Handler(Ok(Ok(answer.because(failed))))
                }
                (true, _, _) => Ran::OutOfAttempts,
                (false, Some(outcome), _) => Ran::Answered(outcome),
                (false, None, Some(reason)) => Ran::unreadable(inv.handler.name(), reason),
                (false, None, None) => {
                    let incoming = incoming_of::<C>(&received).with_publisher(lent.as_ref());
                    let call = AssertUnwindSafe(inv.handler.call(incoming, &inv.state));
                    Ran::Handler(InSpan::new(call.catch_unwind(), delivery.span()).await)
                }
            };
            let publishes = lent.as_ref().map_or(0, HandlerPort::seal);
            let mut end = ran.end(inv.runtime.now());
            let done = match delivery.span().is_disabled() {
                true => inv.layers.end(entered, &delivery, &mut end),
                false => (delivery.span().clone())
                    .in_scope(|| inv.layers.end(entered, &delivery, &mut end)),
            };
            let kept = (!done).then(|| Kept::of(entered, &delivery, &end));
            let attempt = received.redelivery_count.unwrap_or(0);
            let ends = Ends(end.completion(), end.ended(), publishes, attempt);
            let span = delivery.take_span();
            drop(delivery);
            let batch = received.batch.map(|slot| slot.place());
            match kept {
                None => {
                    let (id, key) = (received.id, received.key.filter(|_| inv.key_ordered));
                    finished(Delivered { batch, id }, token, ends, key, span, None, txn)
                }
                Some(kept) => {
                    let key = received.key.clone().filter(|_| inv.key_ordered);
                    let (id, copy) = (received.id.clone(), Box::new(CopySource { received, kept }));
                    let copy = Some(copy);
                    finished(Delivered { batch, id }, token, ends, key, span, copy, txn)
                }
            }
        }
    }

    /// Gather a batch handler's delivery for its batch (inlined into the loop that received
    /// it, so that the delivery is written where it is kept). The clock is read for the first of a
    /// batch, whose wait the batch's max wait counts from; the others are gathered at its
    /// time (a delivery left over from a cut batch then waits no longer than the max wait).
    #[inline(always)]
    fn gather(&mut self, received: Received<C::Id>, admission: Admission) {
        let bytes = received.payload.len();
        let now = match (self.machine.batches().1, self.gathered_since) {
            (1.., Some(since)) => since,
            _ => {
                let now = self.config.runtime.now();
                self.gathered_since = Some(now);
                now
            }
        };
        self.machine.gather((received, admission), bytes, now);
    }

    /// Start every batch the machine hands over now, with `begin` (`begin_batch`, passed
    /// in as the batches' future type has no name to write here); whether one ended as it
    /// started (its settlements wait for the next flush).
    #[inline(never)]
    fn hand_over<B>(
        &mut self,
        batches: &mut Slots<B>,
        begin: impl Fn(&mut Self, Members<C::Id>) -> B,
    ) -> bool
    where
        B: Future<Output = BatchEnd<C::Id>>,
    {
        if self.machine.batches().1 == 0 {
            return false;
        }
        let now = self.config.runtime.now();
        self.start_batches(batches, now, begin)
    }

    /// Start the batches due whatever the time: full ones (all, once draining). It runs after
    /// every event, so it does not read the clock: it asks as of when the gathered batch
    /// began, a time already read. A batch due by its max wait goes at the next flush
    /// (`hand_over`), which its timer, an idle turn or the end of a burst brings.
    #[inline]
    fn hand_over_full<B>(
        &mut self,
        batches: &mut Slots<B>,
        begin: impl Fn(&mut Self, Members<C::Id>) -> B,
    ) -> bool
    where
        B: Future<Output = BatchEnd<C::Id>>,
    {
        match (self.machine.batch_full(), self.gathered_since) {
            (true, Some(since)) => self.start_batches(batches, since, begin),
            _ => false,
        }
    }

    /// Start every batch the machine hands over as of `now`, each in a slot of `batches`
    /// (kept from one batch to the next: no allocation per batch); one that ends as it starts
    /// is finished at once, and then the answer is `true`.
    #[inline(never)]
    fn start_batches<B>(
        &mut self,
        batches: &mut Slots<B>,
        now: Instant,
        begin: impl Fn(&mut Self, Members<C::Id>) -> B,
    ) -> bool
    where
        B: Future<Output = BatchEnd<C::Id>>,
    {
        let mut ended = false;
        while let Some(batch) = self.machine.poll_batch(now) {
            for gathered in batch.iter().filter(|gathered| gathered.parked) {
                self.consumer.acquire(&gathered.delivery.0.id);
            }
            self.consumer
                .restart_ack_timeout(batch.iter().map(|gathered| &gathered.delivery.0.id));
            let (index, mut slot) = batches.free_slot();
            slot.set(Some(begin(self, batch)));
            if let Some(end) = batches.started(index) {
                self.batch_ended(end);
                ended = true;
            }
        }
        ended
    }

    /// The invocation of a batch handler: each delivery passes the layers' `before` hooks on
    /// its own, those the handler is due (not answered by a layer, not out of attempts,
    /// readable) go to it in one call, and each ends on its own: its `after` and `completed`
    /// hooks, and what the machine gets back, as `begin` does for one. The batch is the
    /// machine's own storage, and each delivery stays in it: one list a batch for what the
    /// layers see of the deliveries, one for the handler's messages, one for what the machine
    /// gets back.
    fn begin_batch(
        &mut self,
        mut members: Members<C::Id>,
    ) -> impl Future<Output = BatchEnd<C::Id>> + Send + 'static {
        let first = self.next_token;
        self.next_token = first.wrapping_add(members.len() as u32);
        self.config.handled.bump_by(members.len() as u64);
        let invocation = self.invocation.clone();
        let mut done = std::mem::take(&mut self.spare_ends);
        done.reserve(members.len());
        let lists = std::mem::take(&mut self.spare_lists);
        // A transactional registration's batch runs in one transaction of its own: its
        // handler publishes in it, and its messages' acknowledgements commit with it.
        let joined = (self.config.transactions.as_ref()).map(|settings| {
            let now = self.config.runtime.now();
            let joined =
                (self.machine).transaction_of_batch(Token(first), members.len() as u32, now);
            (joined.leader, self.txns.join(joined, settings))
        });
        async move {
            let inv = &*invocation;
            let (txn, txn_port, not_opened) =
                transactions::opened(inv.transactions.as_ref(), joined).await;
            let name = inv.handler.name();
            let started = inv.runtime.now();
            // The deliveries whose end the machine decides, with what their copy needs.
            let mut kept: Vec<(usize, Kept)> = Vec::new();
            let lists = {
                // In an array on the batch's own stack up to `VIEWS_INLINE`, rather than kept
                // from one batch to the next as the other lists are: a delivery's view of its
                // message borrows it for as long as the view lives, so a list of views names
                // that borrow in its type, and could not be turned back into an empty list.
                // (An array has no `Drop` of its own, so it may hold such views; a `SmallVec`
                // may not.)
                let spilled: Vec<_>;
                let mut inline = [None; VIEWS_INLINE];
                // Made after the lists it fills, to be dropped before them.
                let view_of = views_for(|gathered| {
                    let received = &gathered.delivery.0;
                    Some(move || incoming_of::<C>(received))
                });
                let views = match members.len() <= VIEWS_INLINE {
                    true => {
                        for (slot, gathered) in inline.iter_mut().zip(&members) {
                            *slot = view_of(gathered);
                        }
                        &inline[..members.len()]
                    }
                    false => {
                        spilled = members.iter().map(&view_of).collect();
                        &spilled[..]
                    }
                };
                let views = views
                    .iter()
                    .map(|view| view.as_ref().expect("one view a member"));
                let mut batch: Vec<Member<'_>> = recycle(lists.members);
                batch.extend((members.iter().zip(views)).map(|(gathered, view)| {
                    let (received, admission) = &gathered.delivery;
                    let mut delivery = Delivery::new(view, name, &inv.subscription, started);
                    let unreadable = received.unreadable();
                    unreadable.inspect(|why| delivery.set_unreadable(why));
                    let out_of_attempts = *admission == Admission::DeadLetter;
                    if out_of_attempts {
                        delivery.set_out_of_attempts();
                    }
                    let entered = inv.layers.before(&mut delivery);
                    let ran = match (out_of_attempts, entered.answer(), unreadable) {
                        (true, _, _) => Some(Ran::OutOfAttempts),
                        (false, Some(outcome), _) => Some(Ran::Answered(outcome)),
                        (false, None, Some(why)) => Some(Ran::unreadable(name, why)),
                        (false, None, None) => None,
                    };
                    Member {
                        delivery,
                        entered,
                        ran,
                    }
                }));
                // A batch whose transaction could not be opened is not handed to its
                // handler: each message it was due comes back, as after `retry()`.
                if let Some(failed) = &not_opened {
                    for member in batch.iter_mut().filter(|member| member.ran.is_none()) {
                        let answer = ruststream::Answer::new(ruststream::HandlerOutcome::Retry);
                        member.ran = Some(Ran::Handler(Ok(Ok(answer.because(failed.clone())))));
                    }
                }
                // The handler's answers, one per delivery it was due, taken in order below.
                let mut answered = None;
                let mut spare = lists.spare;
                let due = batch.iter().filter(|member| member.ran.is_none()).count();
                // What it publishes, each message it was due waits for.
                let port = txn_port.as_ref().or(inv.publisher.as_ref());
                let waiting: Vec<Token> = match (due, port) {
                    (0, _) | (_, None) => Vec::new(),
                    _ if txn_port.is_some() => Vec::new(),
                    _ => (batch.iter().enumerate())
                        .filter(|(_, member)| member.ran.is_none())
                        .map(|(i, _)| Token(first.wrapping_add(i as u32)))
                        .collect(),
                };
                let lent = match (&txn_port, port) {
                    // As a delivery's in a transaction: the commit waits for them.
                    (Some(port), _) => Some(HandlerPort::new(port)),
                    (None, Some(port)) => {
                        Some(HandlerPort::new(port).counted_batch(&inv.outbox, &waiting))
                    }
                    (None, None) => None,
                };
                let mut messages: Vec<Incoming<'_>> = recycle(lists.messages);
                if due > 0 {
                    messages.reserve(due);
                    messages.extend(
                        (members.iter().zip(&batch))
                            .filter(|(_, member)| member.ran.is_none())
                            .map(|(gathered, _)| {
                                incoming_of::<C>(&gathered.delivery.0).with_publisher(lent.as_ref())
                            }),
                    );
                    let span =
                        tracing::debug_span!("batch", handler = name, messages = messages.len());
                    let call =
                        AssertUnwindSafe(inv.handler.call_batch(&messages, &inv.state, &mut spare));
                    answered = Some(InSpan::new(call.catch_unwind(), &span).await);
                }
                let publishes = lent.as_ref().map_or(0, HandlerPort::seal);
                // Read in order; the list goes back to `spare` once read.
                let mut answers = (answered.as_mut())
                    .map(|answered| answered.as_mut().map(|list| list.drain(..)));
                let ended = inv.runtime.now();
                for (i, (member, gathered)) in batch.iter_mut().zip(&members).enumerate() {
                    let (delivery, entered) = (&mut member.delivery, member.entered);
                    let received = &gathered.delivery.0;
                    // Built here rather than stored in the member: one copy fewer.
                    let called;
                    let was_due = member.ran.is_none();
                    let ran = match &member.ran {
                        Some(ran) => ran,
                        None => {
                            called = Ran::Handler(match &mut answers {
                                Some(Ok(answers)) => answers.next().ok_or_else(|| {
                                    Box::new("the batch handler gave fewer answers than messages")
                                        as Box<dyn std::any::Any + Send>
                                }),
                                _ => Err(Box::new("the batch handler panicked")),
                            });
                            &called
                        }
                    };
                    let mut end = ran.end(ended);
                    let hooks_done = match delivery.span().is_disabled() {
                        true => inv.layers.end(entered, delivery, &mut end),
                        false => (delivery.span().clone())
                            .in_scope(|| inv.layers.end(entered, delivery, &mut end)),
                    };
                    if !hooks_done {
                        kept.push((i, Kept::of(entered, delivery, &end)));
                    }
                    let attempt = received.redelivery_count.unwrap_or(0);
                    let publishes = if was_due { publishes } else { 0 };
                    let ends = Ends(end.completion(), end.ended(), publishes, attempt);
                    let token = Token(first.wrapping_add(i as u32));
                    let at = received.batch.map(|slot| slot.place());
                    let key = received.key.as_ref().filter(|_| inv.key_ordered).cloned();
                    let id = Delivered {
                        batch: at,
                        id: received.id.clone(),
                    };
                    let span = delivery.take_span();
                    done.push(finished(id, token, ends, key, span, None, txn.clone()));
                }
                drop(answers);
                if let Some(Ok(list)) = answered {
                    spare.keep_answers(list);
                }
                Lists {
                    members: recycle(batch),
                    messages: recycle(messages),
                    spare,
                }
            };
            // A delivery the machine may copy keeps its message until the copy is made.
            if !kept.is_empty() {
                let mut kept = kept.into_iter().peekable();
                for (i, gathered) in members.drain(..).enumerate() {
                    if let Some((_, kept)) = kept.next_if(|(at, _)| *at == i) {
                        let received = gathered.delivery.0;
                        done[i].keep_copy(Box::new(CopySource { received, kept }));
                    }
                }
            }
            members.clear();
            BatchEnd {
                ends: done,
                storage: members,
                lists,
            }
        }
    }

    /// A batch ended (in the driver's loop, or as it started): finish it, and gather what it
    /// lets start (the deliveries of its keys held behind it). Not inlined, with
    /// `poll_batches`, for the same reason.
    #[inline(never)]
    fn batch_ended(&mut self, done: BatchEnd<C::Id>) {
        self.batch_finished(done);
        while let Some(((received, admission), parked)) = self.machine.poll_start() {
            if parked {
                self.consumer.acquire(&received.id);
            }
            self.gather(received, admission);
        }
    }

    /// A batch ended: hand each of its deliveries to the machine, then let another batch run.
    /// Its lists are kept for the next batch.
    fn batch_finished(&mut self, end: BatchEnd<C::Id>) {
        let BatchEnd {
            ends: mut done,
            storage,
            lists,
        } = end;
        for done in done.drain(..) {
            self.finish(done);
        }
        if self.spare_ends.capacity() == 0 {
            self.spare_ends = done;
        }
        if self.spare_lists.members.capacity() == 0 {
            self.spare_lists = lists;
        }
        self.machine.batch_done(storage);
    }

    /// Hand a handler invocation that ended to the machine, and publish the copy it orders.
    /// Deliveries it lets start are left for `SubscriptionMachine::poll_start`.
    fn finish(&mut self, done: Finished<C::Id>) {
        let now = done.ended;
        self.read_at = Some(self.read_at.map_or(now, |read| read.max(now)));
        // Answers that came while the handler ran: a delivery whose publishes are all
        // confirmed by now is settled at once, not held. (Only its own publishes matter here:
        // the others' answers are taken as they come.)
        if done.publishes > 0 && self.invocation.outbox.has_answers() {
            self.take_answers();
        }
        let Finished {
            id,
            completion,
            ended: _,
            token,
            publishes,
            attempt,
            mut tail,
        } = done;
        if let Some((leader, txn)) = tail.as_mut().and_then(|tail| tail.txn.take()) {
            self.txns.keep(leader, txn);
        }
        // The common end: an acknowledgement, no publish, no key and no span (so nothing to
        // log the settlement in, and no copy to make). The machine settles it at once.
        let acked = matches!(
            completion,
            Completion::Returned(ruststream::HandlerOutcome::Ack)
        );
        if acked && publishes == 0 && tail.is_none() {
            let settlement = self.machine.finish(Ended {
                delivered: id,
                completion,
                at: now,
                key: None,
                token,
                publishes,
                attempt,
            });
            debug_assert!(matches!(settlement, Ok(Settlement::Ack)));
            tracing::debug!(?settlement, "settled");
            return;
        }
        // The tail stays in its box: what it holds for a copy is large, and is moved out
        // only where the machine orders one.
        let span = tail
            .as_mut()
            .and_then(|tail| tail.span.take())
            .unwrap_or_else(tracing::Span::none);
        // What the registration's backoff policy makes of a backoff, asked of the machine
        // first, for the record and the counters.
        let completion = match completion.is_backoff() {
            true => self.machine.resolve(completion, attempt, &id.id),
            false => completion,
        };
        // Logged in the delivery's span, so that a refusal names its topic and message id.
        let span_guard = span.enter();
        let message_id = id.id.clone();
        let settlement = self.machine.finish(Ended {
            delivered: id,
            completion,
            at: now,
            key: tail.as_ref().and_then(|tail| tail.key.as_deref()),
            token,
            publishes,
            attempt,
        });
        let republish = match &settlement {
            Ok(Settlement::Republish(republish)) => Some(*republish),
            Ok(settlement) => {
                tracing::debug!(?settlement, "settled");
                None
            }
            Err(error) => {
                let _context = report::context(
                    &span,
                    self.invocation.handler.name(),
                    &self.config.topic,
                    &message_id,
                );
                tracing::error!(%error, "outcome refused");
                self.instruments.refused.increment(1);
                None
            }
        };
        drop(span_guard);
        match republish {
            Some(republish) => {
                let source = tail
                    .and_then(|tail| tail.copy)
                    .expect("a copy is ordered only where kept");
                self.send_copy(token, republish, source, span);
            }
            // No copy ordered: the layers of a delivery kept for one are told now how it
            // ended (the others were told as it ended).
            None => {
                if let Some(source) = tail.and_then(|tail| tail.copy) {
                    let _entered = span.enter();
                    self.completed(&source, shown(completion));
                }
            }
        }
    }

    /// Tell the layers `source` passed that it ended as `completion`.
    fn completed(&self, source: &CopySource<C::Id>, completion: Completion) {
        let message = || incoming_of::<C>(&source.received);
        let invocation = &*self.invocation;
        let mut delivery = Delivery::new(
            &message,
            invocation.handler.name(),
            &invocation.subscription,
            source.kept.started,
        );
        if let Some(why) = source.received.unreadable() {
            delivery.set_unreadable(why);
        }
        let kept = &source.kept;
        let error = kept.error.as_ref().map(|e| e as &dyn std::fmt::Display);
        let end = End::new(completion, error, kept.ended, kept.by_handler);
        invocation.layers.completed(kept.entered, &delivery, &end);
    }

    /// Publish the copy of `source` the machine ordered for delivery `token`; its answer
    /// settles the delivery (`take_answers`).
    fn send_copy(
        &mut self,
        token: Token,
        republish: Republish,
        source: Box<CopySource<C::Id>>,
        span: tracing::Span,
    ) {
        let received = &source.received;
        let (message, to) = match republish {
            Republish::DeadLetter { reason } => {
                let dead_letter = self
                    .config
                    .dead_letter
                    .as_ref()
                    .expect("a dead-letter copy is ordered only where one is declared");
                let why = Why {
                    reason,
                    error: source.kept.error.as_deref(),
                };
                (dead_letter.copy(received, &why), dead_letter.topic.clone())
            }
            Republish::RetryTopic { delay, count } => {
                let retry = self
                    .config
                    .retry
                    .as_ref()
                    .expect("a retry copy is ordered only where a retry topic is declared");
                (retry.copy(received, delay, count), retry.topic.clone())
            }
        };
        let message_id = received.id.to_string();
        let copy_topic = to.to_string();
        self.copies.insert(
            token,
            CopyInFlight {
                republish,
                to,
                span,
                source,
                message_id,
            },
        );
        let receipt = Receipt::to(self.invocation.outbox.copy(token));
        // A transactional delivery's copy goes in a transaction of its own, with the
        // acknowledgement (its handler's is aborted: the attempt did not succeed).
        let own = (self.config.transactions.as_ref())
            .map(|settings| self.txns.copy_in_own(token, settings));
        let port = self.config.copies.clone();
        // The port tells the receipt whatever becomes of the send: its result is not needed.
        self.sending.push(Box::pin(async move {
            let port = match own {
                None => port,
                Some(own) => match own.await {
                    Ok(port) => port,
                    Err(error) => {
                        let error = ruststream::PublishError::broker(
                            copy_topic,
                            format!("could not open the transaction to copy in: {error}"),
                        );
                        return receipt.tell(Err(error));
                    }
                },
            };
            let _ = port.send(message, receipt).await;
        }));
    }

    /// Hand the publish answers waiting in the outbox to the machine: a delivery whose last
    /// answer came is settled now.
    fn take_answers(&mut self) {
        let mut answers = std::mem::take(&mut self.answers);
        self.invocation.outbox.take(&mut answers);
        if answers.is_empty() {
            self.answers = answers;
            return;
        }
        let now = self.config.runtime.now();
        self.read_at = Some(self.read_at.map_or(now, |read| read.max(now)));
        for answer in answers.drain(..) {
            match answer.origin {
                Origin::Copy => self.copy_answered(answer.token, &answer.result),
                _ => {
                    if let Err(error) = &answer.result {
                        tracing::warn!(
                            %error,
                            handler = self.invocation.handler.name(),
                            subscription = %self.invocation.subscription,
                            "a message the handler published was not stored; the delivery is \
                             not acknowledged and comes back"
                        );
                        self.instruments.publish_failures.increment(1);
                    }
                }
            }
            self.machine
                .answered(answer.token, answer.origin, answer.result.is_ok(), now);
        }
        self.answers = answers;
    }

    /// Show the gauges as they are: what runs, what waits for a deadline, what waits for its
    /// publishes. Once a flush rather than at every event: a scrape sees them as of the last
    /// burst of events, and a delivery pays no gauge.
    fn show_gauges(&self, running: usize) {
        self.instruments.in_flight.set(running as f64);
        self.instruments.waiting.set(self.machine.waiting() as f64);
        self.instruments
            .awaiting
            .set(self.machine.awaiting_publishes() as f64);
    }

    /// The copy of delivery `token` was answered: say so, count it, record its call.
    fn copy_answered(
        &mut self,
        token: Token,
        result: &Result<ruststream::MessageId, ruststream::PublishError>,
    ) {
        let Some(copy) = self.copies.remove(&token) else {
            return;
        };
        let handler = self.invocation.handler.name();
        let topic = &copy.source.received.topic;
        let _context = report::context(&copy.span, handler, topic, &copy.message_id);
        let _entered = copy.span.enter();
        let completion = match (result, copy.republish) {
            (Ok(copy_id), Republish::DeadLetter { reason }) => {
                tracing::warn!(
                    reason,
                    dead_letter_topic = %copy.to,
                    copy_id = %copy_id,
                    "moved to the dead-letter topic"
                );
                Completion::DeadLettered
            }
            (Ok(copy_id), _) => {
                tracing::debug!(retry_topic = %copy.to, copy_id = %copy_id, "republished to the retry topic");
                Completion::Rescheduled
            }
            (Err(error), republish) => {
                let which = match republish {
                    Republish::DeadLetter { .. } => "dead-letter",
                    _ => "retry",
                };
                tracing::error!(
                    %error,
                    topic = %copy.to,
                    "could not publish to the {which} topic; the delivery is left \
                     unacknowledged and comes back"
                );
                Completion::Rejected
            }
        };
        self.completed(&copy.source, completion);
    }

    /// A commit or an abort was answered: counted, and a commit's delivery settled.
    fn txn_ended(&mut self, ended: TxnEnded) {
        match ended {
            TxnEnded::Committed(token, messages, result) => {
                self.count_call(SettlementCall::Commit, messages, &result);
                self.committed(token, result);
            }
            TxnEnded::Aborted(result) => self.count_call(SettlementCall::Abort, 1, &result),
        }
    }

    /// The commit of delivery `token`'s transaction was answered: the machine settles it.
    fn committed(&mut self, token: Token, result: Result<(), ruststream::app::BoxError>) {
        let now = self.config.runtime.now();
        self.read_at = Some(self.read_at.map_or(now, |read| read.max(now)));
        if let Err(error) = &result {
            tracing::warn!(
                %error,
                handler = self.invocation.handler.name(),
                subscription = %self.invocation.subscription,
                "a transaction did not commit: nothing its handler published is visible, and \
                 the message comes back"
            );
        }
        self.machine.committed(token, result.is_ok(), now);
        if let Some(id) = self.committing.remove(&token) {
            self.commit_answered.push(id);
        }
    }

    /// Make every call the machine says is due: the acknowledgements together, and the
    /// negative ones together, so that the transport sends each kind as one command.
    async fn flush(&mut self) {
        let now = match self.read_at.take() {
            Some(read) => read,
            None => self.config.runtime.now(),
        };
        // Taken out for the flush, put back empty: their room is kept, so grouping allocates
        // nothing once warm. They never hold anything between two flushes.
        let mut acks = std::mem::take(&mut self.acks);
        let mut nacks = std::mem::take(&mut self.nacks);
        while let Some(call) = self.machine.poll_call(now) {
            match call {
                Call::Ack(id) => acks.push(id),
                Call::AckIndex { id, slot, ack_set } => {
                    let result = self.consumer.ack_batch_index(&id, slot, ack_set).await;
                    self.count_call(SettlementCall::AckIndex, 1, &result);
                }
                Call::Nack(id) => nacks.push(id),
                Call::Commit { token, acks } => {
                    let messages = self.machine.committing_messages(token);
                    let first = acks.first().map(|(id, _)| id.clone());
                    if self.txns.commit(&mut self.consumer, token, acks, messages) {
                        if let Some(id) = first {
                            self.consumer.acquire(&id);
                            self.committing.insert(token, id);
                        }
                    } else {
                        // No transaction was kept for it: nothing can be committed.
                        self.machine.committed(token, false, now);
                    }
                }
                Call::Abort(token) => self.txns.abort(token),
            }
        }
        if !acks.is_empty() {
            let result = self.consumer.ack(&acks).await;
            self.count_call(SettlementCall::Ack, acks.len(), &result);
            acks.clear();
        }
        if !nacks.is_empty() {
            let result = self.consumer.nack(&nacks).await;
            self.count_call(SettlementCall::Nack, nacks.len(), &result);
            nacks.clear();
        }
        self.acks = acks;
        self.nacks = nacks;
    }

    /// Count `messages` settled by one call of `call`.
    #[inline]
    fn count_call(
        &self,
        call: SettlementCall,
        messages: usize,
        result: &Result<(), ruststream::app::BoxError>,
    ) {
        self.instruments
            .call(call, result.is_ok())
            .increment(messages as u64);
        self.instruments.command(call).increment(1);
        if let Err(error) = result {
            // The messages stay unacknowledged and come back: nothing is lost.
            tracing::warn!(%error, call = call.label(), messages, "settlement call failed; the broker will redeliver");
        }
    }

    /// Make the timer match the machine's next deadline: the one sleep is moved in place (no
    /// allocation), made on first need, dropped when nothing waits.
    fn arm_timer(&mut self) {
        let next = self.machine.poll_timeout();
        match (&mut self.timer, next) {
            (Some((at, _)), Some(next)) if *at == next => {}
            (Some((at, sleep)), Some(next)) => {
                *at = next;
                self.config.runtime.reset(sleep, next);
            }
            (timer, next) => *timer = next.map(|at| (at, self.config.runtime.sleep_until(at))),
        }
    }

    async fn shutdown<F, B>(
        mut self,
        mut running: Slots<F>,
        mut batches: Slots<B>,
        begin: impl Fn(&mut Self, Members<C::Id>) -> B,
    ) where
        F: Future<Output = Finished<C::Id>>,
        B: Future<Output = BatchEnd<C::Id>>,
    {
        // Held deliveries (same key as a running one) never started: no outcome.
        let held: Vec<_> = self.machine.drain_held().collect();
        for ((r, _), parked) in held {
            if !parked {
                self.consumer.release(&r.id);
            }
        }
        // Running handlers get the grace period to finish, and their publishes and copies to
        // be answered; their outcomes are still settled.
        let deadline = self
            .config
            .runtime
            .now()
            .saturating_add(self.config.shutdown_grace);
        let mut grace = self.config.runtime.sleep_until(deadline);
        // A batch handler's gathered deliveries go now, in partial batches.
        self.machine.drain_batches();
        // A transaction taking deliveries takes no more: it commits once they have ended.
        self.machine.close_transactions();
        self.hand_over(&mut batches, &begin);
        loop {
            if running.len() == 0
                && batches.len() == 0
                && self.machine.awaiting_publishes() == 0
                && self.machine.committing() == 0
                && !self.txns.ending()
            {
                break;
            }
            /// What ended: a delivery, or a batch.
            enum Ended<One, Batch> {
                One(One),
                Batch(Batch),
                /// A transaction's commit or abort was answered.
                Txn(TxnEnded),
            }
            let next = poll_fn(|cx| {
                if let Poll::Ready(Some(done)) = running.poll_next(cx) {
                    return Poll::Ready(Some(Ok(Ended::One(done))));
                }
                if let Poll::Ready(Some(done)) = batches.poll_next(cx) {
                    return Poll::Ready(Some(Ok(Ended::Batch(done))));
                }
                if self.invocation.outbox.poll_answers(cx).is_ready() {
                    return Poll::Ready(None);
                }
                if !self.sending.is_empty() {
                    while let Poll::Ready(Some(())) = self.sending.poll_next_unpin(cx) {}
                }
                if self.txns.ending() {
                    if let Poll::Ready(ended) = self.txns.poll_ended(cx) {
                        return Poll::Ready(Some(Ok(Ended::Txn(ended))));
                    }
                }
                grace.as_mut().poll(cx).map(|()| Some(Err(())))
            })
            .await;
            match next {
                Some(Ok(Ended::Batch(done))) => {
                    self.batch_finished(done);
                    self.hand_over(&mut batches, &begin);
                }
                Some(Ok(Ended::One(done))) => self.finish(done),
                Some(Ok(Ended::Txn(ended))) => self.txn_ended(ended),
                None => self.take_answers(),
                Some(Err(())) => {
                    tracing::warn!(
                        count = running.len() + batches.len(),
                        awaiting_publishes = self.machine.awaiting_publishes(),
                        grace = ?self.config.shutdown_grace,
                        "stopping: handlers still running, or publishes not answered, after the \
                         grace period; their messages stay unacknowledged and come back"
                    );
                    // Dropped: cancelled, no outcome. Closing the consumer below releases them.
                    running.clear();
                    batches.clear();
                    break;
                }
            }
            // Held deliveries were let go above: what finishing lets start is let go too.
            while let Some(((held, _), parked)) = self.machine.poll_start() {
                if !parked {
                    self.consumer.release(&held.id);
                }
            }
            self.flush().await;
        }
        drop(grace);
        self.machine.abandon_publishes();
        self.flush().await;
        while let Some(id) = self.machine.poll_release() {
            self.consumer.release(&id);
        }
        for id in self.commit_answered.drain(..) {
            self.consumer.release(&id);
        }
        let abandoned = self.machine.abandon_waits();
        if abandoned > 0 {
            tracing::info!(
                count = abandoned,
                "stopping: retry_after waits abandoned; their messages stay unacknowledged and come back"
            );
        }
        self.show_gauges(running.len());
        self.timer = None;
        self.consumer.close().await;
    }
}

/// The message of `received` as handlers and layers see it.
#[inline(always)]
fn incoming_of<C: ConsumerPort>(received: &Received<C::Id>) -> Incoming<'_> {
    Incoming::new(&received.payload, &received.properties, &received.topic)
        .with_key(received.key.as_deref())
        .with_redelivery_count(received.redelivery_count)
        .with_message_id(C::message_id(&received.id))
        .with_times(received.publish_time, received.event_time)
}

/// How a handler invocation ended, as the machine is told it: its completion, when it
/// ended, how many messages the handler published, and the delivery's attempt count.
struct Ends(Completion, Instant, u32, u32);

/// What the machine gets back of a delivery whose handling ended: a tail only where there is
/// a key to keep, a span to log in, or a copy the machine may order.
#[inline(always)]
fn finished<Id>(
    id: Delivered<Id>,
    token: Token,
    ends: Ends,
    key: Option<String>,
    span: tracing::Span,
    copy: Option<Box<CopySource<Id>>>,
    txn: Option<(Token, Transaction)>,
) -> Finished<Id> {
    let span = (!span.is_disabled()).then_some(span);
    // Matched rather than tested: nothing is left to drop where there is no tail.
    let tail = match (key, span, copy, txn) {
        (None, None, None, None) => None,
        (key, span, copy, txn) => Some(Box::new(Tail {
            key,
            span,
            copy,
            txn,
        })),
    };
    let Ends(completion, ended, publishes, attempt) = ends;
    Finished {
        id,
        completion,
        ended,
        token,
        publishes,
        attempt,
        tail,
    }
}

/// A completion as logs, counters and the call record show it: a payload that does not
/// decode, where no copy was made of it, is a rejection, as before the machine copied.
fn shown(completion: Completion) -> Completion {
    match completion {
        Completion::Undecodable => Completion::Rejected,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    /// A batch's lists keep their room across batches: the in-place collect `recycle` relies
    /// on keeps the allocation (were it to stop, every batch would allocate them again).
    #[test]
    fn a_recycled_list_keeps_its_room() {
        let mut list: Vec<&str> = Vec::with_capacity(100);
        list.push("held");
        let other: Vec<(usize, usize)> = super::recycle(list);
        assert!(other.is_empty());
        assert!(other.capacity() >= 100, "room kept: {}", other.capacity());
    }

    /// A finished invocation is moved three times on its way to the machine; at 128 bytes or
    /// less the compiler moves it inline instead of calling `memcpy`, which `scripts/bench`
    /// showed on the consume->ack path. Drivers run over the chunk joiner: its id is the one.
    #[test]
    fn a_finished_invocation_moves_without_memcpy() {
        type Id = crate::chunked::ChunkedId<ruststream_pulsar_model::MessageId>;
        let size = std::mem::size_of::<super::Finished<Id>>();
        assert!(
            size <= 128,
            "`Finished` is {size} bytes, over 128: keep what it carries small"
        );
    }
}
