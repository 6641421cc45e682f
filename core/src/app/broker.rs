//! What the app asks of a broker.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use super::StartError;
use crate::handler::BoxFuture;
use crate::message::Headers;
use crate::runtime::Runtime;

/// Any error, boxed, as startup and broker calls report them.
pub type BoxError = Box<dyn core::error::Error + Send + Sync + 'static>;

/// A broker with its mounted handlers, before it connects.
///
/// Implemented by broker crates (`ruststream-pulsar`'s `PulsarBroker`). The app checks every
/// broker's registrations before running `on_startup`, then starts them in order.
pub trait Broker<S>: Send + 'static {
    /// A short name for logs ("pulsar").
    fn kind(&self) -> &'static str;

    /// Every registration problem, found without connecting: the service must not start with
    /// any of them.
    fn check(&self) -> Result<(), StartError>;

    /// Connect on `runtime` and start one driver per subscription. Every wait of the broker
    /// (retry delays, reconnect back-off) runs on this runtime's timer.
    fn start(
        self: Box<Self>,
        state: Arc<S>,
        runtime: Arc<dyn Runtime>,
    ) -> BoxFuture<'static, Result<Box<dyn RunningBroker>, StartError>>;

    /// Switch to the broker's embedded, in-process stand-in, if it has one; `false` if not.
    /// Used by `run --embedded`, which needs no server.
    fn embed(&mut self) -> bool;

    /// For test harnesses that know the concrete broker type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A started broker.
pub trait RunningBroker: Send + Sync {
    /// Publish an encoded message to `topic`, waiting for the broker's receipt.
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        headers: Headers,
        key: Option<String>,
    ) -> BoxFuture<'a, Result<(), BoxError>>;

    /// Publish `records` to `topic` as one batch, as a batching producer does (on Pulsar they
    /// share one entry), waiting for the broker's receipt. Returns each message's id as the
    /// broker prints it.
    fn publish_batch<'a>(
        &'a self,
        topic: &'a str,
        records: Vec<crate::message::Record>,
    ) -> BoxFuture<'a, Result<Vec<String>, BoxError>>;

    /// Completes once nothing is in flight: no delivery is waiting to be handled, running, or
    /// waiting for its settlement call. Deliveries in a `retry_after` wait and messages left to
    /// the ack timeout are not in flight; they are due at a deadline.
    fn idle(&self) -> BoxFuture<'_, ()>;

    /// How many deliveries are in flight now (see [`RunningBroker::idle`]).
    fn in_flight(&self) -> usize;

    /// For a broker on a virtual clock (an in-process stand-in): the next instant at which
    /// its own timers are due, so that a harness moving the clock never steps over one.
    /// `None` for a real broker, whose timers run on their own.
    fn next_deadline(&self) -> Option<crate::Instant> {
        None
    }

    /// For a broker on a virtual clock: run its timers due at the clock's current time. A
    /// harness calls it after each step of the clock. Nothing to do for a real broker.
    fn fire_due(&self) {}

    /// Stop gracefully: stop pulling, let handlers in flight finish, flush settlements, close
    /// consumers and producers. Pending `retry_after` waits are abandoned (their messages stay
    /// unacknowledged and come back).
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()>;

    /// For test harnesses that know the concrete type.
    fn as_any(&self) -> &dyn Any;
}
