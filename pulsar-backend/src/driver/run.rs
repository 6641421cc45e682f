//! The driver loop.

use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::channel::oneshot;
use futures::FutureExt;
use ruststream::completion::{Completion, SubscriptionRules};
use ruststream::handler::Rejection;
use ruststream::machine::{
    Admission, Arrival, Call, Delivered, MachineConfig, SubscriptionMachine,
};
use ruststream::message::Incoming;
use ruststream::runtime::{Runtime, Sleep};
use ruststream::{Handler, Instant};
use tracing::Instrument;

use super::instruments::{Instruments, SettlementCall};
use super::report;
use super::slots::Slots;
use super::{
    dead_letter, retry_letter, ConsumerPort, DeadLetter, Received, RetryLetter, Why,
    OUT_OF_ATTEMPTS, UNDECODABLE,
};
use crate::observe::{Call as ObservedCall, Observer};

/// How many events a driver handles before it yields to its executor once.
const YIELD_EVERY: u32 = 64;

/// What a driver needs besides its consumer.
pub(crate) struct DriverConfig<S> {
    pub(crate) state: Arc<S>,
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) rules: SubscriptionRules,
    pub(crate) concurrency: usize,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// Counts every delivery handed to the handler, for the broker's `handled`.
    pub(crate) handled: Arc<super::Handled>,
    /// The broker's publishing port, for handlers' `Publisher` parameters.
    pub(crate) publisher: Option<Arc<dyn ruststream::handler::Publish>>,
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
}

/// What every handler invocation of a driver uses, shared: one reference count per delivery
/// rather than one per part.
struct Invocation<S, H> {
    handler: Arc<H>,
    state: Arc<S>,
    runtime: Arc<dyn Runtime>,
    observer: Option<Arc<dyn Observer>>,
    publisher: Option<Arc<dyn ruststream::handler::Publish>>,
    dead_letter: Option<DeadLetter>,
    retry: Option<RetryLetter>,
    /// The completion rules, for the backoff policy's delays.
    rules: SubscriptionRules,
    subscription: Arc<str>,
    key_ordered: bool,
    /// How long each handler call took (the driver's [`Instruments::duration`]).
    duration: metrics::Histogram,
}

/// A held delivery to start now, with its admission, and whether it was parked (see
/// `SubscriptionMachine::next_of_key`).
type NextOfKey<Id> = ((Received<Id>, Admission), bool);

/// A handler invocation that ended.
struct Finished<Id> {
    id: Id,
    /// Its key where the subscription keeps per-key order: the delivery's own `String`, moved
    /// into a box (one pointer, 16 bytes less to move than the `String`, which keeps the whole
    /// under the size below).
    #[expect(
        clippy::box_collection,
        reason = "one pointer to move, and the delivery's own `String` boxed as it is (no copy)"
    )]
    key: Option<Box<String>>,
    completion: Completion,
    /// The delivery's span, to log its settlement in.
    span: tracing::Span,
    /// When the handler ended: the time its outcome is settled at (a `retry_after` wait
    /// counts from it), read once for the duration metric and the settlement.
    ended: Instant,
}

/// A number drawn from a message id, the same for the same id: what the backoff's jitter is
/// drawn from, so that a run repeats exactly (FNV-1a over the id as it prints).
fn seed_of(id: &impl std::fmt::Display) -> u64 {
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
/// [`SubscriptionMachine`], which decides everything (what to take, start, call and release).
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
}

