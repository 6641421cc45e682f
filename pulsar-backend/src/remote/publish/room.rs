//! The bound on messages handed to the producers and not answered yet, and the wait for room
//! under it: what a publish that outpaces the broker waits on (backpressure), rather than
//! failing (pulsar-rs's `SlowDown`) or holding more and more memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

/// Room for unanswered messages, shared by every producer of a broker, counted in messages
/// and in payload bytes (the Java client bounds its producers' memory the same way).
#[derive(Debug)]
pub(super) struct Room {
    messages: AtomicUsize,
    bytes: AtomicUsize,
    max_messages: usize,
    max_bytes: usize,
    /// Who waits for room.
    waiting: Mutex<Vec<Waker>>,
}

impl Room {
    pub(super) fn new(max_messages: usize, max_bytes: usize) -> Self {
        Room {
            messages: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_messages: max_messages.max(1),
            max_bytes: max_bytes.max(1),
            waiting: Mutex::new(Vec::new()),
        }
    }

    /// Take room for one message of `bytes`, if there is: below both bounds, or nothing
    /// pending at all (a message larger than the byte bound still goes, alone).
    #[inline]
    pub(super) fn try_take(&self, bytes: usize) -> bool {
        let messages = self.messages.fetch_add(1, Ordering::AcqRel);
        let held = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        if messages == 0 || (messages < self.max_messages && held + bytes <= self.max_bytes) {
            return true;
        }
        self.messages.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        false
    }

    /// Take room for one message of `bytes`, waiting for it (`cx` is woken when room is
    /// given back).
    pub(super) fn poll_take(&self, bytes: usize, cx: &mut Context<'_>) -> Poll<()> {
        if self.try_take(bytes) {
            return Poll::Ready(());
        }
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(cx.waker().clone());
        // Room given back between the two: try again, now that a release would wake us.
        if self.try_take(bytes) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Give back the room of `count` messages of `bytes` in all (answered).
    pub(super) fn give_back(&self, count: usize, bytes: usize) {
        self.messages.fetch_sub(count, Ordering::AcqRel);
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        for waker in waiting {
            waker.wake();
        }
    }

    /// Messages handed over and not answered.
    #[cfg(test)]
    pub(super) fn pending(&self) -> usize {
        self.messages.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    #[test]
    fn room_is_bounded_in_messages_and_bytes_and_given_back() {
        let room = Room::new(2, 100);
        assert!(room.try_take(10));
        assert!(room.try_take(10));
        assert!(!room.try_take(10), "two messages at most");
        let mut cx = Context::from_waker(Waker::noop());
        assert!(room.poll_take(10, &mut cx).is_pending());
        room.give_back(1, 10);
        assert!(room.poll_take(10, &mut cx).is_ready());
        room.give_back(2, 20);
        assert_eq!(room.pending(), 0);
        assert!(
            room.try_take(500),
            "alone, a message over the byte bound still goes"
        );
        assert!(!room.try_take(1), "but nothing joins it");
    }
}
