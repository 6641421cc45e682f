//! How a subscription's publishes report to its driver: the answer to each publish a handler
//! made, and to each copy the subscription machine ordered.
//!
//! A handler does not have to wait for its publishes: the subscription machine acknowledges a
//! delivery only once every message its handler published is confirmed. The publishes are
//! answered on whatever task the producer runs, at any time; each answer lands in the
//! driver's [`Outbox`], which wakes the driver, and the driver hands it to the machine
//! (`SubscriptionMachine::answered`).
//!
//! Which publishes a delivery waits for is counted by its [`Tracker`]: made when the handler
//! takes a `Publisher` (from the [`HandlerPort`] its delivery lends it), counting each publish
//! until the handler ends and the driver seals it.
//! A publish after that (through a `Publisher` kept past the handler's end) is not waited for.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use core::task::{Context, Poll, Waker};

use spin::Mutex;

use super::batch_tally::BatchTally;
use super::{Confirm, Publish, PublishError, Tell};
use crate::MessageId;

/// A delivery's number in its subscription's driver: what the answers of its publishes name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Token(pub u32);

/// Whose publish was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// One the handler made.
    Handler,
    /// The copy the subscription machine ordered (to the dead-letter or the retry topic).
    Republish,
}

/// One publish answered, for the driver to hand to its machine.
#[derive(Debug)]
#[non_exhaustive]
pub struct Answered {
    /// The delivery it was made for.
    pub token: Token,
    /// Whose publish it was.
    pub origin: Origin,
    /// Stored, with its id, or why not.
    pub result: Result<MessageId, PublishError>,
}

/// A subscription's mailbox of publish answers: each answer of a handler's publish, and of a
/// copy the machine ordered, for the driver to hand to its machine ([`crate::publish`]).
#[derive(Debug, Default)]
pub struct Outbox {
    state: Mutex<State>,
    /// How many answers wait in `state`: read without the lock on every driver turn.
    waiting: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    answers: Vec<Answered>,
    waker: Option<Waker>,
}

/// The bit of a confirm's number that says it is a copy's.
const COPY: u64 = 1 << 32;

impl Tell for Outbox {
    fn tell(&self, token: u64, result: Result<MessageId, PublishError>) {
        let origin = if token & COPY == 0 {
            Origin::Handler
        } else {
            Origin::Republish
        };
        let answer = Answered {
            token: Token(token as u32),
            origin,
            result,
        };
        let waker = {
            let mut state = self.state.lock();
            state.answers.push(answer);
            self.waiting.fetch_add(1, Ordering::Release);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Outbox {
    /// An empty mailbox.
    pub fn new() -> Arc<Self> {
        Arc::new(Outbox::default())
    }

    /// The confirm of the copy the machine ordered for delivery `token`
    /// ([`Origin::Republish`]).
    pub fn republished(self: &Arc<Self>, token: Token) -> Confirm {
        Confirm::new(self.clone(), u64::from(token.0) | COPY)
    }

    /// Whether answers wait; if none does, `cx` is woken when one arrives.
    pub fn poll_answers(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.waiting.load(Ordering::Acquire) > 0 {
            return Poll::Ready(());
        }
        let mut state = self.state.lock();
        if state.answers.is_empty() {
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// Whether answers wait, without the lock.
    #[inline]
    pub fn has_answers(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    /// Move the answers waiting into `into` (whose room is reused), in the order they came.
    pub fn take(&self, into: &mut Vec<Answered>) {
        let mut state = self.state.lock();
        self.waiting.store(0, Ordering::Release);
        core::mem::swap(&mut state.answers, into);
    }
}

/// The publishes of one delivery, counted until its handler ends: made when the handler takes
/// a `Publisher`; a publish after the handler ended is not counted (nobody waits for it).
pub struct Tracker {
    /// Who is told each answer: the driver's outbox, or a batch's tally.
    to: Arc<dyn Tell>,
    token: u64,
    /// A batch handler's tally, told the count at the end.
    tally: Option<Arc<BatchTally>>,
    /// Publishes made so far; [`SEALED`] once the handler ended.
    issued: AtomicU32,
}

/// Set in a tracker's count once the handler ended.
const SEALED: u32 = 1 << 31;

impl core::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tracker")
            .field("token", &self.token)
            .field("issued", &self.issued)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    /// The confirm of one more publish of the delivery, or `None` once the handler ended (a
    /// publish nobody waits for).
    pub fn confirm(&self) -> Option<Confirm> {
        self.issued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |issued| {
                (issued & SEALED == 0).then_some(issued + 1)
            })
            .ok()
            .map(|_| Confirm::new(self.to.clone(), self.token))
    }

    /// The handler ended: how many publishes its delivery waits for (those it made; one
    /// for each message of a batch handler's call that made any). Later ones are not
    /// counted.
    pub fn seal(&self) -> u32 {
        let issued = self.issued.fetch_or(SEALED, Ordering::AcqRel) & !SEALED;
        match &self.tally {
            Some(tally) => tally.seal(issued),
            None => issued,
        }
    }
}

/// What a delivery lends its handler for publishing: the broker's port, and, inside a
/// subscription's driver, where the delivery's publishes are counted (the driver's outbox and
/// the delivery's token), so that its acknowledgement waits for them. The [`Tracker`] is made
/// on first use: a handler that takes no `Publisher` costs nothing more.
pub struct HandlerPort<'a> {
    port: &'a Arc<dyn Publish>,
    counted: Option<Counted<'a>>,
    tracker: Mutex<Option<Arc<Tracker>>>,
    /// Whether the tracker was made: a handler that took no `Publisher` is sealed without the
    /// lock.
    made: AtomicBool,
}

/// Who a lent port's publishes are counted for.
#[derive(Debug, Clone, Copy)]
enum Counted<'a> {
    /// One delivery, reporting to the driver's outbox.
    One(&'a Arc<Outbox>, Token),
    /// A batch handler's call: the messages it was called for, reporting to the outbox once
    /// all are answered ([`BatchTally`]).
    Batch(&'a Arc<Outbox>, &'a [Token]),
}

impl core::fmt::Debug for HandlerPort<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HandlerPort")
            .field("counted", &self.counted)
            .finish_non_exhaustive()
    }
}

impl<'a> HandlerPort<'a> {
    /// The broker's `port`, its publishes counted by nobody.
    #[inline]
    pub fn new(port: &'a Arc<dyn Publish>) -> Self {
        HandlerPort {
            port,
            counted: None,
            tracker: Mutex::new(None),
            made: AtomicBool::new(false),
        }
    }

