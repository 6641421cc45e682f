//! What the core asks of an async runtime, and a clock that moves only when told.
//!
//! The core spawns tasks and waits for deadlines through two small, object-safe traits,
//! [`Spawn`] and [`Timer`]; the adapter crates (`rstream-tokio`, `rstream-async-std`,
//! `rstream-smol`) implement them for their runtime, and a broker keeps the pair of the
//! runtime it connected on so that every wait runs there. [`ManualClock`] implements
//! [`Timer`] on a virtual time that moves only by [`ManualClock::advance`]: the base of the
//! deterministic tests.
//!
//! Both traits take boxed futures so that they stay object-safe (`Arc<dyn Runtime>`). A driver
//! asks for one sleep at a time (until its subscription machine's next deadline,
//! [`SubscriptionMachine::poll_timeout`](crate::broker::machine::SubscriptionMachine::poll_timeout)), not one
//! per waiting message, and moves it with [`Timer::reset`] when that deadline changes: one
//! allocation per subscription while anything waits, none per delivery.

mod flavor;
mod manual_clock;
mod spawn;
mod timer;
mod with_clock;

pub use flavor::Flavor;
pub use manual_clock::ManualClock;
pub use spawn::{BoxTask, Spawn};
pub use timer::{Sleep, SleepFuture, Timer};
pub use with_clock::WithClock;

/// A runtime: something that can both spawn and sleep. Implemented for every type that is
/// both [`Spawn`] and [`Timer`].
pub trait Runtime: Spawn + Timer {}

impl<T: Spawn + Timer + ?Sized> Runtime for T {}

/// Let other tasks run once: wakes the current task and returns `Pending` a single time.
///
/// For harnesses that wait for other tasks to react without a timer (a virtual clock must not
/// move while they do).
pub async fn yield_now() {
    let mut yielded = false;
    core::future::poll_fn(|cx| {
        if yielded {
            core::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            core::task::Poll::Pending
        }
    })
    .await
}
