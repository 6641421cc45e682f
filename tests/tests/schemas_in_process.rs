//! Registered schemas on the in-process Pulsar, on the virtual clock: the startup check as the
//! live tests (`live_schemas.rs`) see it on Apache Pulsar, where the model can tell (a schema
//! of another kind); within one kind the model lets any definition in.

use apache_avro::AvroSchema;
use ruststream::codec::{protobuf_schema, to_protobuf, Avro, Protobuf, ProtobufSchema};
use ruststream::message::Message;
use ruststream::{App, AppInfo, HandlerOutcome, Outgoing, RustStream};
use ruststream_pulsar::prelude::*;
use ruststream_pulsar::testing::TestApp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, AvroSchema, Outgoing)]
#[outgoing(name = "refunds", codec = "avro")]
struct Refund {
    id: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct RefundPb {
    #[prost(int64, tag = "1")]
    id: i64,
}

impl ProtobufSchema for RefundPb {
    const MESSAGE: &'static str = "shop.Refund";
    const FILE: &'static str = "shop/refund.proto";
    fn file_descriptor_set() -> Vec<u8> {
        Vec::new()
    }
}

#[subscriber("refunds")]
async fn avro_refunds(_refund: &Avro<Refund>) -> HandlerOutcome {
    HandlerOutcome::ack()
}

#[subscriber("refunds")]
async fn protobuf_refunds(_refund: &Protobuf<RefundPb>) -> HandlerOutcome {
    HandlerOutcome::ack()
}

fn service(mount: impl FnOnce(&mut PulsarBroker<()>)) -> impl App<State = ()> {
    RustStream::new(AppInfo::new("schemas", "0.0.0"))
        .on_startup(async |()| Ok::<_, std::convert::Infallible>(()))
        .with_broker(PulsarBroker::new("pulsar://localhost:6650"), mount)
}

#[tokio::test]
async fn a_handler_whose_schema_is_of_another_kind_than_the_topics_does_not_start() {
    let publisher = TestApp::with_state(service(|_| {}), ()).await.unwrap();
    publisher.publish(&Refund { id: 1 }).await.unwrap();
    let error = match TestApp::with_state(
        service(|b| {
            b.include(protobuf_refunds);
        }),
        (),
    )
    .alongside(&publisher)
    .await
    {
        Ok(_) => panic!("a Protobuf handler started on a topic with an Avro schema"),
        Err(error) => error.to_string(),
    };
    for expected in [
        "handler `protobuf_refunds` cannot read persistent://public/default/refunds",
        "the topic has a registered AVRO schema",
        "`schemas_in_process::RefundPb` (PROTOBUF_NATIVE schema)",
        "pulsar-admin schemas get persistent://public/default/refunds",
        "exists schema type AVRO, new schema type PROTOBUF_NATIVE",
    ] {
        assert!(error.contains(expected), "`{expected}` not in: {error}");
    }
    // A handler of the registered kind starts, and reads what was published.
    let reader = TestApp::with_state(
        service(|b| {
            b.include(avro_refunds);
        }),
        (),
    )
    .alongside(&publisher)
    .await
    .unwrap();
    publisher.publish(&Refund { id: 2 }).await.unwrap();
    reader.settle().await.unwrap();
    assert_eq!(reader.calls_of("avro_refunds").len(), 1);
    reader.stop().await;
    publisher.stop().await;
}

#[tokio::test]
async fn a_publisher_of_another_kind_than_the_handlers_schema_is_refused() {
    // The handler subscribes first, to an empty topic: its schema is registered.
    let app = TestApp::with_state(
        service(|b| {
            b.include(avro_refunds);
        }),
        (),
    )
    .await
    .unwrap();
    let message = Message::new("refunds", to_protobuf(&RefundPb { id: 1 }))
        .schema(protobuf_schema::<RefundPb>());
    let error = app.publish(message).await.unwrap_err();
    assert!(
        matches!(
            error,
            ruststream_pulsar::testing::TestPublishError::Publish(
                ruststream::PublishError::Schema { .. }
            )
        ),
        "{error:?}"
    );
    let error = error.to_string();
    assert!(
        error.contains("exists schema type AVRO, new schema type PROTOBUF_NATIVE"),
        "{error}"
    );
    assert!(app.calls().is_empty());
    app.publish(&Refund { id: 1 }).await.unwrap();
    assert_eq!(app.calls_of("avro_refunds").len(), 1);
    app.stop().await;
}
