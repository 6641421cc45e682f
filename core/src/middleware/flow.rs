//! What a layer's `before` decides.

use crate::outcome::HandlerOutcome;

/// Whether a delivery goes on towards its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Flow {
    /// Call the next layer, and in the end the handler.
    Next,
    /// Answer this outcome without calling the layers further in nor the handler: it is
    /// settled as if the handler had returned it (a `dead_letter(reason)` goes to the
    /// registration's dead-letter topic).
    Return(HandlerOutcome),
}
