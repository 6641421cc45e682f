//! What the app asks of a broker.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::task::Waker;

use super::{HealthCheck, SettingSpec, StartContext, StartError};
use crate::boxed::BoxFuture;
use crate::message::{Message, MessageId};
use crate::publish::PublishError;
use crate::publish::Publishing;
use crate::replay::{Replay, ReplayError, ReplaySummary};

pub use crate::boxed::BoxError;

/// A broker with its mounted handlers, before it connects.
///
/// Implemented by broker crates (`rstream-pulsar`'s `PulsarBroker`). The app checks every
/// broker's registrations before running `on_startup`, then starts them in order.
pub trait Broker<S>: Send + 'static {
    /// A short name for logs ("pulsar").
    fn kind(&self) -> &'static str;

    /// Every registration problem, found without connecting: the service must not start with
    /// any of them.
    fn check(&self) -> Result<(), StartError>;

    /// The settings the process may override without a code change (the broker's URL, its
    /// credentials), looked up in the start context's [`Settings`](super::Settings).
    fn settings(&self) -> &'static [SettingSpec] {
        &[]
    }

    /// What the service does on this broker, for its description (`<service> asyncapi`):
    /// where it connects, with `settings` applied as [`Broker::start`] would apply them
    /// (credentials left out), and the channels and operations of its registrations, checked
    /// as at start. No I/O. The default: nothing described.
    fn describe(
        &self,
        settings: &super::Settings,
    ) -> Result<crate::describe::Description, StartError> {
        let _ = settings;
        Ok(crate::describe::Description::new())
    }

    /// Connect on `context`'s runtime (or, when [`StartContext::is_in_process`], start on the
    /// broker's in-process stand-in) and start one driver per subscription. Every wait of the
    /// broker (retry delays, reconnect back-off) runs on that runtime's timer.
    fn start(
        self: Box<Self>,
        state: Arc<S>,
        context: StartContext,
    ) -> BoxFuture<'static, Result<Box<dyn RunningBroker>, StartError>>;

    /// Move dead-lettered messages back (`<service> dead-letter replay`): connect as
    /// [`Broker::start`] would, with the same settings and the same `context` (or on the
    /// in-process stand-in), but start no handler; read `replay.options.from`, copy each
    /// message, acknowledge it once the copy is confirmed. The default: this broker has none
    /// ([`ReplayError::Unsupported`]).
    fn replay_dead_letters(
        self: Box<Self>,
        replay: Replay,
        context: StartContext,
    ) -> BoxFuture<'static, Result<ReplaySummary, ReplayError>> {
        let broker = self.kind();
        drop((replay, context));
        Box::pin(async move { Err(ReplayError::Unsupported { broker }) })
    }
}

/// A started broker.
pub trait RunningBroker: Send + Sync {
    /// Publish `message`, waiting for the broker's receipt; the message's id.
    fn publish(&self, message: Message) -> Publishing<'_, MessageId>;

    /// Hand `message` to the broker's producer, telling `receipt` the broker's answer later
    /// (see [`Publish::send`](crate::publish::Publish::send)): many messages in flight at
    /// once, batched as a producer batches them.
    fn send(&self, message: Message, receipt: crate::publish::Receipt) -> Publishing<'_, ()>;

    /// Publish `messages`, all to one topic, as one batch, as a batching producer does (on
    /// Pulsar they share one entry), waiting for the broker's receipts; each message's id.
    fn publish_batch(
        &self,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<Vec<MessageId>, PublishError>>;

    /// Completes once nothing is in flight: no delivery is waiting to be handled, running, or
    /// waiting for its settlement call. Deliveries in a `retry_after` wait and messages left to
    /// the ack timeout are not in flight; they are due at a deadline.
    fn idle(&self) -> BoxFuture<'_, ()>;

    /// How many deliveries are in flight now (see [`RunningBroker::idle`]).
    ///
    /// On a virtual clock ([`ManualClock`](crate::ManualClock)) an implementation:
    /// - MUST count the work a fired sleep releases (a redelivery, a settlement call) as in
    ///   flight before it drops that sleep, so that "no sleep unobserved, then nothing in
    ///   flight" means nothing more happens until the clock moves;
    /// - MUST arm a sleep for each of its own deadlines as soon as the deadline exists.
    fn in_flight(&self) -> usize;

    /// How many deliveries were handed to handlers since the broker started: how a caller
    /// tells an app that keeps working without time moving from one that is slow.
    fn handled(&self) -> u64;

    /// Wake `waker` at the next delivery handed to a handler (once).
    fn wake_on_handled(&self, waker: &Waker);

    /// Whether the broker can do its work now (its consumers connected): a check to keep and
    /// ask while it runs, for a readiness probe.
    fn health(&self) -> HealthCheck;

    /// Stop gracefully: stop pulling, let handlers in flight finish, flush settlements, close
    /// consumers and producers. Pending `retry_after` waits are abandoned (their messages stay
    /// unacknowledged and come back).
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()>;

    /// End at once, as a process that dies does: running handlers and `retry_after` waits are
    /// dropped and nothing is flushed; unacknowledged messages come back as after a lost
    /// connection. For a second stop signal, and for tests of what a crash leaves behind.
    fn kill(self: Box<Self>) -> BoxFuture<'static, ()>;
}
