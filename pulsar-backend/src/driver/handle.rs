//! Starting a driver task and stopping it, the same for every transport.

use std::sync::Arc;

use futures::channel::oneshot;
use ruststream::runtime::Runtime;

use super::{ConsumerPort, Driver};

/// A running driver: the signal that stops it, and the one it gives when it has stopped.
pub(crate) struct DriverHandle {
    stop: oneshot::Sender<()>,
    done: oneshot::Receiver<()>,
}

impl DriverHandle {
    /// Run `driver` as a task on `runtime`.
    pub(crate) fn spawn<C: ConsumerPort, S: Send + Sync + 'static>(
        runtime: &Arc<dyn Runtime>,
        driver: Driver<C, S>,
    ) -> Self {
        let (stop, stop_rx) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        runtime.spawn(Box::pin(async move {
            driver.run(stop_rx).await;
            let _ = done_tx.send(());
        }));
        DriverHandle { stop, done }
    }

    /// Tell every driver to stop at once, then wait until all have shut down gracefully.
    pub(crate) async fn stop_all(handles: Vec<DriverHandle>) {
        let mut done = Vec::with_capacity(handles.len());
        for handle in handles {
            let _ = handle.stop.send(());
            done.push(handle.done);
        }
        for finished in done {
            let _ = finished.await;
        }
    }
}
