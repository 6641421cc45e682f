//! The handler invocations a driver runs at once, in slots reused from one delivery to the next.
//!
//! A set of boxed futures (`FuturesUnordered`) allocates for every delivery: the box and the
//! set's task. Here each slot keeps its heap cell and its waker for the driver's life, and
//! a new invocation is written into a free cell in place. A delivery is polled once as it
//! starts, so a handler that finishes without waiting (an acknowledgement, a decode error)
//! never waits for the driver's next turn. Slots grow to the driver's concurrency and stay.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// Running futures of one type, polled when woken.
pub(crate) struct Slots<F: Future> {
    slots: Vec<Slot<F>>,
    /// Indices of empty slots.
    free: Vec<usize>,
    /// How many slots hold a future.
    running: usize,
    woken: Arc<Woken>,
    /// Indices taken from `woken`, still to poll; kept to reuse its buffer.
    due: Vec<usize>,
}

struct Slot<F> {
    /// `None` when free; pinned on the heap once, rewritten in place.
    future: Pin<Box<Option<F>>>,
    /// `signal` as a `Waker`, handed to the future it polls.
    waker: Waker,
    signal: Arc<SlotWaker>,
}

/// What woke since the driver last looked, and the driver to tell.
#[derive(Default)]
struct Woken {
    slots: Mutex<Vec<usize>>,
    /// Whether `slots` has any, set under its lock: the driver looks at every turn, and most
    /// turns nothing woke.
    any: AtomicBool,
    driver: AtomicWaker,
}

/// The waker of one slot: queues its index and wakes the driver.
struct SlotWaker {
    index: usize,
    /// Whether the index is in `woken` already, so a busy future is queued once.
    queued: AtomicBool,
    woken: Arc<Woken>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let mut slots = self
                .woken
                .slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            slots.push(self.index);
            self.woken.any.store(true, Ordering::Release);
        }
        self.woken.driver.wake();
    }
}

impl<F: Future> Slots<F> {
    pub(crate) fn new() -> Self {
        Slots {
            slots: Vec::new(),
            free: Vec::new(),
            running: 0,
            woken: Arc::default(),
            due: Vec::new(),
        }
    }

    /// How many futures are running.
    pub(crate) fn len(&self) -> usize {
        self.running
    }

    /// Start `future` in a free slot and poll it once: its output if it finished at once,
    /// else it runs on and [`Slots::poll_next`] yields its output later. (The driver writes
    /// its futures in place instead: [`Slots::free_slot`], then [`Slots::started`].)
    #[cfg(test)]
    pub(crate) fn start(&mut self, future: F) -> Option<F::Output> {
        let (index, mut slot) = self.free_slot();
        slot.set(Some(future));
        self.started(index)
    }

