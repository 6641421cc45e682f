//! pulsar-rs's executor on the app's runtime.
//!
//! pulsar-rs knows two executor kinds, tokio and async-std; the kind decides which sockets and
//! timers it uses. On tokio the stock `TokioExecutor` is used (its tasks land on the tokio
//! runtime the app runs in). Everywhere else ([`AppExecutor`]) the kind is async-std, whose
//! sockets and timers run on async-io's own reactor thread and need no particular executor,
//! while pulsar-rs's tasks are spawned on the app's runtime: that is how smol runs pulsar-rs
//! (tried with pulsar-rs 6.9.1: a 20,000-message publish, consume and ack run completed under
//! `smol::block_on`), and async-std through the same path.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pulsar::executor::{Delay, ExecutorKind, Interval, JoinHandle};
use pulsar::Executor;
use ruststream::runtime::Runtime;

/// pulsar-rs tasks on the app's runtime, async-io sockets and timers.
#[derive(Clone)]
pub(crate) struct AppExecutor {
    runtime: Arc<dyn Runtime>,
}

impl AppExecutor {
    pub(crate) fn new(runtime: Arc<dyn Runtime>) -> Self {
        AppExecutor { runtime }
    }
}

impl Executor for AppExecutor {
    fn spawn(&self, f: Pin<Box<dyn Future<Output = ()> + Send>>) -> Result<(), ()> {
        self.runtime.spawn(f);
        Ok(())
    }

    fn spawn_blocking<F, Res>(&self, f: F) -> JoinHandle<Res>
    where
        F: FnOnce() -> Res + Send + 'static,
        Res: Send + 'static,
    {
        // async-std's blocking pool is a plain thread pool: it works under any executor.
        JoinHandle::AsyncStd(async_std::task::spawn_blocking(f))
    }

    fn interval(&self, duration: Duration) -> Interval {
        Interval::AsyncStd(async_std::stream::interval(duration))
    }

    fn delay(&self, duration: Duration) -> Delay {
        Delay::AsyncStd(Box::pin(async_std::task::sleep(duration)))
    }

    fn kind(&self) -> ExecutorKind {
        ExecutorKind::AsyncStd
    }
}
