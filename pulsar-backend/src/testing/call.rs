//! A handler call as a test reads it.

use std::time::Duration;

use ruststream::completion::Completion;
use ruststream::HandlerOutcome;

use crate::observe::CallRecord;

/// One call of a handler, recorded by [`TestApp`](super::TestApp).
#[derive(Debug, Clone)]
pub struct Call {
    record: CallRecord,
}

impl Call {
    pub(crate) fn new(record: CallRecord) -> Self {
        Call { record }
    }

    /// The handler's name.
    pub fn handler(&self) -> &'static str {
        self.record.handler
    }

    /// The subscription the delivery came through.
    pub fn subscription(&self) -> &str {
        &self.record.subscription
    }

    /// The fully qualified topic the delivery came from.
    pub fn topic(&self) -> &str {
        &self.record.topic
    }

    /// The delivery's message id (`ledger:entry:partition`, plus `:index` for a message of a
    /// batch).
    pub fn message_id(&self) -> &str {
        &self.record.message_id
    }

    /// The payload decoded from JSON.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.record.payload)
    }

    /// The raw payload.
    pub fn payload_bytes(&self) -> &[u8] {
        &self.record.payload
    }

    /// The value of message property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.record
            .headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The broker's redelivery count for this delivery (on a batched entry, the entry's), as
    /// the in-process Pulsar and the patched pulsar-rs give it.
    pub fn redelivery_count(&self) -> u32 {
        self.record.redelivery_count.unwrap_or(0)
    }

    /// When the handler was called, as time since the test app started.
    pub fn at(&self) -> Duration {
        self.record.at.elapsed_since_origin()
    }

    /// What the handler returned, or `None` if it returned nothing (panicked, could not decode
    /// its payload).
    pub fn outcome(&self) -> Option<HandlerOutcome> {
        match self.record.completion {
            Completion::Returned(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// How the call ended.
    pub fn completion(&self) -> Completion {
        self.record.completion
    }

    /// Why the handler could not run, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.record.error.as_deref()
    }
}
