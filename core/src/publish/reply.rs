//! A publish's answer, awaited: what `publish_for_id(..).await` (and the app's `publish`) waits on.

use alloc::sync::Arc;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use spin::Mutex;

use super::{Confirm, PublishError, Tell};
use crate::MessageId;

/// The message id of one publish, once the broker answers: a future, paired with the
/// [`Confirm`] its port tells ([`Reply::new`]).
#[derive(Debug)]
#[must_use = "a reply does nothing unless awaited"]
pub struct Reply {
    cell: Arc<Cell>,
}

#[derive(Debug, Default)]
struct Cell(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    answer: Option<Result<MessageId, PublishError>>,
    waker: Option<Waker>,
}

impl Tell for Cell {
    fn tell(&self, _token: u64, result: Result<MessageId, PublishError>) {
        let waker = {
            let mut state = self.0.lock();
            state.answer = Some(result);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Reply {
    /// A reply and the confirm to give the port with the message.
    pub fn new() -> (Reply, Confirm) {
        let cell = Arc::new(Cell::default());
        let confirm = Confirm::new(cell.clone(), 0);
        (Reply { cell }, confirm)
    }
}

impl Future for Reply {
    type Output = Result<MessageId, PublishError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.cell.0.lock();
        match state.answer.take() {
            Some(answer) => Poll::Ready(answer),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poll(reply: &mut Reply) -> Poll<Result<MessageId, PublishError>> {
        Pin::new(reply).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn a_reply_is_ready_once_told_and_fails_if_its_confirm_is_dropped() {
        let (mut reply, confirm) = Reply::new();
        assert!(poll(&mut reply).is_pending());
        confirm.tell(Ok(MessageId::new(&[3, 4, -1])));
        assert!(matches!(poll(&mut reply), Poll::Ready(Ok(id)) if id.parts() == [3, 4, -1]));
        let (mut reply, confirm) = Reply::new();
        drop(confirm);
        assert!(matches!(
            poll(&mut reply),
            Poll::Ready(Err(PublishError::Abandoned))
        ));
    }
}
