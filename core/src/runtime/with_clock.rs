//! A runtime made of one runtime's spawner and another clock.

use super::{BoxTask, Flavor, Sleep, Spawn, Timer};
use crate::Instant;

/// Spawns with `S` and keeps time with `T`.
///
/// The in-process test harness runs an app on a real runtime's tasks while its time comes from a
/// [`ManualClock`](super::ManualClock): `WithClock::new(TokioRuntime::current(), clock)`.
#[derive(Debug, Clone)]
pub struct WithClock<S, T> {
    spawn: S,
    timer: T,
}

impl<S: Spawn, T: Timer> WithClock<S, T> {
    /// Tasks go to `spawn`, time comes from `timer`.
    pub fn new(spawn: S, timer: T) -> Self {
        WithClock { spawn, timer }
    }
}

impl<S: Spawn, T: Timer> Spawn for WithClock<S, T> {
    fn spawn(&self, task: BoxTask) {
        self.spawn.spawn(task)
    }

    fn flavor(&self) -> Flavor {
        self.spawn.flavor()
    }
}

impl<S: Spawn, T: Timer> Timer for WithClock<S, T> {
    fn now(&self) -> Instant {
        self.timer.now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        self.timer.sleep_until(deadline)
    }

    fn reset(&self, sleep: &mut Sleep, deadline: Instant) {
        self.timer.reset(sleep, deadline)
    }
}