    /// A free slot, for the caller to write a future into in place (written where it is
    /// made, the future is not copied, as a closure the compiler may not inline would),
    /// then [`Slots::started`] with its index.
    #[inline(always)]
    pub(crate) fn free_slot(&mut self) -> (usize, Pin<&mut Option<F>>) {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = self.slots.len();
                let signal = Arc::new(SlotWaker {
                    index,
                    queued: AtomicBool::new(false),
                    woken: self.woken.clone(),
                });
                self.slots.push(Slot {
                    future: Box::pin(None),
                    waker: Waker::from(signal.clone()),
                    signal,
                });
                index
            }
        };
        (index, self.slots[index].future.as_mut())
    }

    /// The future written into slot `index` ([`Slots::free_slot`]) starts: it is polled
    /// once, and its output given if it finished at once.
    #[inline(always)]
    pub(crate) fn started(&mut self, index: usize) -> Option<F::Output> {
        self.running += 1;
        self.poll_slot(index)
    }

    /// The output of a future that finished, `Ready(None)` when none runs, else `Pending`
    /// with the task's waker kept for the next wake-up.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        self.woken.driver.register(cx.waker());
        loop {
            if self.due.is_empty() && self.woken.any.load(Ordering::Acquire) {
                let mut woken = self
                    .woken
                    .slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                self.woken.any.store(false, Ordering::Relaxed);
                std::mem::swap(&mut *woken, &mut self.due);
                // Polled in the order they woke.
                self.due.reverse();
            }
            let Some(index) = self.due.pop() else {
                return if self.running == 0 {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                };
            };
            if let Some(output) = self.poll_slot(index) {
                return Poll::Ready(Some(output));
            }
        }
    }

    /// Drop every running future (cancelled, with no output).
    pub(crate) fn clear(&mut self) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.future.is_some() {
                slot.future.set(None);
                self.free.push(index);
            }
        }
        self.running = 0;
    }

    /// Poll the future in slot `index` with that slot's waker; on completion the slot is
    /// freed.
    fn poll_slot(&mut self, index: usize) -> Option<F::Output> {
        let slot = &mut self.slots[index];
        // Cleared before polling: a wake-up during or after this poll queues it again.
        slot.signal.queued.store(false, Ordering::Release);
        let future = slot.future.as_mut().as_pin_mut()?;
        let output = match future.poll(&mut Context::from_waker(&slot.waker)) {
            Poll::Ready(output) => output,
            Poll::Pending => return None,
        };
        slot.future.set(None);
        self.free.push(index);
        self.running -= 1;
        Some(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::oneshot;
    use futures::FutureExt;

    type Waiting = futures::future::BoxFuture<'static, u32>;

    fn waiting(n: u32) -> (oneshot::Sender<()>, Waiting) {
        let (tx, rx) = oneshot::channel::<()>();
        (tx, rx.map(move |_| n).boxed())
    }

    #[test]
    fn a_future_that_finishes_at_once_gives_its_output_and_its_slot_back() {
        let mut slots = Slots::new();
        assert_eq!(slots.start(futures::future::ready(7)), Some(7));
        assert_eq!(slots.len(), 0);
        assert_eq!(slots.start(futures::future::ready(8)), Some(8));
        assert_eq!(slots.slots.len(), 1, "the one slot was reused");
    }

    #[test]
    fn waiting_futures_come_out_when_woken_in_wake_order() {
        let mut slots = Slots::new();
        let (first, a) = waiting(1);
        let (second, b) = waiting(2);
        assert_eq!(slots.start(a), None);
        assert_eq!(slots.start(b), None);
        assert_eq!(slots.len(), 2);
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(slots.poll_next(&mut cx), Poll::Pending);
        second.send(()).unwrap();
        first.send(()).unwrap();
        assert_eq!(slots.poll_next(&mut cx), Poll::Ready(Some(2)));
        assert_eq!(slots.poll_next(&mut cx), Poll::Ready(Some(1)));
        assert_eq!(slots.poll_next(&mut cx), Poll::Ready(None));
        let (_third, c) = waiting(3);
        assert_eq!(slots.start(c), None);
        assert_eq!(slots.slots.len(), 2, "a free slot was reused");
    }

    #[test]
    fn a_wake_up_reaches_the_task_that_polled_last() {
        struct Flag(AtomicBool);
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut slots = Slots::new();
        let (tx, a) = waiting(1);
        assert_eq!(slots.start(a), None);
        assert_eq!(
            slots.poll_next(&mut Context::from_waker(&waker)),
            Poll::Pending
        );
        tx.send(()).unwrap();
        assert!(flag.0.load(Ordering::SeqCst));
    }

    #[test]
    fn cleared_futures_are_dropped_without_output() {
        let mut slots = Slots::new();
        let (tx, a) = waiting(1);
        assert_eq!(slots.start(a), None);
        slots.clear();
        assert!(tx.is_canceled(), "the future was dropped");
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(slots.poll_next(&mut cx), Poll::Ready(None));
    }
}
