//! # ruststream on smol
//!
//! [`SmolRuntime`] gives the ruststream core ([`ruststream::Spawn`] and [`ruststream::Timer`])
//! a smol executor and async-io's timers. By default tasks go to smol's global executor
//! (`smol::spawn`); [`SmolRuntime::with_executor`] uses an executor of your own, which you must
//! then run.

use std::sync::Arc;

use ruststream::runtime::{BoxTask, Flavor, Sleep, SleepFuture};
use ruststream::{Instant, Spawn, Timer};

/// A smol executor seen through ruststream's runtime traits.
///
/// Instants are measured from the moment this value was created; clones share that origin.
#[derive(Debug, Clone)]
pub struct SmolRuntime {
    executor: Option<Arc<smol::Executor<'static>>>,
    origin: std::time::Instant,
}

impl SmolRuntime {
    /// smol's global executor, which runs on its own threads.
    pub fn global() -> Self {
        SmolRuntime {
            executor: None,
            origin: std::time::Instant::now(),
        }
    }

    /// An executor of your own. Tasks spawned here run only while something drives it
    /// (`executor.run(..)` or `tick`).
    pub fn with_executor(executor: Arc<smol::Executor<'static>>) -> Self {
        SmolRuntime {
            executor: Some(executor),
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for SmolRuntime {
    fn default() -> Self {
        Self::global()
    }
}

impl Spawn for SmolRuntime {
    fn spawn(&self, task: BoxTask) {
        match &self.executor {
            Some(executor) => executor.spawn(task).detach(),
            None => smol::spawn(task).detach(),
        }
    }

    fn flavor(&self) -> Flavor {
        Flavor::Smol
    }
}

impl Timer for SmolRuntime {
    fn now(&self) -> Instant {
        Instant::from_elapsed(self.origin.elapsed())
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(IoSleep::new(self.origin, deadline))
    }
}

/// An async-io timer measured from the runtime's origin, movable in place.
struct IoSleep {
    origin: std::time::Instant,
    timer: smol::Timer,
}

impl IoSleep {
    fn new(origin: std::time::Instant, deadline: Instant) -> Self {
        IoSleep {
            origin,
            timer: timer_at(origin, deadline),
        }
    }
}

/// `checked_add` fails only for deadlines centuries away: such a timer never fires.
fn timer_at(origin: std::time::Instant, deadline: Instant) -> smol::Timer {
    match origin.checked_add(deadline.elapsed_since_origin()) {
        Some(at) => smol::Timer::at(at),
        None => smol::Timer::never(),
    }
}

impl std::future::Future for IoSleep {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        std::pin::Pin::new(&mut self.timer).poll(cx).map(|_| ())
    }
}

impl SleepFuture for IoSleep {
    fn reset(mut self: std::pin::Pin<&mut Self>, deadline: Instant) {
        match self.origin.checked_add(deadline.elapsed_since_origin()) {
            Some(at) => self.timer.set_at(at),
            None => self.timer = smol::Timer::never(),
        }
    }
}
