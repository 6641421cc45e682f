//! What a layer sees of how a delivery ended.

use core::fmt::Display;

use crate::completion::Completion;
use crate::outcome::HandlerOutcome;
use crate::time::Instant;

/// How one delivery's handling ended: the handler's answer (or a layer's, or the
/// framework's), the error that came with it, and when.
#[derive(Clone, Copy)]
pub struct End<'a> {
    completion: Completion,
    error: Option<&'a dyn Display>,
    ended: Instant,
    by_handler: bool,
}

impl core::fmt::Debug for End<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("End")
            .field("completion", &self.completion)
            .field("ended", &self.ended)
            .field("by_handler", &self.by_handler)
            .finish_non_exhaustive()
    }
}

impl<'a> End<'a> {
    /// An end at `ended` (the app's clock), `by_handler` when the handler was called (not
    /// answered by a layer, nor out of attempts).
    #[inline]
    pub fn new(
        completion: Completion,
        error: Option<&'a dyn Display>,
        ended: Instant,
        by_handler: bool,
    ) -> Self {
        End {
            completion,
            error,
            ended,
            by_handler,
        }
    }

    /// How it ended: the outcome returned, or why there is none.
    #[inline]
    pub fn completion(&self) -> Completion {
        self.completion
    }

    /// The outcome returned, if one was.
    #[inline]
    pub fn outcome(&self) -> Option<HandlerOutcome> {
        match self.completion {
            Completion::Returned(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// The error the handler returned, or why it could not run; `None` for a panic and for
    /// an outcome returned without an error.
    #[inline]
    pub fn error(&self) -> Option<&'a dyn Display> {
        self.error
    }

    /// When the handler (or the layer that answered) ended, on the app's clock.
    #[inline]
    pub fn ended(&self) -> Instant {
        self.ended
    }

    /// Whether the handler was called: false where a layer answered before it, or the
    /// delivery was out of attempts.
    #[inline]
    pub fn by_handler(&self) -> bool {
        self.by_handler
    }

    /// Answer `outcome` instead (in [`Layer::after`](super::Layer::after)): the layers
    /// further out, and the settlement, see this one.
    #[inline]
    pub fn answer(&mut self, outcome: HandlerOutcome) {
        self.completion = Completion::Returned(outcome);
    }
}
