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

    /// The message `republish` asks for: a copy of `original`, with the properties that say
    /// where it came from and why.
    fn message(&self, republish: &Republish, original: Original<'_>) -> Message;
}

/// The delivery a republished message is a copy of.
#[derive(Clone, Copy)]
pub struct Original<'a> {
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

impl<'a> Original<'a> {
    /// `received` as a copy is made of it, with `error`.
    pub fn of<Id: Display>(received: &'a Received<Id>, error: Option<&'a str>) -> Self {
        Original {
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
