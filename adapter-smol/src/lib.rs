//! # ruststream on smol
//!
//! [`SmolRuntime`] gives the ruststream core ([`ruststream::Spawn`] and [`ruststream::Timer`])
//! a smol executor and async-io's timers. By default tasks go to smol's global executor
//! (`smol::spawn`); [`SmolRuntime::with_executor`] uses an executor of your own, which you must
//! then run.

use std::sync::Arc;

use ruststream::runtime::{BoxTask, Flavor, Sleep};
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
        // `checked_add` fails only for deadlines centuries away: such a timer never fires.
        let timer = match self.origin.checked_add(deadline.elapsed_since_origin()) {
            Some(at) => smol::Timer::at(at),
            None => smol::Timer::never(),
        };
        Box::pin(async move {
            timer.await;
        })
    }
}
