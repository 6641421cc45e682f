//! Handler parameters after the payload.

use super::Incoming;
use super::Rejection;
use crate::state::{FromRef, State};

/// A handler parameter taken from the delivery or from the app state `S`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a handler parameter in an app whose state is `{S}`",
    label = "not extractable",
    note = "after the payload `&T`, a handler takes, by value: `State<T>` parameters, where `T` is \
            a part of the app state (`T: FromRef<{S}>`; derive `FromRef` on the state struct); \
            `Publisher` to publish; and parts of the message: `Properties`, `MessageKey`, \
            `MessageId`, `RedeliveryCount`, `PublishTime`, `EventTime`, `Topic`"
)]
pub trait Extract<S>: Sized {
    /// Take the parameter.
    fn extract(message: &Incoming<'_>, state: &S, handler: &'static str)
        -> Result<Self, Rejection>;
}

impl<S, T: FromRef<S>> Extract<S> for State<T> {
    fn extract(_: &Incoming<'_>, state: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(State(T::from_ref(state)))
    }
}
