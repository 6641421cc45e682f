//! The future a publishing port returns: already done, or waiting for the broker.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::PublishError;
use crate::boxed::BoxFuture;

/// A publish in progress, as [`Publish`](super::Publish) and
/// [`RunningBroker`](crate::app::RunningBroker) return it.
///
/// A broker that stores a message at the call (the in-process Pulsar) returns it
/// [`done`](Publishing::done), which costs no allocation; a broker that waits for a receipt
/// over the network returns its future [`waiting`](Publishing::waiting).
#[must_use = "a publish that waits for the broker does nothing until awaited"]
pub struct Publishing<'a, T>(State<'a, T>);

enum State<'a, T> {
    /// The result, until it is taken by the one poll that completes.
    Done(Option<Result<T, PublishError>>),
    /// The broker's receipt, awaited.
    Waiting(BoxFuture<'a, Result<T, PublishError>>),
}

impl<'a, T> Publishing<'a, T> {
    /// A publish that already has its result: the message is stored (or refused) at the call.
    pub fn done(result: Result<T, PublishError>) -> Self {
        Publishing(State::Done(Some(result)))
    }

    /// A publish whose result comes from `receipt`.
    pub fn waiting(receipt: BoxFuture<'a, Result<T, PublishError>>) -> Self {
        Publishing(State::Waiting(receipt))
    }
}

impl<'a, T: Send + Unpin + 'a> Publishing<'a, T> {
    /// The same publish, its result passed through `f`: at once if it is done (no
    /// allocation), once the receipt comes if it waits (in a second box around the receipt,
    /// which a waiting broker avoids by mapping inside its own future).
    pub fn map<U: 'a>(self, f: fn(T) -> U) -> Publishing<'a, U> {
        match self.0 {
            State::Done(result) => Publishing(State::Done(result.map(|r| r.map(f)))),
            State::Waiting(receipt) => {
                Publishing::waiting(alloc::boxed::Box::pin(async move { receipt.await.map(f) }))
            }
        }
    }
}

impl<T: Unpin> Future for Publishing<'_, T> {
    type Output = Result<T, PublishError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            State::Done(result) => Poll::Ready(
                result
                    .take()
                    .expect("a publish is polled again after it completed"),
            ),
            State::Waiting(receipt) => receipt.as_mut().poll(cx),
        }
    }
}

impl<T> core::fmt::Debug for Publishing<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self.0 {
            State::Done(_) => "Publishing::Done",
            State::Waiting(_) => "Publishing::Waiting",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::string::String;
    use core::task::Waker;

    fn poll_once<T: Unpin>(publishing: &mut Publishing<'_, T>) -> Poll<Result<T, PublishError>> {
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(publishing).poll(&mut cx)
    }

    #[test]
    fn a_done_publish_is_ready_at_the_first_poll() {
        let mut done = Publishing::done(Ok(String::from("1:2:-1")));
        assert!(matches!(poll_once(&mut done), Poll::Ready(Ok(id)) if id == "1:2:-1"));
    }

    #[test]
    fn a_waiting_publish_is_ready_when_its_receipt_is() {
        let mut waits = 1;
        let receipt = core::future::poll_fn(move |cx| {
            if waits == 0 {
                return Poll::Ready(Ok(7u32));
            }
            waits -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        });
        let mut waiting: Publishing<'_, u32> = Publishing::waiting(Box::pin(receipt));
        assert!(poll_once(&mut waiting).is_pending());
        assert!(matches!(poll_once(&mut waiting), Poll::Ready(Ok(7))));
    }

    #[test]
    fn a_mapped_publish_passes_its_result_through_whether_done_or_waiting() {
        let mut done = Publishing::done(Ok(String::from("1:2:-1"))).map(|id| id.len());
        assert!(matches!(poll_once(&mut done), Poll::Ready(Ok(6))));
        let mut refused =
            Publishing::<String>::done(Err(PublishError::NoBroker)).map(|id| id.len());
        assert!(matches!(
            poll_once(&mut refused),
            Poll::Ready(Err(PublishError::NoBroker))
        ));
        let receipt = core::future::ready(Ok(String::from("3:4:-1")));
        let mut waiting = Publishing::waiting(Box::pin(receipt)).map(drop);
        assert!(matches!(poll_once(&mut waiting), Poll::Ready(Ok(()))));
    }
}
