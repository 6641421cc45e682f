//! Deliveries a driver holds, counted, with waiters for "none".

use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

/// How many deliveries the drivers of a broker hold without a settlement call yet.
#[derive(Clone, Default)]
pub(crate) struct InFlight {
    inner: Arc<Mutex<(usize, Vec<Waker>)>>,
}

impl InFlight {
    pub(crate) fn begin(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
    }

    pub(crate) fn end(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.0 = inner.0.saturating_sub(1);
        if inner.0 == 0 {
            for w in inner.1.drain(..) {
                w.wake();
            }
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    pub(crate) async fn idle(&self) {
        poll_fn(|cx| {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if inner.0 == 0 {
                Poll::Ready(())
            } else {
                inner.1.push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}
