//! Registered schemas, as far as the model keeps them: the first producer (or a consumer of an
//! empty topic) registers one, a schema of another kind is refused, one of the same kind is
//! let in (the broker's compatibility check within a kind is not modelled).

mod common;

use common::*;
use ruststream::SubscriptionType::Shared;
use ruststream::{Schema, SchemaKind};
use ruststream_pulsar_model::{Cluster, ConsumerOptions, ModelError, OutgoingMessage};

fn avro() -> Schema {
    Schema::new(SchemaKind::Avro, &br#"{"type":"long"}"#[..])
}

fn protobuf() -> Schema {
    Schema::new(SchemaKind::ProtobufNative, &b"{}"[..])
}

fn with(schema: Schema) -> ConsumerOptions {
    ConsumerOptions {
        schema: Some(schema),
        ..earliest()
    }
}

fn typed(body: &str, schema: Schema) -> OutgoingMessage {
    let mut message = OutgoingMessage::new(body);
    message.schema = Some(schema);
    message
}

#[test]
fn a_producer_registers_its_schema_and_a_consumer_of_another_kind_is_refused() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    cluster.publish(&t, typed("a", avro()), at(0)).unwrap();
    assert_eq!(cluster.schema(&t), Some(&avro()));
    let refused = cluster
        .subscribe(&t, "sub", Shared, with(protobuf()), at(0))
        .unwrap_err();
    assert_eq!(
        refused,
        ModelError::IncompatibleSchema {
            topic: t.clone(),
            existing: SchemaKind::Avro,
            requested: SchemaKind::ProtobufNative,
        }
    );
    assert!(
        refused
            .to_string()
            .contains("exists schema type AVRO, new schema type PROTOBUF_NATIVE"),
        "{refused}"
    );
    // The same kind is let in, and reads what was published.
    let c = cluster
        .subscribe(&t, "sub", Shared, with(avro()), at(0))
        .unwrap();
    cluster.flow(c, 10, at(0)).unwrap();
    assert_eq!(bodies(&drain(&mut cluster, c, at(0))), ["a"]);
    // A consumer without a schema reads anything.
    consumer(&mut cluster, &t, Shared, earliest(), 10, at(0));
}

#[test]
fn a_consumer_registers_on_an_empty_topic_and_a_producer_of_another_kind_is_refused() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    cluster
        .subscribe(&t, "sub", Shared, with(protobuf()), at(0))
        .unwrap();
    assert_eq!(cluster.schema(&t), Some(&protobuf()));
    let refused = cluster.publish(&t, typed("a", avro()), at(0)).unwrap_err();
    assert!(matches!(refused, ModelError::IncompatibleSchema { .. }));
    let batch = vec![typed("b", avro()), OutgoingMessage::new("c")];
    assert!(cluster.publish_batch(&t, batch, at(0)).is_err());
    // A producer without a schema is let in (the broker does not enforce schemas by default).
    cluster
        .publish(&t, OutgoingMessage::new("d"), at(0))
        .unwrap();
}

#[test]
fn a_consumer_on_a_topic_with_data_and_no_schema_registers_none() {
    let mut cluster = Cluster::new();
    let t = topic("refunds");
    publish(&mut cluster, &t, "a", at(0));
    cluster
        .subscribe(&t, "sub", Shared, with(avro()), at(0))
        .unwrap();
    assert_eq!(cluster.schema(&t), None);
}
