//! # ruststream on async-std
//!
//! [`AsyncStdRuntime`] gives the ruststream core ([`ruststream::Spawn`] and
//! [`ruststream::Timer`]) async-std's global executor and timers.
//!
//! **async-std is discontinued upstream** (RUSTSEC-2025-0052); its maintainers point to smol.
//! This adapter is kept deliberately thin so that services already on async-std keep working;
//! new services should use `ruststream-smol`, which runs on the same I/O and timer reactor
//! (async-io).

use std::time::Duration;

use ruststream::runtime::{BoxTask, Flavor, Sleep};
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
        let origin = self.origin;
        Box::pin(async move {
            // `checked_add` fails only for deadlines centuries away: such a sleep never ends.
            match origin.checked_add(deadline.elapsed_since_origin()) {
                Some(at) => {
                    let left = at.saturating_duration_since(std::time::Instant::now());
                    if left > Duration::ZERO {
                        // async-std's sleep measures from its own creation, now, and never
                        // completes before the duration has passed, so it ends after `at`.
                        async_std::task::sleep(left).await;
                    }
                }
                None => std::future::pending().await,
            }
        })
    }
}
