//! A batch handler's parameters after the payloads.

use super::Batch;
use crate::state::{FromRef, State};

/// A parameter of a batch handler, taken once for the whole batch: `State<T>` from the app
/// state, or [`Batch`] for each message's id, key, properties and redelivery count. The
/// parts of one message (`MessageKey`, `Properties`, ..) are read from `Batch` instead, and a
/// `Publisher` is not offered to batch handlers yet.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a batch handler in an app whose state is `{S}`",
    label = "not a batch handler parameter",
    note = "after the payloads `&[T]`, a batch handler takes `State<T>` parameters (where \
            `T: FromRef<{S}>`) and `Batch<'_>` (each message's id, key, properties and \
            redelivery count)"
)]
pub trait ExtractBatch<'a, S>: Sized {
    /// Take the parameter for `batch`.
    fn extract_batch(batch: Batch<'a>, state: &'a S) -> Self;
}

impl<'a, S, T: FromRef<S>> ExtractBatch<'a, S> for State<T> {
    fn extract_batch(_: Batch<'a>, state: &'a S) -> Self {
        State(T::from_ref(state))
    }
}

impl<'a, S> ExtractBatch<'a, S> for Batch<'a> {
    fn extract_batch(batch: Batch<'a>, _: &'a S) -> Self {
        batch
    }
}
