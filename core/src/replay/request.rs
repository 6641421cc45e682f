//! A replay as handed to a broker: the options, where its steps are reported, when to stop.

use alloc::boxed::Box;
use core::future::Future;

use super::{ReplayEvent, ReplayOptions};
use crate::boxed::BoxFuture;

/// Where a replay reports each step (the runner prints them).
pub type EventSink = Box<dyn FnMut(&ReplayEvent) + Send>;

/// A dead-letter replay to run: [`ReplayOptions`], a function that sees every
/// [`ReplayEvent`], and a future that, once complete, asks the replay to stop.
///
/// A stop is taken between two messages: the copy and acknowledgement in flight finish first,
/// so that no message is left copied and unacknowledged (which would be moved twice).
#[non_exhaustive]
pub struct Replay {
    /// What to move.
    pub options: ReplayOptions,
    /// Sees every step, in order.
    pub events: EventSink,
    /// Completes when the replay should stop.
    pub stop: BoxFuture<'static, ()>,
}

impl Replay {
    /// Run `options`, reporting nothing and stopping only when done.
    pub fn new(options: ReplayOptions) -> Self {
        Replay {
            options,
            events: Box::new(|_| {}),
            stop: Box::pin(core::future::pending()),
        }
    }

    /// Report every step to `sink`.
    pub fn on_event(mut self, sink: impl FnMut(&ReplayEvent) + Send + 'static) -> Self {
        self.events = Box::new(sink);
        self
    }

    /// Stop (between two messages) once `signal` completes: a Ctrl-C, a deadline, a request.
    pub fn stop_when(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.stop = Box::pin(signal);
        self
    }
}

impl core::fmt::Debug for Replay {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Replay")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}
