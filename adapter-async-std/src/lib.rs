//! # ruststream on async-std
//!
//! [`AsyncStdRuntime`] gives the ruststream core ([`ruststream::Spawn`] and
//! [`ruststream::Timer`]) async-std's global executor and timers.
//!
//! **async-std is discontinued upstream** (RUSTSEC-2025-0052); its maintainers point to smol.
//! This adapter is kept deliberately thin so that services already on async-std keep working;
//! new services should use `rstream-smol`, which runs on the same I/O and timer reactor
//! (async-io).
//!
//! Call [`start_global_executor`] first in `main` (the runner's async-std entry point does):
//! it starts async-std's executor on one thread unless `ASYNC_STD_THREAD_COUNT` says
//! otherwise: on one thread a Pulsar service used about 40 % less CPU per message than on
//! async-std's default of one thread per core.

mod executor;

pub use executor::{start_global_executor, THREAD_COUNT_VAR};

use ruststream::runtime::{BoxTask, Flavor, Sleep, SleepFuture};
use ruststream::{Instant, Spawn, Timer};

/// async-std's global runtime seen through ruststream's runtime traits.
///
/// Instants are measured from the moment this value was created; clones share that origin.
#[derive(Debug, Clone, Copy)]
pub struct AsyncStdRuntime {
    origin: std::time::Instant,
}

impl AsyncStdRuntime {
    /// The global async-std runtime, with its time origin now.
    pub fn new() -> Self {
        AsyncStdRuntime {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for AsyncStdRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl Spawn for AsyncStdRuntime {
    fn spawn(&self, task: BoxTask) {
        // Dropping the handle detaches the task.
        drop(async_std::task::spawn(task));
    }

    fn flavor(&self) -> Flavor {
        Flavor::AsyncStd
    }
}

impl Timer for AsyncStdRuntime {
    fn now(&self) -> Instant {
        Instant::from_elapsed(self.origin.elapsed())
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(ReactorSleep {
            origin: self.origin,
            timer: reactor_timer(self.origin, deadline),
        })
    }
}

/// A sleep on async-io's reactor (where async-std's own sleeps run), measured from the
/// runtime's origin; `reset` moves the timer in place.
struct ReactorSleep {
    origin: std::time::Instant,
    timer: async_io::Timer,
}

/// The reactor timer for `deadline`; one centuries away (past `Instant`'s range) never fires.
fn reactor_timer(origin: std::time::Instant, deadline: Instant) -> async_io::Timer {
    origin
        .checked_add(deadline.elapsed_since_origin())
        .map_or_else(async_io::Timer::never, async_io::Timer::at)
}

impl std::future::Future for ReactorSleep {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        std::pin::Pin::new(&mut self.timer).poll(cx).map(drop)
    }
}

impl SleepFuture for ReactorSleep {
    fn reset(mut self: std::pin::Pin<&mut Self>, deadline: Instant) {
        let timer = reactor_timer(self.origin, deadline);
        // `Timer` is a small value, not a boxed future: replacing it does not allocate.
        self.timer = timer;
    }
}
