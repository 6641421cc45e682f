//! The layers of the middleware guide's three examples, as the behaviour cases use them: each
//! keeps what it saw where the case can read it (`docs/middleware.md` shows the same three as
//! a service would write them).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ruststream::message::Message;
use ruststream::middleware::{Delivery, End, Flow, Layer};
use ruststream::{HandlerOutcome, PublishError};

/// One call, as [`Timing`] saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    /// The handler.
    pub handler: &'static str,
    /// How long its call took, on the app's clock.
    pub took: Duration,
    /// What it returned, by name (`ack`, `retry`, ...).
    pub outcome: &'static str,
}

/// Times every handler call.
#[derive(Clone, Default)]
pub struct Timing {
    seen: Arc<Mutex<Vec<Timed>>>,
}

impl Timing {
    /// What it timed so far.
    pub fn seen(&self) -> Vec<Timed> {
        self.seen.lock().unwrap().clone()
    }
}

impl Layer for Timing {
    fn after(&self, delivery: &Delivery<'_>, end: &mut End<'_>) {
        self.seen.lock().unwrap().push(Timed {
            handler: delivery.handler(),
            took: end.ended().saturating_duration_since(delivery.started()),
            outcome: end.completion().label(),
        });
    }
}

/// The reason [`RequireTenant`] dead-letters with.
pub const NO_TENANT: &str = "no-tenant";

/// Dead-letters every message without a `tenant` property, without calling the handler.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequireTenant;

impl Layer for RequireTenant {
    fn before(&self, delivery: &mut Delivery<'_>) -> Flow {
        match delivery.property("tenant") {
            Some(_) => Flow::Next,
            None => Flow::Return(HandlerOutcome::dead_letter(NO_TENANT)),
        }
    }
}

/// Adds `origin = <service>` to every message published.
#[derive(Debug, Clone, Copy)]
pub struct Stamp(pub &'static str);

impl Layer for Stamp {
    fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        message.properties.push(("origin".into(), self.0.into()));
        Ok(())
    }
}
