//! Schemas on the wire: ruststream's [`Schema`] as pulsar-rs sends it, and the broker's
//! refusals of one turned into errors that say what to change.

use pulsar::message::proto;
use ruststream::{Schema, SchemaKind};

/// `schema` as pulsar-rs sends it with a producer or a subscription.
pub(crate) fn to_proto(schema: &Schema) -> proto::Schema {
    let kind = match schema.kind() {
        SchemaKind::Json => proto::schema::Type::Json,
        SchemaKind::Avro => proto::schema::Type::Avro,
        SchemaKind::ProtobufNative => proto::schema::Type::ProtobufNative,
        // A kind added to the core later, before this learns it: refused by the broker as
        // an unknown type rather than sent as another.
        _ => proto::schema::Type::None,
    };
    proto::Schema {
        // What the Java client names a schema it builds from a class (the broker keys schemas
        // by topic; the name is informational).
        name: String::new(),
        schema_data: schema.definition().to_vec(),
        r#type: kind as i32,
        properties: Vec::new(),
    }
}

/// The type a schema describes, for messages: the Rust type when known.
fn described(schema: &Schema) -> String {
    match schema.type_name() {
        Some(name) => format!("`{name}` ({} schema)", schema.kind()),
        None => format!("the {} schema", schema.kind()),
    }
}

/// Whether a refusal (pulsar-rs's or the in-process Pulsar's error, as text) is the broker's
/// refusal of a schema.
pub(crate) fn is_incompatible(reason: &str) -> bool {
    reason.contains("IncompatibleSchema") || reason.contains("ncompatible schema")
}

/// What to do when the broker refused a producer of `topic` with `schema`.
pub(crate) fn producer_refused(topic: &str, schema: &Schema, error: &pulsar::Error) -> String {
    let reason = error.to_string();
    format!(
        "the broker refused to register {} on `{topic}`: the topic has a registered {} schema \
         this one is not compatible with; see it with `pulsar-admin schemas get {topic}`, then \
         change the type to match it, or publish to another topic",
        described(schema),
        registered_kind(&reason, schema.kind()),
    )
}

/// The kind of the schema registered on the topic, as the broker's refusal tells it: Apache
/// Pulsar 4.0.7 says `exists schema type AVRO, new schema type PROTOBUF_NATIVE` when the kinds
/// differ, and runs its compatibility check (naming the strategy) only between schemas of
/// one kind.
fn registered_kind(reason: &str, ours: SchemaKind) -> String {
    match reason.split("exists schema type ").nth(1) {
        Some(rest) => rest
            .split([',', ' ', ';', ')'])
            .next()
            .unwrap_or("another")
            .to_owned(),
        None if reason.contains("compatibility check") => ours.name().to_owned(),
        None => "a".to_owned(),
    }
}

/// The startup error of handler `handler`, whose payload `schema` the broker refused when it
/// subscribed `subscription` to `topics`.
pub(crate) fn subscription_refused(
    handler: &str,
    topics: &ruststream_pulsar_model::TopicSelection,
    subscription: &str,
    schema: &Schema,
    reason: &str,
) -> String {
    let registered = registered_kind(reason, schema.kind());
    let topic = match topics {
        ruststream_pulsar_model::TopicSelection::Topics(list) if list.len() == 1 => {
            list[0].to_string()
        }
        _ => "<topic>".to_owned(),
    };
    format!(
        "handler `{handler}` cannot read {topics}: the topic has a registered {registered} \
         schema that its payload type, {}, cannot read, and the broker refused the \
         subscription `{subscription}`. See the registered schema with `pulsar-admin schemas \
         get {topic}`, then make the handler's payload type match it (the same kind of schema, \
         and a record with the name and fields its writers write, new fields with defaults), \
         or take the payload as `&[u8]` and decode it yourself. The broker said: {reason}",
        described(schema),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registered_kind_is_read_from_the_brokers_refusal() {
        let kinds = "Server error (Some(IncompatibleSchema)): Incompatible schema: exists \
                     schema type AVRO, new schema type PROTOBUF_NATIVE";
        assert_eq!(registered_kind(kinds, SchemaKind::ProtobufNative), "AVRO");
        let check = "Error during schema compatibility check with strategy BACKWARD: \
                     org.apache.avro.SchemaValidationException: Unable to read schema";
        assert_eq!(registered_kind(check, SchemaKind::Avro), "AVRO");
        assert_eq!(registered_kind("other", SchemaKind::Json), "a");
    }

    #[test]
    fn the_proto_schema_carries_the_kind_and_definition() {
        let proto = to_proto(&Schema::new(SchemaKind::ProtobufNative, &b"{}"[..]));
        assert_eq!(proto.r#type, proto::schema::Type::ProtobufNative as i32);
        assert_eq!(proto.schema_data, b"{}");
        assert_eq!(to_proto(&Schema::new(SchemaKind::Json, &b""[..])).r#type, 2);
        assert_eq!(to_proto(&Schema::new(SchemaKind::Avro, &b""[..])).r#type, 4);
    }
}
