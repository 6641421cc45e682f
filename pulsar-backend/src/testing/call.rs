//! What a test harness records of each handler call.

use std::time::Duration;

use ruststream::completion::Completion;
use ruststream::{HandlerOutcome, Instant, MessageId};

/// One handler call, as the harness's recorder layer saw it end: what a test reads of it
/// (`TestApp::calls_of`, `LiveApp::calls_of`).
#[derive(Debug, Clone)]
pub struct Call {
    pub(crate) handler: &'static str,
    pub(crate) subscription: std::sync::Arc<str>,
    pub(crate) topic: String,
    pub(crate) message_id: MessageId,
    pub(crate) payload: Vec<u8>,
    pub(crate) properties: Vec<(String, String)>,
    pub(crate) redelivery_count: Option<u32>,
    pub(crate) at: Instant,
    pub(crate) completion: Completion,
    pub(crate) error: Option<String>,
}

impl Call {
    /// The handler's name.
    pub fn handler(&self) -> &'static str {
        self.handler
    }

    /// The subscription the delivery came through.
    pub fn subscription(&self) -> &str {
        &self.subscription
    }

    /// The fully qualified topic the delivery came from (a partition's, for a partitioned
    /// topic).
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The delivery's message id (`ledger:entry:partition`, plus `:index` for a message of a
    /// batch).
    pub fn message_id(&self) -> MessageId {
        self.message_id
    }

    /// The payload decoded from JSON.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.payload)
    }

    /// The raw payload.
    pub fn payload_bytes(&self) -> &[u8] {
        &self.payload
    }

    /// The message properties as delivered.
    pub fn properties(&self) -> &[(String, String)] {
        &self.properties
    }

    /// The value of message property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The broker's redelivery count for this delivery (on a batched entry, the entry's). Both
    /// transports give it: the in-process Pulsar, and pulsar-rs as carried in `patches/`.
    pub fn redelivery_count(&self) -> u32 {
        self.redelivery_count.unwrap_or(0)
    }

    /// When the handler was called, on the app's clock (in a `TestApp`, since it started).
    pub fn at(&self) -> Duration {
        self.at.elapsed_since_origin()
    }

    /// What the handler returned, or `None` if it returned nothing (panicked, could not decode
    /// its payload).
    pub fn outcome(&self) -> Option<HandlerOutcome> {
        match self.completion {
            Completion::Returned(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// How the call ended.
    pub fn completion(&self) -> Completion {
        self.completion
    }

    /// Why the handler could not run, or the error it returned, if any.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}
