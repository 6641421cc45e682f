//! The schema a payload type declares to the broker.
//!
//! Pulsar keeps a schema per topic. A producer that declares one registers it (or is checked
//! against the one registered), so that typed consumers of other clients (Java's
//! `Schema.AVRO(Refund.class)`, Python's `AvroSchema(Refund)`) read what it wrote; a consumer
//! that declares one is checked against it when it subscribes, so that a handler whose type
//! cannot read the topic's messages fails at startup instead of at every message.
//!
//! A [`Schema`] is what the broker stores: a kind and a definition, in the bytes the Java
//! client's `SchemaInfo` carries for that kind. The codecs build them
//! ([`codec`](crate::codec)); a handler's payload type declares its own with
//! [`Payload::schema`](crate::handler::Payload::schema), an `#[outgoing]` type with
//! [`Outgoing::schema`](crate::Outgoing::schema).

use alloc::vec::Vec;

/// A schema as the broker stores it: what kind, and its definition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schema {
    kind: SchemaKind,
    definition: Vec<u8>,
    /// The Rust type it describes, for error messages.
    type_name: Option<&'static str>,
}

impl Schema {
    /// A schema of `kind` with `definition` in the form the broker expects for that kind (see
    /// [`SchemaKind`]). The codecs build these; build one by hand for a type they do not know.
    pub fn new(kind: SchemaKind, definition: impl Into<Vec<u8>>) -> Self {
        Schema {
            kind,
            definition: definition.into(),
            type_name: None,
        }
    }

    /// The same schema, as `T`'s: errors about it name the type.
    pub fn of_type<T: ?Sized>(mut self) -> Self {
        self.type_name = Some(core::any::type_name::<T>());
        self
    }

    /// The Rust type it describes, when it was built for one ([`Schema::of_type`]).
    pub fn type_name(&self) -> Option<&'static str> {
        self.type_name
    }

    /// What kind of schema.
    pub fn kind(&self) -> SchemaKind {
        self.kind
    }

    /// The definition, as the broker stores it.
    pub fn definition(&self) -> &[u8] {
        &self.definition
    }
}

/// The kinds of schema ruststream registers, with the definition each one carries (as the
/// Java client writes them, so that its typed consumers and producers match).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaKind {
    /// JSON payloads described by an Avro record schema, as JSON text (what the Java client's
    /// `Schema.JSON(Class)` and Python's `JsonSchema(Record)` register).
    Json,
    /// Avro binary payloads (one datum, no container header), with their Avro schema as JSON
    /// text (`Schema.AVRO(Class)`, Python's `AvroSchema(Record)`).
    Avro,
    /// Protobuf binary payloads described by a `FileDescriptorSet`: a JSON object with
    /// `fileDescriptorSet` (base64), `rootMessageTypeName` and `rootFileDescriptorName`
    /// (`Schema.PROTOBUF_NATIVE(Class)`, Python's `ProtobufNativeSchema`).
    ProtobufNative,
}

impl SchemaKind {
    /// The name Pulsar gives the kind (`pulsar-admin schemas get` prints it).
    pub fn name(self) -> &'static str {
        match self {
            SchemaKind::Json => "JSON",
            SchemaKind::Avro => "AVRO",
            SchemaKind::ProtobufNative => "PROTOBUF_NATIVE",
        }
    }
}

impl core::fmt::Display for SchemaKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_keeps_its_kind_and_definition_and_kinds_print_as_pulsar_names_them() {
        let schema = Schema::new(SchemaKind::Avro, &b"{\"type\":\"long\"}"[..]);
        assert_eq!(schema.kind(), SchemaKind::Avro);
        assert_eq!(schema.definition(), b"{\"type\":\"long\"}");
        assert_eq!(
            alloc::format!("{}", SchemaKind::ProtobufNative),
            "PROTOBUF_NATIVE"
        );
        assert_eq!(SchemaKind::Json.name(), "JSON");
    }
}
