//! How a broker writes the copy of a delivery to another topic.

use std::fmt::Display;
use std::time::Duration;

use ruststream::completion::Republish;
use ruststream::message::Message;

use super::Received;

/// The copies a registration's machine orders (to its dead-letter topic, to its retry topic),
/// as its broker writes them: which topic, and the properties (headers) that say where the
/// copy came from and why, in the broker's own names.
pub trait Republisher: Send + Sync + 'static {
    /// The topic `republish` goes to, fully qualified; `None` where the registration declared
    /// none (the machine orders no such copy then).
    fn topic(&self, republish: &Republish) -> Option<&str>;

    /// The copy of `received` that `republish` asks for, `error` the error that came with its
    /// end (a dead-letter copy carries it), `id` its id as the broker prints it.
    fn copy(&self, republish: &Republish, of: Copied<'_>) -> Message;
}

/// What a copy is made from.
#[derive(Clone, Copy)]
pub struct Copied<'a> {
    /// The body.
    pub payload: &'a [u8],
    /// The properties.
    pub properties: &'a [(String, String)],
    /// Where it came from.
    pub topic: &'a str,
    /// Its id as the broker prints it.
    pub id: &'a dyn Display,
    /// Its key.
    pub key: Option<&'a str>,
    /// When the producer says the event happened.
    pub event_time: Option<Duration>,
    /// The error that came with its end.
    pub error: Option<&'a str>,
}

impl<'a> Copied<'a> {
    /// What a copy of `received` is made from, with `error`.
    pub fn of<Id: Display>(received: &'a Received<Id>, error: Option<&'a str>) -> Self {
        Copied {
            payload: &received.payload,
            properties: &received.properties,
            topic: &received.topic,
            id: &received.id,
            key: received.key.as_deref(),
            event_time: received.event_time,
            error,
        }
    }
}
