//! Carrying out the machine's commands, and feeding it what comes back: every command is
//! made as it says, nothing is decided here.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::BoxError;
use ruststream::broker::machine::{
    Command, Commit, Completed, Event, Finished, Members, Notice, Republishing, Start, Txn, TxnId,
};
use ruststream::broker::{Answered, Origin};
use ruststream::publish::Receipt;
use ruststream::{Handler, PublishError};

use crate::instruments::SettlementCall;
use crate::invoke::BatchEnd;
use crate::kept::KeptRef;
use crate::outstanding::{Invoke, Io};
use crate::port::{ConsumerPort, Original, Received, Transaction};
use crate::run::Driver;
use crate::slots::Slots;

impl<C: ConsumerPort, S: Send + Sync + 'static, H: Handler<S>> Driver<C, S, H> {
    /// Carry out every command the machine has at `now`; an invocation starts in `running`
    /// (one delivery, by `one`) or `batches` (a batch, by `batch`), and one that ends as it
    /// starts is fed back at once.
    #[inline]
    pub(crate) fn carry<F, B>(
        &mut self,
        running: &mut Slots<F>,
        batches: &mut Slots<B>,
        now: ruststream::Instant,
        one: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> F + Copy,
        batch: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> B + Copy,
    ) where
        F: Future<Output = Finished<C::Id, KeptRef<C::Id>>>,
        B: Future<Output = BatchEnd<C::Id>>,
    {
        while let Some(command) = self.machine.poll(now) {
            match command {
                Command::Invoke(invoke) => self.start(invoke, running, batches, one, batch),
                Command::Ack(id) => self.calls.acks.push(id),
                Command::Nack(id) => self.calls.nacks.push(id),
                Command::AckIndex { id, size, ack_set } => {
                    self.calls.index.push((id, size, ack_set))
                }
                Command::Release(id) => self.calls.releases.push(id),
                Command::Acquire(id) => self.consumer.acquire(&id),
                Command::Republish(copy) => self.republish(*copy),
                Command::Completed(completed) => self.completed(*completed),
                Command::Open { txn, timeout } => self.open(txn, timeout),
                Command::Commit(commit) => {
                    let Commit {
                        txn,
                        handle,
                        acks,
                        messages,
                    } = *commit;
                    let committing = self.consumer.commit(&handle, acks);
                    self.io.push(Box::pin(async move {
                        Io::Committed(txn, messages, committing.await)
                    }));
                }
                Command::Abort(txn) => {
                    let (id, aborting) = (txn.handle.id(), txn.handle.abort());
                    self.io
                        .push(Box::pin(async move { Io::Aborted(id, aborting.await) }));
                }
                Command::Notice(notice) => self.notice(notice),
            }
        }
    }

    /// After an event: carry out what should not wait for the next flush, where anything
    /// should ([`Status::ready`](ruststream::broker::machine::Status::ready)); the consumer
    /// calls and releases wait for the flush, so that those due together go together.
    #[inline(always)]
    pub(crate) fn carry_ready<F, B>(
        &mut self,
        running: &mut Slots<F>,
        batches: &mut Slots<B>,
        one: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> F + Copy,
        batch: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> B + Copy,
    ) where
        F: Future<Output = Finished<C::Id, KeptRef<C::Id>>>,
        B: Future<Output = BatchEnd<C::Id>>,
    {
        if self.machine.status().ready {
            let now = self.now_read();
            self.carry(running, batches, now, one, batch);
        }
    }

    /// Start `invoke`: a delivery's invocation in `running`, a batch's in `batches` (its ack
    /// timeouts start again: it goes to the handler now). One that ends as it starts is fed
    /// back at once.
    fn start<F, B>(
        &mut self,
        invoke: Box<Invoke<C::Id>>,
        running: &mut Slots<F>,
        batches: &mut Slots<B>,
        one: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> F,
        batch: impl Fn(&mut Self, Box<Invoke<C::Id>>) -> B,
    ) where
        F: Future<Output = Finished<C::Id, KeptRef<C::Id>>>,
        B: Future<Output = BatchEnd<C::Id>>,
    {
        if let Members::Batch(members) = &invoke.members {
            self.consumer
                .restart_ack_timeout(members.iter().map(|gathered| &gathered.delivery.id));
            let (index, mut slot) = batches.free_slot();
            slot.set(Some(batch(self, invoke)));
            if let Some(end) = batches.started(index) {
                self.batch_ended(end);
            }
            return;
        }
        let (index, mut slot) = running.free_slot();
        slot.set(Some(one(self, invoke)));
        if let Some(done) = running.started(index) {
            self.finished(done);
        }
    }

    /// The invocation of `received`, which runs now as `start` says.
    #[inline(always)]
    pub(crate) fn invoke(
        &mut self,
        received: Received<C::Id>,
        start: Start<Transaction>,
    ) -> impl Future<Output = Finished<C::Id, KeptRef<C::Id>>> + Send + 'static {
        self.handled.bump();
        let Start { token, plan, txn } = start;
        (self.invocation.clone()).one(token, received, plan, txn, C::message_id)
    }

    /// One delivery the machine held, and how it runs (see [`Driver::invoke`]).
    #[allow(
        clippy::boxed_local,
        reason = "the machine's command holds it boxed; it is unpacked where it lies"
    )]
    pub(crate) fn unpack(invoke: Box<Invoke<C::Id>>) -> (Received<C::Id>, Start<Transaction>) {
        let Invoke {
            token,
            members,
            txn,
        } = *invoke;
        let Members::One(received, plan) = members else {
            unreachable!("a batch starts in `batch`")
        };
        (received, Start { token, plan, txn })
    }

    /// The invocation of a batch.
    #[allow(
        clippy::boxed_local,
        reason = "the machine's command holds it boxed; it is unpacked where it lies"
    )]
    pub(crate) fn batch(
        &mut self,
        invoke: Box<Invoke<C::Id>>,
    ) -> impl Future<Output = BatchEnd<C::Id>> + Send + 'static {
        let Invoke {
            token,
            members,
            txn,
        } = *invoke;
        let Members::Batch(members) = members else {
            unreachable!("one delivery starts in `one`")
        };
        self.handled.bump_by(members.len() as u64);
        let lists = std::mem::take(&mut self.lists);
        (self.invocation.clone()).batch(token, members, txn, lists, C::message_id)
    }

    /// A delivery's handling finished: the machine is told, with the answers that came while
    /// its handler ran (a delivery whose publishes are all confirmed by now is settled at
    /// once, not held).
    #[inline(always)]
    pub(crate) fn finished(&mut self, done: Finished<C::Id, KeptRef<C::Id>>) {
        let at = done.at;
        self.read(at);
        if done.publishes > 0 && self.invocation.outbox.has_answers() {
            self.take_answers();
        }
        self.machine.handle(Event::Finished(done), at);
    }

    /// A batch ended: each delivery's end, then the batch's storage back to the machine; its
    /// lists are kept for the next batch.
    pub(crate) fn batch_ended(&mut self, end: BatchEnd<C::Id>) {
        let BatchEnd {
            mut ends,
            storage,
            mut lists,
        } = end;
        for done in ends.drain(..) {
            self.finished(done);
        }
        lists.ends = ends;
        if self.lists.ends.capacity() == 0 {
            self.lists = lists;
        }
        let now = self.runtime.now();
        self.machine.handle(Event::BatchDone(storage), now);
    }

    /// The broker answered something the machine asked for.
    pub(crate) fn io_done(&mut self, io: Io) {
        let now = self.runtime.now();
        self.read(now);
        let event = match io {
            Io::Opened(txn, result) => Event::Opened { txn, result },
            Io::Committed(txn, messages, result) => {
                let ok: Result<(), ()> = result.as_ref().map(|_| ()).map_err(|_| ());
                self.count_call(SettlementCall::Commit, messages, ok);
                if let Err(error) = &result {
                    tracing::warn!(
                        %error,
                        handler = self.invocation.handler.name(),
                        subscription = %self.invocation.subscription,
                        "a transaction did not commit: nothing its handler published is \
                         visible, and the message comes back"
                    );
                }
                let result = result.map_err(|error| error.failure);
                Event::Committed { txn, result }
            }
            Io::Aborted(id, result) => {
                if let Err(error) = &result {
                    // The broker aborts it at its timeout all the same: nothing it holds is
                    // visible meanwhile.
                    tracing::warn!(%error, transaction = %id, "could not abort a transaction; the broker aborts it at its timeout");
                }
                self.count_call(SettlementCall::Abort, 1, result.map_err(|_| ()));
                return;
            }
            Io::Sent => return,
        };
        self.machine.handle(event, now);
    }

    /// A publish was answered.
    pub(crate) fn answered(&mut self, answer: Answered, now: ruststream::Instant) {
        if let (Origin::Handler, Err(error)) = (answer.origin, &answer.result) {
            tracing::warn!(
                %error,
                handler = self.invocation.handler.name(),
                subscription = %self.invocation.subscription,
                "a message the handler published was not stored; the delivery is not \
                 acknowledged and comes back"
            );
            self.instruments.publish_failures.increment(1);
        }
        let event = Event::Answered {
            token: answer.token,
            origin: answer.origin,
            result: answer.result,
        };
        self.machine.handle(event, now);
    }

    /// Publish the copy the machine ordered; its answer comes through the outbox.
    fn republish(&mut self, copy: Republishing<KeptRef<C::Id>, Transaction>) {
        let Republishing {
            token,
            republish,
            kept,
            txn,
        } = copy;
        let receipt = Receipt::to(self.invocation.outbox.republished(token));
        let topic = self
            .republisher
            .topic(&republish)
            .unwrap_or_default()
            .to_owned();
        let Some(received) = kept.received.get() else {
            let error = PublishError::broker(topic, "the delivery to copy was not kept");
            return receipt.tell(Err(error));
        };
        let original = Original::of(received, kept.error.as_deref());
        let message = self.republisher.message(&republish, original);
        let port = match txn {
            Txn::Outside => self.copies.clone(),
            Txn::In(txn) => txn.port.clone(),
            Txn::NotOpened(why) => {
                let why = format!("could not open the transaction to copy in: {why}");
                return receipt.tell(Err(PublishError::broker(topic, why)));
            }
        };
        // The port tells the receipt whatever becomes of the send: its result is not needed.
        self.io.push(Box::pin(async move {
            let _ = port.send(message, receipt).await;
            Io::Sent
        }));
    }

    /// Open a transaction the machine asked for.
    fn open(&mut self, txn: TxnId, timeout: Duration) {
        let Some(opener) = self.opener.clone() else {
            let why: Arc<str> = Arc::from("this broker opens no transactions");
            self.io
                .push(Box::pin(async move { Io::Opened(txn, Err(why)) }));
            return;
        };
        self.io.push(Box::pin(async move {
            let result = opener.begin(timeout).await;
            Io::Opened(txn, result.map_err(|error| Arc::from(error.to_string())))
        }));
    }

    /// The machine says how a delivery ended: its lines, its counters, its layers'
    /// `completed` hooks.
    fn completed(&mut self, completed: Completed<C::Id, KeptRef<C::Id>>) {
        let Completed {
            id,
            kept,
            completion,
            refused,
            republished,
        } = completed;
        let inv = &*self.invocation;
        let span = (kept.as_ref())
            .and_then(|kept| kept.span.clone())
            .unwrap_or_else(tracing::Span::none);
        let topic = (kept.as_ref())
            .and_then(|kept| kept.received.get())
            .map_or(self.topic.clone(), |received| received.topic.clone());
        let _context = crate::report::context(&span, inv.handler.name(), &topic, &id);
        let _entered = span.enter();
        if let Some(error) = refused {
            tracing::error!(%error, "outcome refused");
            self.instruments.refused.increment(1);
        }
        if let Some((republish, result)) = republished {
            let to = self.republisher.topic(&republish).unwrap_or_default();
            crate::report::republished(&republish, to, &result);
        }
        if let Some(kept) = kept {
            kept.tell(
                &inv.stack,
                inv.handler.name(),
                &inv.subscription,
                completion,
                C::message_id,
            );
        }
    }

    /// Log what the machine tells the operator.
    fn notice(&self, notice: Notice<C::Id>) {
        match notice {
            Notice::NotBack(id) => tracing::warn!(
                message_id = %id,
                grace = ?ruststream::broker::machine::RETRY_RETURN_GRACE,
                "a retried message did not come back to this consumer in time (another \
                 consumer may have its key now): the messages held behind it go on without it"
            ),
            Notice::WaitsAbandoned(count) => tracing::info!(
                count,
                "stopping: retry_after waits abandoned; their messages stay unacknowledged and \
                 come back"
            ),
            Notice::PublishesAbandoned(count) => tracing::debug!(
                count,
                "stopping: deliveries no longer wait for their publishes' answers; they stay \
                 unacknowledged and come back"
            ),
            _ => {
                tracing::debug!("the subscription machine told something this driver does not know")
            }
        }
    }

    /// Make the calls of this flush: the acknowledgements together, and the negative ones
    /// together, so that the consumer sends each kind as one command.
    pub(crate) async fn flush(&mut self) {
        let mut index = std::mem::take(&mut self.calls.index);
        for (id, size, ack_set) in index.drain(..) {
            let result = self.consumer.ack_batch_index(&id, size, ack_set).await;
            self.counted(SettlementCall::AckIndex, 1, result);
        }
        self.calls.index = index;
        if !self.calls.acks.is_empty() {
            let acks = std::mem::take(&mut self.calls.acks);
            let result = self.consumer.ack(&acks).await;
            self.counted(SettlementCall::Ack, acks.len(), result);
            self.calls.acks = acks;
            self.calls.acks.clear();
        }
        if !self.calls.nacks.is_empty() {
            let nacks = std::mem::take(&mut self.calls.nacks);
            let result = self.consumer.nack(&nacks).await;
            self.counted(SettlementCall::Nack, nacks.len(), result);
            self.calls.nacks = nacks;
            self.calls.nacks.clear();
        }
    }

    /// Let go of what the machine released, once the calls due for it were made.
    pub(crate) fn release(&mut self) {
        for id in self.calls.releases.drain(..) {
            self.consumer.release(&id);
        }
    }

    /// Count `messages` settled by one call of `call` that ended as `result`, and say so where
    /// it failed.
    fn counted(&self, call: SettlementCall, messages: usize, result: Result<(), BoxError>) {
        match &result {
            Ok(()) => tracing::debug!(call = call.label(), messages, "settled"),
            // The messages stay unacknowledged and come back: nothing is lost.
            Err(error) => {
                tracing::warn!(%error, call = call.label(), messages, "settlement call failed; the broker will redeliver")
            }
        }
        self.count_call(call, messages, result.map_err(|_| ()));
    }

    /// Count `messages` settled by one call of `call`.
    #[inline]
    fn count_call(&self, call: SettlementCall, messages: usize, result: Result<(), ()>) {
        self.instruments
            .call(call, result.is_ok())
            .increment(messages as u64);
        self.instruments.command(call).increment(1);
    }

    /// Show the gauges as they are: what runs, what waits for a deadline, what waits for its
    /// publishes. Once a flush rather than at every event.
    pub(crate) fn show_gauges(&self, running: usize) {
        let status = self.machine.status();
        self.instruments.in_flight.set(running as f64);
        self.instruments.waiting.set(status.waiting as f64);
        self.instruments
            .awaiting
            .set(status.awaiting_publishes as f64);
    }
}
