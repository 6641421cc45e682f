//! A batch handler's parameters after the payloads.

use super::Batch;
use crate::handler::Publisher;
use crate::state::{FromRef, State};

/// A parameter of a batch handler, taken once for the whole batch: `State<T>` from the app
/// state, [`Batch`] for each message's id, key, properties and redelivery count, or a
/// [`Publisher`]. The parts of one message (`MessageKey`, `Properties`, ..) are read from
/// `Batch` instead.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a batch handler in an app whose state is `{S}`",
    label = "not a batch handler parameter",
    note = "after the payloads `&[T]`, a batch handler takes `State<T>` parameters (where \
            `T: FromRef<{S}>`), `Batch<'_>` (each message's id, key, properties and \
            redelivery count) and `Publisher`"
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

/// What the call publishes, every message it was called for waits for: each is acknowledged
/// only once all of them are confirmed, and comes back as after `retry()` if one failed (in a
/// transactional registration, they join the batch's transaction).
impl<'a, S> ExtractBatch<'a, S> for Publisher {
    fn extract_batch(batch: Batch<'a>, _: &'a S) -> Self {
        match batch.iter().find_map(|message| message.publisher) {
            Some(lent) => Publisher::lent(lent),
            None => Publisher::unavailable(),
        }
    }
}
