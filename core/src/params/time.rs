//! `PublishTime` and `EventTime`.

use core::time::Duration;

use crate::handler::Incoming;
use crate::handler::{Extract, Rejection};

/// When the broker stored the message, since the Unix epoch (`UNIX_EPOCH + d` is a
/// `SystemTime`). On the in-process Pulsar's virtual clock, the time since the app started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PublishTime(pub Duration);

/// When the producer says the event happened, since the Unix epoch, if it set one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventTime(pub Option<Duration>);

impl<S> Extract<S> for PublishTime {
    fn extract(message: &Incoming<'_>, _: &S, handler: &'static str) -> Result<Self, Rejection> {
        match message.publish_time {
            Some(at) => Ok(PublishTime(at)),
            None => Err(Rejection::Missing {
                handler,
                parameter: "PublishTime",
                what: "a publish time, which the broker gave this delivery none of",
            }),
        }
    }
}

impl<S> Extract<S> for EventTime {
    fn extract(message: &Incoming<'_>, _: &S, _: &'static str) -> Result<Self, Rejection> {
        Ok(EventTime(message.event_time))
    }
}
