//! Starting a driver task and stopping it, the same for every transport.

use std::sync::Arc;

use futures::channel::oneshot;
use futures::future::{abortable, AbortHandle};
use ruststream::runtime::Runtime;
use ruststream::Handler;

use crate::port::ConsumerPort;
use crate::Driver;

/// A running driver: the signal that stops it, the handle that kills it, and the signal it
/// gives when it has ended.
pub struct DriverHandle {
    stop: oneshot::Sender<()>,
    abort: AbortHandle,
    done: oneshot::Receiver<()>,
}

impl DriverHandle {
    /// Run `driver` as a task on `runtime`.
    pub fn spawn<C: ConsumerPort, S: Send + Sync + 'static, H: Handler<S>>(
        runtime: &Arc<dyn Runtime>,
        driver: Driver<C, S, H>,
    ) -> Self {
        let (stop, stop_rx) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        let (run, abort) = abortable(driver.run(stop_rx));
        runtime.spawn(Box::pin(async move {
            let _ = run.await;
            let _ = done_tx.send(());
        }));
        DriverHandle { stop, abort, done }
    }

    /// Tell every driver to stop at once, then wait until all have shut down gracefully.
    pub async fn stop_all(handles: Vec<DriverHandle>) {
        let mut done = Vec::with_capacity(handles.len());
        for handle in handles {
            let _ = handle.stop.send(());
            done.push(handle.done);
        }
        for finished in done {
            let _ = finished.await;
        }
    }

    /// End every driver at once, as a process that dies does: running handlers and
    /// `retry_after` waits are dropped, nothing is flushed, and each consumer goes as a lost
    /// connection goes (its unacknowledged messages return to the subscription).
    pub async fn kill_all(handles: Vec<DriverHandle>) {
        let mut done = Vec::with_capacity(handles.len());
        for handle in handles {
            handle.abort.abort();
            done.push(handle.done);
        }
        for finished in done {
            let _ = finished.await;
        }
    }
}
