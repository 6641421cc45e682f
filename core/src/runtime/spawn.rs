//! Starting a task.

use alloc::boxed::Box;
use core::future::Future;
use core::pin::Pin;

use super::Flavor;

/// A task handed to [`Spawn::spawn`].
pub type BoxTask = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Starts tasks on a runtime.
///
/// An implementation:
///
/// - MUST start polling the task without the caller polling anything: the task runs even if
///   the caller never awaits again.
/// - MUST poll the task until it completes, unless the runtime itself shuts down.
/// - MUST NOT poll the task inside `spawn` itself (no re-entrancy into the caller).
/// - MUST accept calls from any thread, and from inside a task of the same runtime.
/// - MUST contain a panic of the task to that task: the caller and other tasks keep running.
/// - MAY run the task on another thread.
pub trait Spawn: Send + Sync {
    /// Start `task` and detach it.
    fn spawn(&self, task: BoxTask);

    /// The runtime family the tasks run in, for clients that must open matching sockets.
    fn flavor(&self) -> Flavor {
        Flavor::Other
    }
}

impl<S: Spawn + ?Sized> Spawn for alloc::sync::Arc<S> {
    fn spawn(&self, task: BoxTask) {
        (**self).spawn(task)
    }

    fn flavor(&self) -> Flavor {
        (**self).flavor()
    }
}
