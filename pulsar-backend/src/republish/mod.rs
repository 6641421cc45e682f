//! The copies of a delivery the machine orders, as Pulsar writes them: to the dead-letter
//! topic ([`dead_letter`]) and, for a durable `retry_later`, to the retry topic
//! ([`retry_topic`]), with the properties the Java client and pulsar-rs write. The machine
//! decides when a copy is made and acknowledges the original once it is confirmed; the driver
//! publishes it; this module only says what it holds.

mod dead_letter;
mod retry_topic;

use std::sync::Arc;

use ruststream::completion::Republish;
use ruststream::message::Message;
use ruststream_driver::port::{Original, Republisher};

pub(crate) use retry_topic::republished;

/// A registration's copies: where each goes, if it declared the topic.
pub(crate) struct PulsarCopies {
    /// The dead-letter topic, fully qualified.
    pub(crate) dead_letter: Option<Arc<str>>,
    /// The retry topic, fully qualified.
    pub(crate) retry: Option<Arc<str>>,
}

impl Republisher for PulsarCopies {
    fn topic(&self, republish: &Republish) -> Option<&str> {
        match republish {
            Republish::DeadLetter { .. } => self.dead_letter.as_deref(),
            Republish::RetryTopic { .. } => self.retry.as_deref(),
        }
    }

    fn message(&self, republish: &Republish, of: Original<'_>) -> Message {
        let topic = self.topic(republish).unwrap_or_default();
        match *republish {
            Republish::DeadLetter { reason } => dead_letter::copy(topic, of, reason),
            Republish::RetryTopic { delay, count } => retry_topic::copy(topic, of, delay, count),
        }
    }
}

/// The properties of a copy of `of` published to another topic (the retry or the dead-letter
/// topic): its own less those named in `replaced` (which the copy sets anew), plus
/// `REAL_TOPIC` (where it came from) and `ORIGIN_MESSAGE_ID` (its id there), unless present:
/// a copy of a copy keeps where it first came from.
fn copy_properties(of: &Original<'_>, replaced: &[&str]) -> Vec<(String, String)> {
    use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};
    let mut properties: Vec<(String, String)> = (of.properties.iter())
        .filter(|(name, _)| !replaced.contains(&name.as_str()))
        .cloned()
        .collect();
    for (name, value) in [
        (REAL_TOPIC, of.topic.to_string()),
        (ORIGIN_MESSAGE_ID, of.id.to_string()),
    ] {
        if !properties.iter().any(|(k, _)| k == name) {
            properties.push((name.to_owned(), value));
        }
    }
    properties
}
