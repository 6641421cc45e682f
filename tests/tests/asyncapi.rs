//! `<service> asyncapi` for every kind of registration at once: JSON payloads described by
//! `schemars`, Avro and Protobuf payloads with their registered schemas, bytes on a pattern,
//! a Failover subscription with its retry topic (read through a Shared subscription), a
//! transactional batch handler that declares what it publishes, a handler that reads key and
//! properties. The document is checked here and then validated by the official AsyncAPI
//! parser (`node scripts/asyncapi/validate.mjs`, installed by scripts/setup; a missing parser
//! fails the test).

use std::num::NonZeroU32;
use std::path::Path;
use std::process::Command;

use apache_avro::AvroSchema;
use ruststream::app::{App, Settings};
use ruststream::batch::{Batch, BatchOutcome};
use ruststream::codec::{Avro, Protobuf, ProtobufSchema};
use ruststream::params::{MessageKey, Properties};
use ruststream::{AppInfo, HandlerOutcome, Outgoing, Publisher, RustStream, SubscriptionType};
use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An order, described by schemars.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Order {
    id: u64,
    lines: Vec<Line>,
    note: Option<String>,
}

/// A line of an order.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Line {
    sku: String,
    quantity: u32,
}

/// What the batch handler publishes.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema, Outgoing)]
#[outgoing(name = "persistent://shop/billing/invoices")]
struct Invoice {
    order: u64,
    cents: i64,
}

#[derive(Debug, Serialize, Deserialize, AvroSchema)]
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

#[subscriber(PulsarSubscription::new("orders", "orders").subscription_type(SubscriptionType::Failover))]
async fn take_order(_order: &Order, _key: MessageKey, _properties: Properties) -> HandlerOutcome {
    HandlerOutcome::ack()
}

#[subscriber(PulsarSubscription::new("orders", "billing"))]
async fn bill(_orders: &[Order], _batch: Batch<'_>, _publisher: Publisher) -> BatchOutcome {
    BatchOutcome::ack()
}

#[subscriber(PulsarSubscription::new("avro-refunds", "refunds"))]
async fn avro_refund(_refund: &Avro<Refund>) -> HandlerOutcome {
    HandlerOutcome::ack()
}

#[subscriber(PulsarSubscription::new("pb-refunds", "refunds"))]
async fn protobuf_refund(_refund: &Protobuf<RefundPb>) -> HandlerOutcome {
    HandlerOutcome::ack()
}

#[subscriber(PulsarSubscription::pattern("audit-.*", "audit"))]
async fn audit(_bytes: &[u8]) -> HandlerOutcome {
    HandlerOutcome::ack()
}

fn shop() -> impl App<State = ()> {
    RustStream::new(AppInfo::new("shop", "2.1.0"))
        .on_startup(async |()| Ok::<_, std::convert::Infallible>(()))
        .with_broker(PulsarBroker::new("pulsar://localhost:6650"), |b| {
            b.include(take_order)
                .retry_topic("orders-retry")
                .max_attempts(NonZeroU32::new(4).unwrap())
                .dead_letter("orders-dlq");
            b.include(bill.batch(std::num::NonZeroUsize::new(50).unwrap()))
                .transactional()
                .publishes::<Invoice>();
            b.include(avro_refund);
            b.include(protobuf_refund);
            b.include(audit);
        })
}

fn document() -> Value {
    let parts = shop().into_parts();
    let descriptions: Vec<_> = parts
        .brokers
        .iter()
        .map(|b| b.describe(&Settings::new()).expect("valid registrations"))
        .collect();
    ruststream_runner::asyncapi::document(&parts.info, &descriptions)
}

#[test]
fn every_kind_of_registration_is_described() {
    let doc = document();
    let channel = |id: &str| &doc["channels"][id];
    let operation = |id: &str| &doc["operations"][id];
    // Failover with a retry topic: read through the main subscription and a Shared one.
    assert_eq!(
        operation("take_order")["x-pulsar-subscription"]["type"],
        "Failover"
    );
    assert_eq!(
        operation("take_order")["x-pulsar-subscription"]["maxAttempts"],
        4
    );
    assert_eq!(
        operation("take_order_retry_receive")["x-pulsar-subscription"]["type"],
        "Shared"
    );
    assert_eq!(operation("take_order_retry")["action"], "send");
    assert_eq!(operation("take_order_dead_letter")["action"], "send");
    assert_eq!(channel("orders-retry")["x-ruststream-role"], "retry");
    assert_eq!(channel("orders-dlq")["x-ruststream-role"], "dead-letter");
    // The batch handler: transactional, its batch size, what it publishes.
    let billing = &operation("bill")["x-pulsar-subscription"];
    assert_eq!(billing["transactional"], true);
    assert_eq!(billing["batchMaxMessages"], 50);
    assert_eq!(operation("bill_publish_Invoice")["action"], "send");
    assert_eq!(
        channel("invoices")["address"],
        "persistent://shop/billing/invoices"
    );
    assert_eq!(
        channel("invoices")["bindings"]["pulsar"]["namespace"],
        "billing"
    );
    // Payloads: schemars's JSON Schema with its subschemas, Avro, Protobuf, bytes.
    let messages = &doc["components"]["messages"];
    assert_eq!(
        messages["Order"]["payload"]["properties"]["lines"]["items"]["$ref"],
        "#/components/schemas/Line"
    );
    assert_eq!(doc["components"]["schemas"]["Line"]["required"][0], "sku");
    assert!(
        messages["Order"]["headers"].is_object(),
        "take_order reads properties"
    );
    assert_eq!(messages["Order"]["x-pulsar-key"], "read by the handler");
    assert_eq!(
        messages["Avro_Refund"]["payload"]["schemaFormat"],
        "application/vnd.apache.avro+json;version=1.9.0"
    );
    assert_eq!(messages["Avro_Refund"]["contentType"], "avro/binary");
    assert_eq!(
        messages["Protobuf_RefundPb"]["x-pulsar-schema"]["rootMessageTypeName"],
        "shop.Refund"
    );
    assert_eq!(channel("pattern_audit-__")["x-ruststream-role"], "pattern");
    assert_eq!(
        channel("pattern_audit-__")["bindings"]["pulsar"]["namespace"],
        "default"
    );
    assert_eq!(messages["bytes"]["payload"]["format"], "binary");
}

#[test]
fn the_official_parser_validates_the_document() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("asyncapi");
    std::fs::create_dir_all(&out).unwrap();
    let doc = document();
    let json = out.join("shop.json");
    let yaml = out.join("shop.yaml");
    std::fs::write(&json, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    std::fs::write(&yaml, ruststream_runner::asyncapi::to_yaml(&doc)).unwrap();
    let validator = root.join("scripts/asyncapi/validate.mjs");
    assert!(
        root.join("scripts/asyncapi/node_modules/@asyncapi/parser")
            .is_dir(),
        "the AsyncAPI parser is not installed: run scripts/setup (npm ci in scripts/asyncapi)"
    );
    let output = Command::new("node")
        .arg(&validator)
        .arg(&json)
        .arg(&yaml)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}): run scripts/setup"));
    let printed = String::from_utf8_lossy(&output.stdout);
    eprintln!("{printed}");
    assert!(
        output.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        printed
            .matches("valid AsyncAPI 3.1.0: 7 channels, 9 operations, 5 messages")
            .count(),
        2,
        "{printed}"
    );
}
