//! What a payload holds, as far as its type says.

use alloc::string::String;

/// A payload's schema, in the form its type gives it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PayloadSchema {
    /// The type does not describe itself (derive `schemars::JsonSchema` and enable the
    /// `schemars` feature for JSON payloads).
    Undescribed,
    /// Bytes as delivered, any encoding (a `&[u8]` handler).
    Bytes,
    /// A JSON Schema (draft 7) of the JSON payload; its named subschemas are under
    /// `/components/schemas`, which its references point into.
    JsonSchema(serde_json::Value),
    /// An Avro schema, as JSON text: Avro payloads, or JSON ones that Pulsar's JSON schema
    /// describes with an Avro record.
    Avro(String),
    /// A Protobuf message, named by its fully qualified type.
    Protobuf(String),
}
