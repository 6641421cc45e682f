//! A deterministic runtime: one thread, a manual clock, time moving only when all is idle.

use std::future::Future;
use std::sync::Arc;

use ruststream::runtime::{BoxTask, Sleep};
use ruststream::{Instant, ManualClock, Spawn, Timer};

/// Runs tasks on one thread over a [`ManualClock`].
///
/// [`ManualRuntime::block_on`] runs every ready task until none is left, and only then moves the
/// clock to the next pending deadline, like tokio's paused clock with auto-advance. Time
/// therefore never passes while work is in flight, and the same test gives the same trace on
/// every run.
#[derive(Clone, Debug)]
pub struct ManualRuntime {
    clock: ManualClock,
    executor: Arc<smol::Executor<'static>>,
}

impl Default for ManualRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualRuntime {
    /// A runtime at [`Instant::ZERO`] with no tasks.
    pub fn new() -> Self {
        ManualRuntime {
            clock: ManualClock::new(),
            executor: Arc::new(smol::Executor::new()),
        }
    }

    /// The clock, to read or advance by hand.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Run `future` and everything it spawns to completion of `future`.
    ///
    /// # Panics
    ///
    /// If `future` is still pending while no task can run and no sleep is pending: nothing
    /// could ever wake it, which on a real runtime would be a hang.
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let main = self.executor.spawn(future);
        loop {
            while self.executor.try_tick() {}
            if main.is_finished() {
                return futures::executor::block_on(main);
            }
            if self.clock.advance_to_next_deadline().is_none() {
                panic!(
                    "ManualRuntime::block_on: the future is pending, no task is runnable and no \
                     sleep is pending at {:?}; nothing can ever wake it",
                    self.clock.now()
                );
            }
        }
    }
}

impl Spawn for ManualRuntime {
    fn spawn(&self, task: BoxTask) {
        self.executor.spawn(task).detach();
    }
}

impl Timer for ManualRuntime {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        self.clock.sleep_until(deadline)
    }
}
