//! What the driver keeps of a delivery whose end the machine decides later: the message (to
//! copy it from), and what its layers' `completed` hooks need.

use std::sync::{Arc, OnceLock};

use ruststream::completion::Completion;
use ruststream::middleware::{Delivery, End, Entered, Stack};
use ruststream::Instant;

use crate::port::Received;

/// A delivery the machine holds on to ([`ruststream::broker::machine::Tail::kept`]).
#[derive(Debug)]
pub(crate) struct Kept<Id> {
    /// Its message, once the invocation is done with it.
    pub(crate) received: OnceLock<Received<Id>>,
    /// The error that came with its end (a dead-letter copy's `DEAD_LETTER_ERROR`).
    pub(crate) error: Option<String>,
    /// When its handling started, and ended.
    pub(crate) started: Instant,
    pub(crate) ended: Instant,
    /// The layers it passed.
    pub(crate) entered: Entered,
    /// Whether the handler was due.
    pub(crate) by_handler: bool,
    /// Whether its layers heard how it ended already (a final end, kept for its span).
    pub(crate) told: bool,
    /// Its span, where it has one (DEBUG), to log what becomes of it in.
    pub(crate) span: Option<tracing::Span>,
}

/// Shared: the machine hands it back with a copy it orders and again once the copy is
/// answered.
pub(crate) type KeptRef<Id> = Arc<Kept<Id>>;

impl<Id: Sync> Kept<Id> {
    /// Keep its message.
    pub(crate) fn keep(&self, received: Received<Id>) {
        let _ = self.received.set(received);
    }

    /// Tell the layers of `stack` it passed that it ended as `completion` (its handler
    /// `handler` of `subscription`), unless they were told already.
    pub(crate) fn tell(
        &self,
        stack: &Stack,
        handler: &'static str,
        subscription: &str,
        completion: Completion,
        message_id: fn(&Id) -> ruststream::MessageId,
    ) {
        let Some(received) = self.received.get().filter(|_| !self.told) else {
            return;
        };
        let view = || received.incoming(message_id);
        let mut delivery = Delivery::new(&view, handler, subscription, self.started);
        if let Some(why) = received.unreadable() {
            delivery.set_unreadable(why);
        }
        let error = self.error.as_ref().map(|e| e as &dyn std::fmt::Display);
        let end = End::new(completion, error, self.ended, self.by_handler);
        let _entered = self.span.as_ref().map(tracing::Span::enter);
        stack.completed(self.entered, &delivery, &end);
    }
}