    /// The same port, the publishes counted for delivery `token`, reporting to `outbox`.
    #[inline]
    pub fn counted(mut self, outbox: &'a Arc<Outbox>, token: Token) -> Self {
        self.counted = Some(Counted::One(outbox, token));
        self
    }

    /// The same port, lent to a batch handler's call: the publishes are counted for the
    /// deliveries `waiting` (those the handler was called for), each told one answer once
    /// the call ended and all were answered (see [`HandlerPort::seal`]).
    #[inline]
    pub fn counted_batch(mut self, outbox: &'a Arc<Outbox>, waiting: &'a [Token]) -> Self {
        self.counted = Some(Counted::Batch(outbox, waiting));
        self
    }

    /// The broker's port.
    pub fn port(&self) -> &'a Arc<dyn Publish> {
        self.port
    }

    /// The delivery's tracker, made on first use; `None` where nothing counts.
    pub fn tracker(&self) -> Option<Arc<Tracker>> {
        let counted = self.counted?;
        self.made.store(true, Ordering::Release);
        let tracker = self
            .tracker
            .lock()
            .get_or_insert_with(|| {
                let (to, token, tally): (Arc<dyn Tell>, u64, _) = match counted {
                    Counted::One(outbox, token) => (outbox.clone(), u64::from(token.0), None),
                    Counted::Batch(outbox, waiting) => {
                        let tally = Arc::new(BatchTally::new(outbox.clone(), waiting.to_vec()));
                        (tally.clone(), 0, Some(tally))
                    }
                };
                Arc::new(Tracker {
                    to,
                    token,
                    tally,
                    issued: AtomicU32::new(0),
                })
            })
            .clone();
        Some(tracker)
    }

    /// The handler ended: how many publishes its delivery waits for (0 if it took no
    /// `Publisher`). For a batch handler's call, each message it was called for waits for
    /// one answer, told once all the call's publishes are answered (1, or 0 if it made
    /// none).
    #[inline]
    pub fn seal(&self) -> u32 {
        if !self.made.load(Ordering::Acquire) {
            return 0;
        }
        match &*self.tracker.lock() {
            Some(tracker) => tracker.seal(),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_name_their_delivery_and_origin_and_a_sealed_tracker_counts_no_more() {
        let outbox = Outbox::new();
        let port: Arc<dyn Publish> = Arc::new(Nowhere);
        let tracking = HandlerPort::new(&port).counted(&outbox, Token(7));
        let tracker = tracking.tracker().expect("counted");
        let first = tracker.confirm().expect("counted");
        let second = tracker.confirm().expect("counted");
        assert_eq!(tracking.seal(), 2);
        assert!(tracker.confirm().is_none(), "after the handler ended");
        assert!(!outbox.has_answers());
        first.tell(Ok(MessageId::new(&[1, 0, -1])));
        drop(second);
        outbox
            .republished(Token(7))
            .tell(Ok(MessageId::new(&[2, 0, -1])));
        let mut answers = Vec::new();
        outbox.take(&mut answers);
        let seen: Vec<_> = answers
            .iter()
            .map(|a| (a.token, a.origin, a.result.is_ok()))
            .collect();
        assert_eq!(
            seen,
            [
                (Token(7), Origin::Handler, true),
                (Token(7), Origin::Handler, false),
                (Token(7), Origin::Republish, true),
            ]
        );
        assert!(!outbox.has_answers());
    }

    #[test]
    fn a_delivery_whose_handler_took_no_publisher_made_none() {
        let outbox = Outbox::new();
        let port: Arc<dyn Publish> = Arc::new(Nowhere);
        assert_eq!(HandlerPort::new(&port).counted(&outbox, Token(1)).seal(), 0);
        assert!(
            HandlerPort::new(&port).tracker().is_none(),
            "outside a driver"
        );
    }

    /// A port that sends nothing.
    struct Nowhere;

    impl Publish for Nowhere {
        fn send(
            &self,
            _message: crate::message::Message,
            receipt: super::super::Receipt,
        ) -> super::super::Publishing<'_, ()> {
            drop(receipt);
            super::super::Publishing::done(Ok(()))
        }
    }
}
