//! How a handler call ended, before anything is made of it.

use std::any::Any;
use std::fmt::Display;

use ruststream::completion::Completion;
use ruststream::handler::Rejection;
use ruststream::middleware::End;
use ruststream::Instant;
use ruststream::{Answer, HandlerOutcome};

/// What ran for one delivery, and what it returned.
pub(crate) enum Ran {
    /// The handler ran: its answer, its rejection (a parameter that could not be extracted,
    /// a payload that does not decode), or its panic.
    Handler(Result<Result<Answer, Rejection>, Box<dyn Any + Send>>),
    /// A layer answered before the handler.
    Answered(HandlerOutcome),
    /// The delivery came back once more than `max_attempts` allows: nothing ran.
    OutOfAttempts,
}

impl Ran {
    /// The client could not read the message (`reason`): handler `handler` is rejected
    /// without being called.
    pub(crate) fn unreadable(handler: &'static str, reason: &str) -> Self {
        Ran::Handler(Ok(Err(Rejection::Unreadable {
            handler,
            reason: reason.to_owned(),
        })))
    }

    /// Its end, at `ended`, for the layers' `after` hooks.
    #[inline]
    pub(crate) fn end(&self, ended: Instant) -> End<'_> {
        // The common end first, in one test: an answer without an error.
        if let Ran::Handler(Ok(Ok(Answer {
            outcome,
            error: None,
            ..
        }))) = self
        {
            return End::new(Completion::Returned(*outcome), None, ended, true);
        }
        End::new(self.completion(), self.error(), ended, self.by_handler())
    }

    /// The completion it is: an outcome returned, or why there is none.
    #[inline]
    pub(crate) fn completion(&self) -> Completion {
        match self {
            Ran::Handler(Ok(Ok(answer))) => Completion::Returned(answer.outcome),
            Ran::Handler(Ok(Err(Rejection::Decode { .. } | Rejection::Unreadable { .. }))) => {
                Completion::Undecodable
            }
            Ran::Handler(Ok(Err(_))) => Completion::Rejected,
            Ran::Handler(Err(_)) => Completion::Panicked,
            Ran::Answered(outcome) => Completion::Returned(*outcome),
            Ran::OutOfAttempts => Completion::OutOfAttempts,
        }
    }

    /// The error that came with it: the handler's, or why it could not run.
    #[inline]
    pub(crate) fn error(&self) -> Option<&dyn Display> {
        match self {
            Ran::Handler(Ok(Ok(answer))) => answer.error.as_ref().map(|e| e as &dyn Display),
            Ran::Handler(Ok(Err(rejection))) => Some(rejection),
            _ => None,
        }
    }

    /// Whether the handler was due: not answered by a layer, not out of attempts.
    #[inline]
    pub(crate) fn by_handler(&self) -> bool {
        matches!(self, Ran::Handler(_))
    }
}
