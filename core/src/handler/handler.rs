//! The handler trait.

use alloc::boxed::Box;
use core::any::Any;
use core::future::Future;
use core::pin::Pin;

use super::HandlerError;
use crate::message::Incoming;
use crate::HandlerOutcome;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A message handler for an app whose state is `S`.
///
/// Written by `#[subscriber(..)]`; implementing it by hand is possible but rarely useful.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a ruststream handler for an app whose state is `{S}`",
    label = "not a handler",
    note = "a handler is an `async fn` annotated with `#[subscriber(..)]` that returns \
            `HandlerOutcome`; pass the function's name to `include`, e.g. \
            `b.include(process_refund)`",
    note = "if it is such a function, one of its parameters cannot be taken from the app state \
            `{S}`: check that every `State<T>` parameter has `T: FromRef<{S}>` (derive `FromRef` \
            on the state struct)"
)]
pub trait Handler<S>: Send + Sync + 'static {
    /// The handler's name (the function's), for logs, metrics and error messages.
    fn name(&self) -> &'static str;

    /// Where the handler is mounted, as written in `#[subscriber(..)]`: the broker downcasts it
    /// to the descriptor types it understands (for Pulsar, a subscription or a bare topic
    /// name). Called once, at registration.
    fn descriptor(&self) -> Box<dyn Any + Send>;

    /// Decode `message`, extract the other parameters from it and from `state`, and run the
    /// handler.
    fn call<'a>(
        &'a self,
        message: Incoming<'a>,
        state: &'a S,
    ) -> BoxFuture<'a, Result<HandlerOutcome, HandlerError>>;
}
