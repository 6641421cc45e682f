//! Many publishes in flight at once, from outside any handler: a file published line by line
//! (the runner's `--publish`), a tool filling a topic.

use alloc::sync::Arc;
use core::future::Future;
use core::task::{Poll, Waker};

use spin::Mutex;

use super::{Confirm, PublishError, Tell};
use crate::MessageId;

/// Counts the answers of many publishes, each numbered by the caller (a line number, say),
/// and keeps the failure of the lowest number: send each message with
/// [`Pipeline::confirm`], check [`Pipeline::failure`] as you go, then await
/// [`Pipeline::drained`].
///
/// ```
/// use ruststream::publish::{Pipeline, Receipt};
/// use ruststream::MessageId;
///
/// let pipeline = Pipeline::new();
/// let first = pipeline.confirm(1);
/// let second = pipeline.confirm(2);
/// Receipt::to(first).tell(Ok(MessageId::new(&[1, 0, -1])));
/// assert_eq!(pipeline.in_flight(), 1);
/// drop(second); // what a port does with a message it could not send
/// assert_eq!(pipeline.in_flight(), 0);
/// assert_eq!(pipeline.failure().map(|(line, _)| line), Some(2));
/// assert_eq!(pipeline.confirmed(), 1);
/// ```
#[derive(Debug, Default)]
pub struct Pipeline {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_flight: usize,
    confirmed: u64,
    failure: Option<(u64, PublishError)>,
    waker: Option<Waker>,
}

impl Tell for Pipeline {
    fn tell(&self, token: u64, result: Result<MessageId, PublishError>) {
        let waker = {
            let mut state = self.state.lock();
            state.in_flight -= 1;
            match result {
                Ok(_) => state.confirmed += 1,
                Err(error) => {
                    if state
                        .failure
                        .as_ref()
                        .is_none_or(|(first, _)| token < *first)
                    {
                        state.failure = Some((token, error));
                    }
                }
            }
            if state.in_flight == 0 || state.failure.is_some() {
                state.waker.take()
            } else {
                None
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Pipeline {
    /// Nothing in flight yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Pipeline::default())
    }

    /// The confirm of one more publish, numbered `token`.
    pub fn confirm(self: &Arc<Self>, token: u64) -> Confirm {
        self.state.lock().in_flight += 1;
        Confirm::new(self.clone(), token)
    }

    /// Publishes not answered yet.
    pub fn in_flight(&self) -> usize {
        self.state.lock().in_flight
    }

    /// Publishes the broker confirmed.
    pub fn confirmed(&self) -> u64 {
        self.state.lock().confirmed
    }

    /// The failed publish with the lowest number so far, and why.
    pub fn failure(&self) -> Option<(u64, PublishError)> {
        self.state.lock().failure.clone()
    }

    /// Completes once every publish was answered, or at the first failure.
    pub fn drained(&self) -> impl Future<Output = ()> + '_ {
        core::future::poll_fn(|cx| {
            let mut state = self.state.lock();
            if state.in_flight == 0 || state.failure.is_some() {
                Poll::Ready(())
            } else {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}
