//! Types that know where they are published.

use alloc::vec::Vec;

/// A message type with a default topic, written by `#[derive(Outgoing)]` and
/// `#[outgoing(name = "topic")]`. Publishing a value of it (from a service or a test) sends it
/// there, JSON-encoded.
pub trait Outgoing: serde::Serialize {
    /// The topic, as declared (a broker may qualify it, as Pulsar does).
    const TOPIC: &'static str;

    /// The payload: the value as JSON. [`Publisher::publish`](crate::Publisher::publish) sends
    /// what this returns, so a type that overrides it is published in its own encoding.
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}