impl<C: ConsumerPort, S: Send + Sync + 'static, H: Handler<S>> Driver<C, S, H> {
    pub(crate) fn new(consumer: C, config: DriverConfig<S>, handler: Arc<H>) -> Self {
        let rules = config.rules.clone();
        let machine_config = MachineConfig {
            key_ordered: config.key_ordered,
            ordered_retries: config.ordered_retries,
            max_attempts: config.dead_letter.as_ref().and_then(|d| d.max_attempts),
            batch_index_acks: consumer.acks_batch_index(),
            ..MachineConfig::new(config.concurrency)
        };
        let machine = SubscriptionMachine::new(rules.clone(), machine_config, C::entry);
        let instruments = Instruments::new(handler.name());
        let invocation = Arc::new(Invocation {
            handler,
            state: config.state.clone(),
            runtime: config.runtime.clone(),
            observer: config.observer.clone(),
            publisher: config.publisher.clone(),
            dead_letter: config.dead_letter.clone(),
            retry: config.retry.clone(),
            rules: rules.clone(),
            subscription: rules.subscription_name(),
            key_ordered: machine.config().key_ordered,
            duration: instruments.duration.clone(),
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
        }
    }

    /// Run until `stop` fires (or the consumer closes), then shut down gracefully: stop
    /// pulling, let running handlers finish, flush settlements, abandon `retry_after` waits,
    /// close the consumer.
    pub(crate) async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        enum Event {
            Stop,
            Closed,
            /// A delivery arrived or a handler finished, and was dealt with where it was
            /// polled (a delivery is not moved through an event: each move is a copy).
            Handled,
            Timer,
            /// Nothing is ready, and something happened since the last flush.
            Idle,
        }
        // The running handler invocations; a local, as their future's type has no name.
        let mut running = Slots::new();
        let mut events: u32 = 0;
        // Events handled since the last flush. The calls they made due are made when nothing
        // else is ready, when the timer fires, and at the latest every `YIELD_EVERY` events:
        // what settles in one burst of events leaves as one command per kind, and no call
        // waits for time to pass (a sleep starts only after a flush).
        let mut unflushed = false;
        let mut flush_now = true;
        // Start `$next` and what it lets start: a handler that finishes as it starts is
        // settled at once, and may let the next delivery of its key start. A macro, as the
        // invocations' future type has no name to write a method over.
        // (A delivery is moved as little as can be: each move is a copy of 192 bytes.)
        macro_rules! start_one {
            ($received:expr, $admission:expr) => {{
                let finished = running.start(self.begin($received, $admission));
                self.instruments.in_flight.set(running.len() as f64);
                match finished {
                    Some(done) => self.finish(done, running.len()),
                    None => None,
                }
            }};
        }
        macro_rules! start {
            ($next:expr) => {{
                let mut next = $next;
                while let Some(((received, admission), parked)) = next {
                    if parked {
                        self.consumer.acquire(&received.id);
                    }
                    next = start_one!(received, admission);
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
                        start!(start_one!(received, admission));
                    }
                }
                self.flush().await;
                self.arm_timer();
                while let Some(id) = self.machine.poll_release() {
                    self.consumer.release(&id);
                }
                (flush_now, unflushed) = (false, false);
            }
            let event = poll_fn(|cx| {
                if stop.poll_unpin(cx).is_ready() {
                    return Poll::Ready(Event::Stop);
                }
                if let Poll::Ready(Some(done)) = running.poll_next(cx) {
                    start!(self.finish(done, running.len()));
                    return Poll::Ready(Event::Handled);
                }
                if self.machine.wants_delivery() {
                    match self.consumer.poll_receive(cx) {
                        Poll::Ready(Some(mut received)) => {
                            if self.invocation.retry.is_some() {
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
                                start!(start_one!(received, admission));
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
        self.shutdown(running).await;
    }

    /// The handler invocation for `received`, counted as a delivery.
    #[inline(always)]
    fn begin(
        &mut self,
        received: Received<C::Id>,
        admission: Admission,
    ) -> impl Future<Output = Finished<Delivered<C::Id>>> + Send + 'static {
        self.instruments.deliveries.increment(1);
        if received.unreadable().is_some() {
            self.instruments.unreadable.increment(1);
        }
        self.config.handled.bump();
        let invocation = self.invocation.clone();
        let handler = &self.invocation.handler;
        // DEBUG: at the default level a successful delivery creates no span at all. Error
        // lines still name their delivery (`report_context`).
        let span = tracing::debug_span!(
            "delivery",
            handler = handler.name(),
            topic = %received.topic,
            message_id = %received.id,
            redelivery_count = received.redelivery_count,
        );
        crate::trace_context::continue_from(&span, &received.properties);
        let own = span.clone();
        async move {
            let Invocation {
                handler,
                state,
                runtime,
                observer,
                publisher,
                dead_letter,
                retry,
                rules,
                subscription,
                key_ordered,
                duration,
            } = &*invocation;
            let key_ordered = *key_ordered;
            // What the machine gets back, moved out of the delivery once nothing else needs
            // it: nothing of it is kept across the handler's call, so the future is smaller.
            macro_rules! finished {
                ($completion:expr, $ended:expr) => {
                    Finished {
                        id: Delivered {
                            batch: received.batch.map(|slot| slot.place()),
                            id: received.id,
                        },
                        key: if key_ordered { received.key.map(Box::new) } else { None },
                        completion: $completion,
                        span: own,
                        ended: $ended,
                    }
                };
            }
            if let (Admission::DeadLetter, Some(dead_letter)) = (admission, dead_letter.as_ref()) {
                // Boxed: a rare path, whose publish would otherwise enlarge every delivery's
                // future (and each copy of it).
                let why = Why { reason: OUT_OF_ATTEMPTS, error: None };
                let completion = Box::pin(dead_letter::move_out(dead_letter, &received, why, (&own, handler.name()))).await;
                return finished!(completion, runtime.now());
            }
            let incoming = Incoming::new(&received.payload, &received.properties, &received.topic)
                .with_key(received.key.as_deref())
                .with_redelivery_count(received.redelivery_count)
                .with_publisher(publisher.as_ref())
                .with_message_id(C::message_id(&received.id))
                .with_times(received.publish_time, received.event_time);
            let at = runtime.now();
            let result = match received.unreadable() {
                None => AssertUnwindSafe(handler.call(incoming, state)).catch_unwind().await,
                // Nothing to hand over: the client could not read the message.
                Some(reason) => Ok(Err(Rejection::Unreadable { handler: handler.name(), reason: reason.to_owned() })),
            };
            // Recorded here rather than carried out: what a finished invocation carries is
            // moved several times, and stays small enough to move without a `memcpy` call.
            let mut ended = runtime.now();
            duration.record(ended.saturating_duration_since(at).as_secs_f64());
            let mut completion = match &result {
                Ok(Ok(answer)) => {
                    let outcome = match answer.outcome {
                        // The policy's delay for this attempt; the jitter drawn from the id.
                        outcome @ (ruststream::HandlerOutcome::Backoff | ruststream::HandlerOutcome::BackoffLater) => {
                            let attempt = received.redelivery_count.unwrap_or(0);
                            rules.resolve(outcome, attempt, seed_of(&received.id))
                        }
                        outcome => outcome,
                    };
                    match (&answer.error, outcome) {
                        (Some(error), _) => {
                            let _context = report::context(&own, handler.name(), &received.topic, &received.id);
                            tracing::warn!(%error, outcome = outcome.name(), "handler returned an error");
                        }
                        (None, ruststream::HandlerOutcome::RetryAfter(delay)) => {
                            tracing::debug!(outcome = outcome.name(), ?delay, "handled")
                        }
                        (None, _) => tracing::debug!(outcome = outcome.name(), "handled"),
                    }
                    Completion::Returned(outcome)
                }
                Ok(Err(rejection)) => {
                    let _context = report::context(&own, handler.name(), &received.topic, &received.id);
                    match (rejection, dead_letter) {
                        (Rejection::Decode { .. } | Rejection::Unreadable { .. }, Some(dead_letter)) => tracing::error!(
                            error = %rejection,
                            dead_letter_topic = %dead_letter.topic,
                            "the message cannot be read or decoded; it goes to the dead-letter \
                             topic now, as no retry can change that"
                        ),
                        _ => tracing::error!(error = %rejection, "handler could not run; the delivery is left unacknowledged"),
                    }
                    Completion::Rejected
                }
                Err(_) => {
                    let _context = report::context(&own, handler.name(), &received.topic, &received.id);
                    tracing::error!("handler panicked; the delivery is left unacknowledged");
                    Completion::Panicked
                }
            };
            match (&result, dead_letter) {
                (Ok(Err(rejection @ (Rejection::Decode { .. } | Rejection::Unreadable { .. }))), Some(dead_letter)) => {
                    let why = Why { reason: UNDECODABLE, error: Some(rejection) };
                    completion = Box::pin(dead_letter::move_out(dead_letter, &received, why, (&own, handler.name()))).await;
                    ended = runtime.now();
                }
                // The handler's own verdict: the copy carries its reason and error.
                (Ok(Ok(answer)), Some(dead_letter)) => {
                    if let ruststream::HandlerOutcome::DeadLetter(reason) = answer.outcome {
                        let why = Why { reason, error: answer.error.as_deref().map(|e| e as _) };
                        completion = Box::pin(dead_letter::move_out(dead_letter, &received, why, (&own, handler.name()))).await;
                        ended = runtime.now();
                    }
                }
                _ => {}
            }
            if let (Completion::Returned(ruststream::HandlerOutcome::RetryLater(delay)), Some(retry)) = (completion, retry) {
                completion = Box::pin(retry_letter::republish(retry, &received, delay, (&own, handler.name()))).await;
                ended = runtime.now();
            }
            if let Some(observer) = observer {
                observer.called(ObservedCall {
                    handler: handler.name(),
                    subscription: subscription.clone(),
                    topic: received.topic.to_string(),
                    message_id: C::message_id(&received.id),
                    payload: received.payload.to_vec(),
                    properties: received.properties.to_vec(),
                    redelivery_count: received.redelivery_count,
                    at,
                    completion,
                    error: match result {
                        Ok(Err(rejection)) => Some(rejection.to_string()),
                        Ok(Ok(answer)) => answer.error.map(|e| e.to_string()),
                        Err(_) => None,
                    },
                });
            }
            // The delivery's own span goes with it (what `Span::current()` is in here, without
            // the thread-local look-up).
            finished!(completion, ended)
        }
        .instrument(span)
    }

    /// Hand a handler invocation that ended to the machine; the next delivery of its key, if
    /// one was held back, is what to start now.
    fn finish(
        &mut self,
        done: Finished<Delivered<C::Id>>,
        running: usize,
    ) -> Option<NextOfKey<C::Id>> {
        let now = done.ended;
        self.read_at = Some(self.read_at.map_or(now, |read| read.max(now)));
        self.instruments.in_flight.set(running as f64);
        self.instruments.outcome(&done.completion).increment(1);
        // Logged in the delivery's span, so that a refusal names its topic and message id.
        let span_guard = done.span.enter();
        let message_id = done.id.id.clone();
        let settlement = self.machine.finish(
            done.id,
            done.completion,
            now,
            done.key.as_deref().map(String::as_str),
        );
        match settlement {
            Ok(settlement) => tracing::debug!(?settlement, "settled"),
            Err(error) => {
                let _context = report::context(
                    &done.span,
                    self.invocation.handler.name(),
                    &self.config.topic,
                    &message_id,
                );
                tracing::error!(%error, "outcome refused");
                self.instruments.refused.increment(1);
            }
        }
        drop(span_guard);
        self.instruments.waiting.set(self.machine.waiting() as f64);
        self.machine
            .next_of_key(done.key.as_deref().map(String::as_str))
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
                _ => {}
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

    async fn shutdown<F>(mut self, mut running: Slots<F>)
    where
        F: Future<Output = Finished<Delivered<C::Id>>>,
    {
        // Held deliveries (same key as a running one) never started: no outcome.
        let held: Vec<_> = self.machine.drain_held().collect();
        for ((r, _), parked) in held {
            if !parked {
                self.consumer.release(&r.id);
            }
        }
        // Running handlers get the grace period to finish; their outcomes are still settled.
        let deadline = self
            .config
            .runtime
            .now()
            .saturating_add(self.config.shutdown_grace);
        let mut grace = self.config.runtime.sleep_until(deadline);
        loop {
            let next = poll_fn(|cx| {
                if let Poll::Ready(done) = running.poll_next(cx) {
                    return Poll::Ready(done.map(Ok));
                }
                grace.as_mut().poll(cx).map(|()| Some(Err(())))
            })
            .await;
            match next {
                Some(Ok(done)) => {
                    // Held deliveries were let go above: nothing of the key waits to start.
                    if let Some(((held, _), false)) = self.finish(done, running.len()) {
                        self.consumer.release(&held.id);
                    }
                    self.flush().await;
                }
                Some(Err(())) => {
                    tracing::warn!(
                        count = running.len(),
                        grace = ?self.config.shutdown_grace,
                        "stopping: handlers still running after the grace period were \
                         cancelled; their messages stay unacknowledged and come back"
                    );
                    // Dropped: cancelled, no outcome. Closing the consumer below releases them.
                    running.clear();
                    break;
                }
                None => break,
            }
        }
        drop(grace);
        self.flush().await;
        while let Some(id) = self.machine.poll_release() {
            self.consumer.release(&id);
        }
        let abandoned = self.machine.abandon_waits();
        if abandoned > 0 {
            tracing::info!(
                count = abandoned,
                "stopping: retry_after waits abandoned; their messages stay unacknowledged and come back"
            );
        }
        self.timer = None;
        self.consumer.close().await;
    }
}
#[cfg(test)]
mod tests {
    /// A finished invocation is moved three times on its way to the machine; at 128 bytes or
    /// less the compiler moves it inline instead of calling `memcpy`, which `scripts/bench`
    /// showed on the consume->ack path. Drivers run over the chunk joiner: its id is the one.
    #[test]
    fn a_finished_invocation_moves_without_memcpy() {
        type Id = crate::chunked::ChunkedId<ruststream_pulsar_model::MessageId>;
        let size = std::mem::size_of::<super::Finished<super::Delivered<Id>>>();
        assert!(
            size <= 128,
            "`Finished` is {size} bytes, over 128: keep what it carries small"
        );
    }
}
