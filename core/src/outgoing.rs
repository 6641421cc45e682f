//! Types that know where they are published, and how they are encoded.

use alloc::string::String;
use alloc::vec::Vec;

/// A message type with a default topic, written by `#[derive(Outgoing)]` and
/// `#[outgoing(name = "topic")]`. Publishing a value of it (from a service or a test) sends it
/// there, JSON-encoded unless the derive says `codec = "msgpack"`.
pub trait Outgoing: serde::Serialize {
    /// The topic, as declared (a broker may qualify it, as Pulsar does).
    const TOPIC: &'static str;

    /// How its messages are compressed on the wire (`#[outgoing(compression = "lz4")]`);
    /// `None` leaves it to the registration or the broker.
    const COMPRESSION: Option<crate::Compression> = None;

    /// How its messages are batched (`#[outgoing(batching = "off")]`, `"key_based"`); `None`
    /// leaves it to the broker.
    const BATCHING: Option<crate::batching::Batching> = None;

    /// The payload: the value as JSON by default. [`Publisher::publish`](crate::Publisher::publish)
    /// sends what this returns, so a type that overrides it is published in its own encoding.
    fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        serde_json::to_vec(self).map_err(|e| EncodeError::new::<Self>("JSON", e))
    }

    /// The schema a producer of this type registers on its topic, so that typed consumers of
    /// other clients read it: none by default (the broker's defaults apply);
    /// `#[outgoing(codec = "avro")]` and `#[outgoing(schema = "json")]` declare one.
    fn schema() -> Option<crate::schema::Schema> {
        None
    }

    /// The type as a message of the service's description (`<service> asyncapi`):
    /// `#[derive(Outgoing)]` writes it with the type's encoding and schema (a JSON Schema
    /// where the type also derives `schemars::JsonSchema` and the `schemars` feature is on).
    fn message() -> crate::describe::MessageInfo {
        crate::describe::probe::message(
            core::any::type_name::<Self>(),
            "application/json",
            Self::schema(),
            None,
        )
    }
}

/// A value could not be encoded as a payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot encode a `{type_name}` as {format}: {reason}; check its `Serialize` implementation \
     (maps need string keys in JSON)"
)]
pub struct EncodeError {
    type_name: &'static str,
    format: &'static str,
    reason: String,
}

impl EncodeError {
    /// `T` could not be encoded in `format`, for `reason`.
    pub fn new<T: ?Sized>(format: &'static str, reason: impl core::fmt::Display) -> Self {
        EncodeError {
            type_name: core::any::type_name::<T>(),
            format,
            reason: alloc::format!("{reason}"),
        }
    }
}
