//! A runtime made of one runtime's spawner and another timer.

use super::{BoxTask, Sleep, Spawn, Timer};
use crate::Instant;

/// Spawns with `S` and keeps time with `T`.
///
/// The in-process test harness runs an app on a real runtime's tasks while its time comes from a
/// [`ManualClock`](super::ManualClock): `Hybrid::new(TokioRuntime::current(), clock)`.
#[derive(Debug, Clone)]
pub struct Hybrid<S, T> {
    spawn: S,
    timer: T,
}

impl<S: Spawn, T: Timer> Hybrid<S, T> {
    /// Tasks go to `spawn`, time comes from `timer`.
    pub fn new(spawn: S, timer: T) -> Self {
        Hybrid { spawn, timer }
    }

    /// The timer.
    pub fn timer(&self) -> &T {
        &self.timer
    }
}

impl<S: Spawn, T: Timer> Spawn for Hybrid<S, T> {
    fn spawn(&self, task: BoxTask) {
        self.spawn.spawn(task)
    }
}

impl<S: Spawn, T: Timer> Timer for Hybrid<S, T> {
    fn now(&self) -> Instant {
        self.timer.now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        self.timer.sleep_until(deadline)
    }
}
