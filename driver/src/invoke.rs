//! A handler invocation: each delivery enters through its layers (`enter`), the handler runs
//! on those its plan lets it have, and each leaves through its layers (`leave`) with what the
//! machine is told. One path for a handler of one message and for a batch handler's batch:
//! only the call in between differs (`Handler::call` or `Handler::call_batch`). What runs for
//! a delivery ([`Plan::step`]), what its end is ([`Completion::of`]) and when the layers'
//! `completed` hooks run ([`Stack::end`]) are the core's.

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use ruststream::batch::Spare;
use ruststream::broker::machine::{Delivered, Finished, Gathered, Plan, Step, Tail, Txn};
use ruststream::broker::{HandlerPort, Outbox, Token};
use ruststream::completion::Completion;
use ruststream::handler::Incoming;
use ruststream::middleware::{Delivery, End, Entered, Stack};
use ruststream::publish::Publish;
use ruststream::runtime::Runtime;
use ruststream::{Answer, Handler, Instant, Rejection};

use crate::in_span::InSpan;
use crate::kept::{Kept, KeptRef};
use crate::port::{Received, Transaction};

/// The handler's publisher over a transaction's port, as it is over the broker's: behind the
/// layers' publish hooks, with the registration's compression.
pub type Wrap = Arc<dyn Fn(Arc<dyn Publish>) -> Arc<dyn Publish> + Send + Sync>;

/// What every invocation of a driver uses, shared: one reference count per invocation.
pub(crate) struct Invocation<S, H> {
    pub(crate) handler: Arc<H>,
    pub(crate) state: Arc<S>,
    pub(crate) runtime: Arc<dyn Runtime>,
    /// The registration's layers, mounted for it.
    pub(crate) stack: Stack,
    /// The broker's port for the handler's `Publisher`, if it offers one.
    pub(crate) publisher: Option<Arc<dyn Publish>>,
    /// Where the answers of the handlers' publishes go.
    pub(crate) outbox: Arc<Outbox>,
    pub(crate) subscription: Arc<str>,
    /// Whether a delivery's key goes back to the machine (per-key order).
    pub(crate) key_ordered: bool,
    /// The handler's publisher over a transaction's port.
    pub(crate) wrap: Option<Wrap>,
}

/// What a handler's call returns: its answer, its rejection, or its panic.
type Called = Result<Result<Answer, Rejection>, Box<dyn Any + Send>>;

/// One delivery between its layers' `before` and `after`.
struct Entering<'a> {
    delivery: Delivery<'a>,
    entered: Entered,
    step: Step<'a>,
}

