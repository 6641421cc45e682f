//! What a driver reports about each handler call, to whoever watches (the test harnesses).

use ruststream::completion::Completion;
use ruststream::Instant;

/// One handler invocation, as the driver saw it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallRecord {
    /// The handler's name.
    pub handler: &'static str,
    /// The subscription the delivery came through.
    pub subscription: std::sync::Arc<str>,
    /// The fully qualified topic of the delivery.
    pub topic: String,
    /// The delivery's message id (`ledger:entry:partition`, plus `:index` in a batch).
    pub message_id: String,
    /// The payload as delivered.
    pub payload: Vec<u8>,
    /// The message properties as delivered.
    pub headers: Vec<(String, String)>,
    /// The broker's redelivery count for this delivery (on a batched entry, the entry's). Both
    /// transports give it: the in-process Pulsar, and pulsar-rs as carried in `patches/`, which
    /// exposes it (patches/README.md).
    pub redelivery_count: Option<u32>,
    /// When the handler was called, on the app's clock.
    pub at: Instant,
    /// How the call ended.
    pub completion: Completion,
    /// Why the handler could not run, for [`Completion::Rejected`].
    pub error: Option<String>,
}

/// Receives a record of every handler call.
pub(crate) trait Observer: Send + Sync {
    fn called(&self, record: CallRecord);
}

/// The observer a harness hands to the brokers it starts, through the start context.
pub(crate) struct Observe(pub(crate) std::sync::Arc<dyn Observer>);