impl<S: Send + Sync + 'static, H: Handler<S>> Invocation<S, H> {
    /// The port lent to the handler: the broker's, counting what it publishes for the
    /// deliveries `counted` (outside a transaction); the transaction's, uncounted (its commit
    /// waits for them); none where the transaction did not open.
    #[inline(always)]
    fn port<'p>(
        &'p self,
        txn: &'p Txn<Transaction>,
        over: &'p mut Option<Arc<dyn Publish>>,
    ) -> Option<&'p Arc<dyn Publish>> {
        match txn {
            Txn::Outside => self.publisher.as_ref(),
            Txn::In(txn) => {
                let wrap = self
                    .wrap
                    .as_ref()
                    .expect("a transactional registration wraps");
                Some(&*over.insert(wrap(txn.port.clone())))
            }
            Txn::NotOpened(_) => None,
        }
    }

    /// The delivery `view` reads, handed to the handler at `started`, as its layers see it.
    #[inline(always)]
    fn delivery<'a>(
        &'a self,
        view: &'a (dyn Fn() -> Incoming<'a> + Sync + 'a),
        started: Instant,
    ) -> Delivery<'a> {
        Delivery::new(view, self.handler.name(), &self.subscription, started)
    }

    /// `delivery`, of `received` (due `plan`), enters its layers: their `before` hooks, then
    /// what runs ([`Plan::step`]).
    #[inline(always)]
    fn enter<'a, Id>(
        &self,
        delivery: &mut Delivery<'a>,
        received: &'a Received<Id>,
        plan: Plan,
        not_opened: Option<&'a str>,
    ) -> (Entered, Step<'a>) {
        let unreadable = received.unreadable();
        if let Some(why) = unreadable {
            delivery.set_unreadable(why);
        }
        if plan == Plan::OutOfAttempts {
            delivery.set_out_of_attempts();
        }
        let entered = self.stack.before(delivery);
        let step = plan.step(not_opened, entered.answer(), unreadable.is_some());
        (entered, step)
    }

    /// A delivery leaves its layers: its end (`called`, where the handler ran), their
    /// `after` hooks, their `completed` hooks where the end is final, and what the machine is
    /// told. What it ended as is kept where the machine decides its end, or to log in its
    /// span; its message goes with it once the caller is done with it ([`Kept::keep`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn leave<Id: Clone>(
        &self,
        delivery: &mut Delivery<'_>,
        (entered, step): (Entered, Step<'_>),
        called: Option<&Called>,
        received: &Received<Id>,
        token: Token,
        publishes: u32,
    ) -> Finished<Id, KeptRef<Id>> {
        let ended = self.runtime.now();
        let skipped_error;
        let mut end = match (called, step.completion()) {
            // The common end first, in one test: an answer without an error.
            (
                Some(Ok(Ok(Answer {
                    outcome,
                    error: None,
                    ..
                }))),
                _,
            ) => End::new(Completion::Returned(*outcome), None, ended, true),
            (Some(Ok(Ok(answer))), _) => End::new(
                Completion::Returned(answer.outcome),
                answer.error.as_deref().map(|e| e as &dyn Display),
                ended,
                true,
            ),
            (Some(Ok(called @ Err(rejection))), _) => {
                End::new(Completion::of(called), Some(rejection), ended, true)
            }
            (Some(Err(_panic)), _) => End::new(Completion::Panicked, None, ended, true),
            (None, completion) => {
                skipped_error = self.skipped(&step, received);
                let error = skipped_error.as_deref().map(|e| e as &dyn Display);
                let completion = completion.expect("a step that calls nothing has an end");
                End::new(completion, error, ended, step.by_handler())
            }
        };
        let told = match delivery.span().is_disabled() {
            true => self.stack.end(entered, delivery, &mut end),
            false => {
                (delivery.span().clone()).in_scope(|| self.stack.end(entered, delivery, &mut end))
            }
        };
        let span = delivery.take_span();
        let key = received.key.as_ref().filter(|_| self.key_ordered).cloned();
        let kept = match (told, span.is_disabled()) {
            (true, true) => None,
            _ => Some(Arc::new(Kept {
                error: end.error().map(|error| error.to_string()),
                started: delivery.started(),
                ended: end.ended(),
                entered,
                by_handler: end.by_handler(),
                told,
                span: (!span.is_disabled()).then_some(span),
                received: Default::default(),
            })),
        };
        let tail = match (key, kept) {
            (None, None) => None,
            (key, kept) => Some(Box::new(Tail { key, kept })),
        };
        Finished {
            token,
            delivered: Delivered {
                id: received.id.clone(),
                batch: received.batch.map(|slot| slot.place()),
            },
            completion: end.completion(),
            at: end.ended(),
            publishes,
            attempt: received.redelivery_count.unwrap_or(0),
            tail,
        }
    }

    /// The error that stands for the handler's where its step called nothing.
    #[cold]
    fn skipped<Id>(
        &self,
        step: &Step<'_>,
        received: &Received<Id>,
    ) -> Option<Box<dyn Display + Send + Sync>> {
        match step {
            Step::Unreadable => Some(Box::new(Rejection::Unreadable {
                handler: self.handler.name(),
                reason: received.unreadable().unwrap_or_default().to_owned(),
            })),
            Step::NotOpened(why) => Some(Box::new(format!(
                "could not open the delivery's transaction, so its handler was not called and \
                 the message comes back: {why}"
            ))),
            _ => None,
        }
    }

    /// The invocation of one delivery, `token`, in `txn`. (An `async` block rather than an
    /// `async fn`: an `async fn` moves its arguments once more, into its body, as it starts.)
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would move its arguments once more"
    )]
    #[inline(always)]
    pub(crate) fn one<Id: Clone + Send + Sync + 'static>(
        self: Arc<Self>,
        token: Token,
        received: Received<Id>,
        plan: Plan,
        txn: Txn<Transaction>,
        message_id: impl Fn(&Id) -> ruststream::MessageId + Copy + Send + Sync + 'static,
    ) -> impl Future<Output = Finished<Id, KeptRef<Id>>> + Send + 'static {
        async move {
            let inv = &*self;
            let mut over = None;
            let lent = inv.port(&txn, &mut over).map(|port| match txn {
                Txn::Outside => HandlerPort::new(port).counted(&inv.outbox, token),
                _ => HandlerPort::new(port),
            });
            let view = || received.incoming(message_id);
            let mut delivery = inv.delivery(&view, inv.runtime.now());
            let (entered, step) = inv.enter(&mut delivery, &received, plan, txn.not_opened());
            let called = match step {
                Step::Call => {
                    let incoming = received.incoming(message_id).with_publisher(lent.as_ref());
                    let call = AssertUnwindSafe(inv.handler.call(incoming, &inv.state));
                    Some(InSpan::new(call.catch_unwind(), delivery.span()).await)
                }
                _ => None,
            };
            let publishes = lent.as_ref().map_or(0, HandlerPort::seal);
            let ends = (entered, step);
            let finished = inv.leave(
                &mut delivery,
                ends,
                called.as_ref(),
                &received,
                token,
                publishes,
            );
            drop(delivery);
            if let Some(kept) = finished.tail.as_ref().and_then(|tail| tail.kept.as_ref()) {
                // The message goes with what is kept: the machine may copy it.
                kept.keep(received);
            }
            finished
        }
    }

    /// The invocation of a batch handler's batch, its deliveries numbered on from `first`, in
    /// `txn`: each enters on its own, those the handler is due go to it in one call, and each
    /// leaves on its own. The batch is the machine's own storage, handed back emptied with the
    /// lists kept from one batch to the next (allocating them per batch costs more than
    /// batching saves).
    pub(crate) async fn batch<Id: Clone + Send + Sync + 'static>(
        self: Arc<Self>,
        first: Token,
        mut members: Vec<Gathered<Received<Id>>>,
        txn: Txn<Transaction>,
        mut lists: Lists<Id>,
        message_id: impl Fn(&Id) -> ruststream::MessageId + Copy + Send + Sync + 'static,
    ) -> BatchEnd<Id> {
        let inv = &*self;
        let name = inv.handler.name();
        let started = inv.runtime.now();
        let mut done = std::mem::take(&mut lists.ends);
        done.reserve(members.len());
        let mut kept: Vec<(usize, KeptRef<Id>)> = Vec::new();
        let (members_list, messages_list, spare) = {
            // Each delivery's view of its message borrows the batch for as long as it lives,
            // so the views cannot be a list kept from one batch to the next: they live on the
            // batch's own stack up to `VIEWS_INLINE`, in a list of this batch's past it.
            let spilled: Vec<_>;
            let mut inline = [None; VIEWS_INLINE];
            let view_of = views_for(|gathered: &Gathered<Received<Id>>| {
                let received = &gathered.delivery;
                Some(move || received.incoming(message_id))
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
            let mut entered: Vec<Entering<'_>> = recycle(lists.members);
            entered.extend((members.iter().zip(views)).map(|(gathered, view)| {
                let mut delivery = inv.delivery(view, started);
                let not_opened = txn.not_opened();
                let (entered, step) =
                    inv.enter(&mut delivery, &gathered.delivery, gathered.plan, not_opened);
                Entering {
                    delivery,
                    entered,
                    step,
                }
            }));
            let due = entered.iter().filter(|one| one.step == Step::Call).count();
            // What the call publishes: counted for the messages it was due, outside a
            // transaction; in it, uncounted.
            let mut over = None;
            let port = inv.port(&txn, &mut over);
            let waiting: Vec<Token> = match (due, port, &txn) {
                (1.., Some(_), Txn::Outside) => (entered.iter().enumerate())
                    .filter(|(_, one)| one.step == Step::Call)
                    .map(|(i, _)| Token(first.0.wrapping_add(i as u32)))
                    .collect(),
                _ => Vec::new(),
            };
            let lent = port.map(|port| match txn {
                Txn::Outside => HandlerPort::new(port).counted_batch(&inv.outbox, &waiting),
                _ => HandlerPort::new(port),
            });
            let mut messages: Vec<Incoming<'_>> = recycle(lists.messages);
            let mut spare = lists.spare;
            let mut answered = None;
            if due > 0 {
                messages.reserve(due);
                messages.extend(
                    (members.iter().zip(&entered))
                        .filter(|(_, one)| one.step == Step::Call)
                        .map(|(gathered, _)| {
                            gathered
                                .delivery
                                .incoming(message_id)
                                .with_publisher(lent.as_ref())
                        }),
                );
                let span = tracing::debug_span!("batch", handler = name, messages = messages.len());
                let call =
                    AssertUnwindSafe(inv.handler.call_batch(&messages, &inv.state, &mut spare));
                answered = Some(InSpan::new(call.catch_unwind(), &span).await);
            }
            let publishes = lent.as_ref().map_or(0, HandlerPort::seal);
            // The answers, one per message the handler was due, in order.
            let mut answers =
                (answered.as_mut()).map(|answered| answered.as_mut().map(|list| list.drain(..)));
            for (i, (one, gathered)) in entered.iter_mut().zip(&members).enumerate() {
                let called: Option<Called> = match one.step {
                    Step::Call => Some(match &mut answers {
                        Some(Ok(answers)) => answers.next().ok_or_else(|| {
                            Box::new("the batch handler gave fewer answers than messages")
                                as Box<dyn Any + Send>
                        }),
                        _ => Err(Box::new("the batch handler panicked")),
                    }),
                    _ => None,
                };
                let publishes = if called.is_some() { publishes } else { 0 };
                let token = Token(first.0.wrapping_add(i as u32));
                let ends = (one.entered, one.step);
                let (delivery, received) = (&mut one.delivery, &gathered.delivery);
                let finished =
                    inv.leave(delivery, ends, called.as_ref(), received, token, publishes);
                if let Some(k) = finished.tail.as_ref().and_then(|tail| tail.kept.as_ref()) {
                    kept.push((i, k.clone()));
                }
                done.push(finished);
            }
            drop(answers);
            if let Some(Ok(list)) = answered {
                spare.keep_answers(list);
            }
            (recycle(entered), recycle(messages), spare)
        };
        // A delivery kept for the machine keeps its message.
        if !kept.is_empty() {
            let mut kept = kept.into_iter().peekable();
            for (i, gathered) in members.drain(..).enumerate() {
                if let Some((_, k)) = kept.next_if(|(at, _)| *at == i) {
                    k.keep(gathered.delivery);
                }
            }
        }
        members.clear();
        BatchEnd {
            ends: done,
            storage: members,
            lists: Lists {
                members: members_list,
                messages: messages_list,
                spare,
                ends: Vec::new(),
            },
        }
    }
}

/// What a batch gives back when it ends: each delivery's end, the machine's storage it was
/// handed in, emptied, and its lists, emptied, for the next batch.
pub(crate) struct BatchEnd<Id> {
    pub(crate) ends: Vec<Finished<Id, KeptRef<Id>>>,
    pub(crate) storage: Vec<Gathered<Received<Id>>>,
    pub(crate) lists: Lists<Id>,
}

/// A batch's lists, emptied between batches.
pub(crate) struct Lists<Id> {
    members: Vec<Entering<'static>>,
    messages: Vec<Incoming<'static>>,
    /// What the handler's call keeps from one batch to the next (its values and answers).
    pub(crate) spare: Spare,
    /// The list the next batch's ends are written to.
    pub(crate) ends: Vec<Finished<Id, KeptRef<Id>>>,
}

impl<Id> Default for Lists<Id> {
    fn default() -> Self {
        Lists {
            members: Vec::new(),
            messages: Vec::new(),
            spare: Spare::default(),
            ends: Vec::new(),
        }
    }
}

/// How many views of a batch's messages are kept on the batch's own stack (the future's
/// state, 8 bytes each) before they take a list on the heap: a batch of up to this many
/// allocates none.
const VIEWS_INLINE: usize = 128;

/// `view_of`, as the closure that reads a batch member's message (in an `Option`, to fill an
/// array) for the borrow `'a` of the batch: a closure's signature alone would not tie what
/// it returns to its argument's borrow, and a function returning `impl Fn` would hide that
/// the view has nothing to drop, which an array holding views that borrow it needs.
fn views_for<'a, Id: 'a, V>(
    view_of: impl Fn(&'a Gathered<Received<Id>>) -> Option<V>,
) -> impl Fn(&'a Gathered<Received<Id>>) -> Option<V> {
    view_of
}

/// `list`, emptied, as a list of another type of the same size and alignment, with its
/// allocation: the standard library collects a mapped `vec::IntoIter` in place. What a
/// batch's lists hold borrows from the batch; their room is kept from one batch to the next.
fn recycle<T, U>(mut list: Vec<T>) -> Vec<U> {
    list.clear();
    list.into_iter()
        .map(|_| unreachable!("the list was emptied"))
        .collect()
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
}
