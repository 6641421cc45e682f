//! Registered schemas between ruststream and the official Python client (pulsar-client
//! 3.13.0), on Apache Pulsar 4.0.7 standalone started here on 127.0.0.1: a typed Python
//! producer (`AvroSchema`, `JsonSchema`, `ProtobufNativeSchema`) to a ruststream handler
//! (`&Avro<T>`, `&T` and `&Json<T>` from JSON, `&Protobuf<T>`); a ruststream publisher registering the type's
//! schema to a typed Python consumer; and a handler whose payload type cannot read the topic's
//! registered schema, refused at startup with an error that says so.
//!
//! The Python side runs `tests/brokers/python/typed_schema.py`. A broker or a client that
//! cannot start fails the run: these tests never skip. Each case runs in a namespace of its
//! own; they run one at a time (each starts Python processes of its own).

use std::future::IntoFuture;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libtest_mimic::Failed;
use prost::Message as _;
use ruststream::codec::{protobuf_schema, to_protobuf, Avro, Json, Protobuf, ProtobufSchema};
use ruststream::message::Message;
use ruststream::{subscriber, App, AppInfo, HandlerOutcome, RustStream, State};
use ruststream_pulsar::testing::LiveApp;
use ruststream_pulsar::PulsarBroker;
use ruststream_test_brokers::{python_typed, ApacheStandalone};
use serde_json::json;

/// What the handlers saw: `(id, reason)` of each refund, in order.
#[path = "support/apache_suite.rs"]
mod apache_suite;

type Seen = Arc<Mutex<Vec<(i64, String)>>>;

/// The refunds every case sends, as the Python helper takes them.
fn refunds() -> Vec<(i64, String)> {
    (1..=5).map(|id| (id, format!("reason-{id}"))).collect()
}

fn records(refunds: &[(i64, String)]) -> serde_json::Value {
    refunds
        .iter()
        .map(|(id, reason)| json!({"id": id, "reason": reason}))
        .collect()
}

/// The Avro-described record, named `Refund` as the Python helper's record is (Avro matches
/// records by name), published in Avro with its schema registered.
mod avro_refund {
    use apache_avro::AvroSchema;
    use ruststream::Outgoing;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema, Outgoing)]
    #[outgoing(name = "refunds", codec = "avro")]
    pub(crate) struct Refund {
        pub(crate) id: i64,
        pub(crate) reason: String,
    }
}

/// The same record published as JSON, with its JSON schema registered.
mod json_refund {
    use apache_avro::AvroSchema;
    use ruststream::Outgoing;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema, Outgoing)]
    #[outgoing(name = "refunds", schema = "json")]
    pub(crate) struct Refund {
        pub(crate) id: i64,
        pub(crate) reason: String,
    }
}

/// A record no `Refund` writer's data can be read as: another name, required fields the
/// writers do not write.
#[derive(Debug, serde::Deserialize, apache_avro::AvroSchema)]
#[allow(dead_code)]
struct Order {
    sku: String,
    count: i32,
}

/// `ruststream.test.Refund` in Protobuf.
#[derive(Clone, PartialEq, prost::Message)]
struct RefundPb {
    #[prost(int64, tag = "1")]
    id: i64,
    #[prost(string, tag = "2")]
    reason: String,
}

impl ProtobufSchema for RefundPb {
    const MESSAGE: &'static str = "ruststream.test.Refund";
    const FILE: &'static str = "ruststream/test/refund.proto";
    fn file_descriptor_set() -> Vec<u8> {
        descriptor_set()
    }
}

/// The `FileDescriptorSet` of `ruststream/test/refund.proto`, as protoc would write it for
/// `syntax = "proto3"; package ruststream.test; message Refund { int64 id = 1; string reason
/// = 2; }`.
fn descriptor_set() -> Vec<u8> {
    use prost_types::field_descriptor_proto::{Label, Type};
    use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
    let field = |name: &str, number: i32, kind: Type| FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(kind as i32),
        json_name: Some(name.into()),
        ..FieldDescriptorProto::default()
    };
    let file = FileDescriptorProto {
        name: Some(RefundPb::FILE.into()),
        package: Some("ruststream.test".into()),
        message_type: vec![DescriptorProto {
            name: Some("Refund".into()),
            field: vec![
                field("id", 1, Type::Int64),
                field("reason", 2, Type::String),
            ],
            ..DescriptorProto::default()
        }],
        syntax: Some("proto3".into()),
        ..FileDescriptorProto::default()
    };
    prost_types::FileDescriptorSet { file: vec![file] }.encode_to_vec()
}

/// What the Python helper needs to build the Protobuf message class.
fn protobuf_input(records: serde_json::Value) -> serde_json::Value {
    json!({
        "records": records,
        "descriptor": descriptor_base64(),
        "message": RefundPb::MESSAGE,
    })
}

/// The descriptor set in base64, as the schema's definition carries it (read back from there
/// rather than encoded a second way).
fn descriptor_base64() -> String {
    let schema = protobuf_schema::<RefundPb>();
    let definition: serde_json::Value =
        serde_json::from_slice(schema.definition()).expect("the definition is JSON");
    definition["fileDescriptorSet"]
        .as_str()
        .expect("a string")
        .to_owned()
}

#[subscriber("refunds")]
async fn avro_refunds(refund: &Avro<avro_refund::Refund>, seen: State<Seen>) -> HandlerOutcome {
    seen.0
        .lock()
        .unwrap()
        .push((refund.id, refund.reason.clone()));
    HandlerOutcome::ack()
}

#[subscriber("refunds")]
async fn json_refunds(refund: &json_refund::Refund, seen: State<Seen>) -> HandlerOutcome {
    seen.0
        .lock()
        .unwrap()
        .push((refund.id, refund.reason.clone()));
    HandlerOutcome::ack()
}

#[subscriber("refunds")]
async fn checked_json_refunds(
    refund: &Json<json_refund::Refund>,
    seen: State<Seen>,
) -> HandlerOutcome {
    seen.0
        .lock()
        .unwrap()
        .push((refund.id, refund.reason.clone()));
    HandlerOutcome::ack()
}

#[subscriber("refunds")]
async fn protobuf_refunds(refund: &Protobuf<RefundPb>, seen: State<Seen>) -> HandlerOutcome {
    seen.0
        .lock()
        .unwrap()
        .push((refund.id, refund.reason.clone()));
    HandlerOutcome::ack()
}

#[subscriber("refunds")]
async fn avro_orders(_order: &Avro<Order>) -> HandlerOutcome {
    HandlerOutcome::ack()
}

fn service(mount: impl FnOnce(&mut PulsarBroker<Seen>)) -> impl App<State = Seen> {
    RustStream::new(AppInfo::new("schemas", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(Seen::default()))
        .with_broker(PulsarBroker::new("pulsar://localhost:6650"), mount)
}

/// A tokio runtime for one case, and the app on it.
struct Case {
    rt: tokio::runtime::Runtime,
    url: String,
    namespace: String,
}

impl Case {
    fn new(apache: &ApacheStandalone, namespace: String) -> Case {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        Case {
            rt,
            url: apache.url(),
            namespace,
        }
    }

    fn topic(&self) -> String {
        format!("persistent://{}/refunds", self.namespace)
    }

    /// Start `app` with `seen`: the app, or the startup error as text.
    fn start(&self, app: impl App<State = Seen>, seen: Seen) -> Result<LiveApp, String> {
        let runtime = Arc::new(ruststream_tokio::TokioRuntime::new(
            self.rt.handle().clone(),
        ));
        self.rt
            .block_on(
                LiveApp::with_state(app, seen, runtime)
                    .url(&self.url)
                    .namespace(&self.namespace)
                    .connect_timeout(Duration::from_secs(60))
                    .into_future(),
            )
            .map_err(|e| e.to_string())
    }

    /// Wait until `seen` has `count` entries, at most 60 s.
    fn wait_for(&self, app: &LiveApp, seen: &Seen, count: usize) -> Result<(), Failed> {
        let done = self
            .rt
            .block_on(app.wait_until(Duration::from_secs(60), |_| {
                seen.lock().unwrap().len() >= count
            }));
        if done {
            Ok(())
        } else {
            Err(format!(
                "the handler saw {} of {count} within 60 s: {:?}",
                seen.lock().unwrap().len(),
                seen.lock().unwrap()
            )
            .into())
        }
    }

    fn python(&self, args: &[&str], input: &serde_json::Value) -> Result<String, Failed> {
        python_typed(args, input).map_err(|e| Failed::from(e.to_string()))
    }

    /// What a typed Python consumer (subscription `py`, from the earliest) read: `count`
    /// records.
    fn python_consume(
        &self,
        kind: &str,
        count: usize,
        input: &serde_json::Value,
    ) -> Result<Vec<(i64, String)>, Failed> {
        let topic = self.topic();
        let out = self.python(
            &["consume", &self.url, &topic, "py", kind, &count.to_string()],
            input,
        )?;
        let read: Vec<serde_json::Value> =
            serde_json::from_str(out.trim()).map_err(|e| Failed::from(format!("{e}: {out}")))?;
        Ok(read
            .iter()
            .map(|r| {
                (
                    r["id"].as_i64().unwrap_or(-1),
                    r["reason"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect())
    }
}

fn check_same(kind: &str, got: &[(i64, String)], sent: &[(i64, String)]) -> Result<(), Failed> {
    println!("{kind}: {} sent, {} received", sent.len(), got.len());
    if got == sent {
        Ok(())
    } else {
        Err(format!("{kind}: sent {sent:?}, received {got:?}").into())
    }
}

/// A typed Python producer to a ruststream handler, of `kind`; `checked-json` is JSON to a
/// `&Json<T>` handler, which subscribes with the type's JSON schema.
fn python_to_handler(case: &Case, handler: &str) -> Result<(), Failed> {
    let seen = Seen::default();
    let kind = handler.strip_prefix("checked-").unwrap_or(handler);
    let app = match handler {
        "checked-json" => case.start(
            service(|b| {
                b.include(checked_json_refunds);
            }),
            seen.clone(),
        ),
        "avro" => case.start(
            service(|b| {
                b.include(avro_refunds);
            }),
            seen.clone(),
        ),
        "json" => case.start(
            service(|b| {
                b.include(json_refunds);
            }),
            seen.clone(),
        ),
        _ => case.start(
            service(|b| {
                b.include(protobuf_refunds);
            }),
            seen.clone(),
        ),
    }?;
    let sent = refunds();
    let input = match kind {
        "protobuf" => protobuf_input(records(&sent)),
        _ => json!({"records": records(&sent)}),
    };
    let topic = case.topic();
    case.python(&["produce", &case.url, &topic, kind], &input)?;
    case.wait_for(&app, &seen, sent.len())?;
    case.rt.block_on(app.stop());
    let got = seen.lock().unwrap().clone();
    check_same(handler, &got, &sent)
}

fn checked_json_python_to_handler(case: &Case) -> Result<(), Failed> {
    python_to_handler(case, "checked-json")
}

fn avro_python_to_handler(case: &Case) -> Result<(), Failed> {
    python_to_handler(case, "avro")
}

fn json_python_to_handler(case: &Case) -> Result<(), Failed> {
    python_to_handler(case, "json")
}

fn protobuf_python_to_handler(case: &Case) -> Result<(), Failed> {
    python_to_handler(case, "protobuf")
}

/// A ruststream publisher registering `kind`'s schema, then a typed Python consumer.
fn publisher_to_python(case: &Case, kind: &str) -> Result<(), Failed> {
    let app = case.start(service(|_| {}), Seen::default())?;
    let sent = refunds();
    case.rt.block_on(async {
        for (id, reason) in &sent {
            let (id, reason) = (*id, reason.clone());
            let published = match kind {
                "avro" => app.publish(&avro_refund::Refund { id, reason }).await,
                "json" => app.publish(&json_refund::Refund { id, reason }).await,
                _ => {
                    let payload = to_protobuf(&RefundPb { id, reason });
                    app.publish(
                        Message::new("refunds", payload).schema(protobuf_schema::<RefundPb>()),
                    )
                    .await
                }
            };
            published.map_err(|e| Failed::from(format!("publishing: {e}")))?;
        }
        Ok::<_, Failed>(())
    })?;
    let input = match kind {
        "protobuf" => protobuf_input(json!([])),
        _ => json!({}),
    };
    let got = case.python_consume(kind, sent.len(), &input)?;
    case.rt.block_on(app.stop());
    check_same(kind, &got, &sent)
}

fn avro_publisher_to_python(case: &Case) -> Result<(), Failed> {
    publisher_to_python(case, "avro")
}

fn json_publisher_to_python(case: &Case) -> Result<(), Failed> {
    publisher_to_python(case, "json")
}

fn protobuf_publisher_to_python(case: &Case) -> Result<(), Failed> {
    publisher_to_python(case, "protobuf")
}

/// The topic has `Refund`'s Avro schema (registered by a typed Python producer); `handler`
/// (`&Avro<Order>`, `&Protobuf<RefundPb>` or `&Json<Refund>`) does not start, and says why.
fn refused(case: &Case, handler: &str) -> Result<(), Failed> {
    let topic = case.topic();
    case.python(
        &["produce", &case.url, &topic, "avro"],
        &json!({"records": records(&refunds())}),
    )?;
    let (started, type_name) = match handler {
        "protobuf_refunds" => (
            case.start(
                service(|b| {
                    b.include(protobuf_refunds);
                }),
                Seen::default(),
            ),
            "`live_schemas::RefundPb` (PROTOBUF_NATIVE schema)",
        ),
        "checked_json_refunds" => (
            case.start(
                service(|b| {
                    b.include(checked_json_refunds);
                }),
                Seen::default(),
            ),
            "`live_schemas::json_refund::Refund` (JSON schema)",
        ),
        _ => (
            case.start(
                service(|b| {
                    b.include(avro_orders);
                }),
                Seen::default(),
            ),
            "`live_schemas::Order` (AVRO schema)",
        ),
    };
    let error = match started {
        Ok(app) => {
            case.rt.block_on(app.stop());
            return Err("the handler started on a topic whose schema it cannot read".into());
        }
        Err(error) => error,
    };
    println!("startup error: {error}");
    let names = format!("handler `{handler}` cannot read {topic}");
    let command = format!("pulsar-admin schemas get {topic}");
    for expected in [
        names.as_str(),
        "the topic has a registered AVRO schema",
        type_name,
        command.as_str(),
    ] {
        if !error.contains(expected) {
            return Err(format!("the startup error does not name `{expected}`: {error}").into());
        }
    }
    Ok(())
}

fn incompatible_avro_handler_refused(case: &Case) -> Result<(), Failed> {
    refused(case, "avro_orders")
}

fn protobuf_handler_on_avro_topic_refused(case: &Case) -> Result<(), Failed> {
    refused(case, "protobuf_refunds")
}

fn checked_json_handler_on_avro_topic_refused(case: &Case) -> Result<(), Failed> {
    refused(case, "checked_json_refunds")
}

/// The topic has `Refund`'s Avro schema; a ruststream publisher of a Protobuf message with its
/// schema is refused, and the error names the topic, the type and what to do.
fn protobuf_publisher_on_avro_topic_refused(case: &Case) -> Result<(), Failed> {
    let topic = case.topic();
    case.python(
        &["produce", &case.url, &topic, "avro"],
        &json!({"records": records(&refunds())}),
    )?;
    let app = case.start(service(|_| {}), Seen::default())?;
    let message = Message::new("refunds", to_protobuf(&RefundPb::default()))
        .schema(protobuf_schema::<RefundPb>());
    let published = case.rt.block_on(app.publish(message));
    case.rt.block_on(app.stop());
    let error = match published {
        Ok(id) => return Err(format!("published as {id} on a topic with an Avro schema").into()),
        Err(error @ ruststream::PublishError::Schema { .. }) => error.to_string(),
        Err(other) => return Err(format!("not a schema refusal: {other:?}").into()),
    };
    println!("publish error: {error}");
    for expected in [
        topic.as_str(),
        "IncompatibleSchema",
        "`live_schemas::RefundPb` (PROTOBUF_NATIVE schema)",
        "has a registered AVRO schema",
        "pulsar-admin schemas get",
        "nothing was sent",
    ] {
        if !error.contains(expected) {
            return Err(format!("the publish error does not name `{expected}`: {error}").into());
        }
    }
    Ok(())
}

type CaseFn = fn(&Case) -> Result<(), Failed>;

const CASES: &[(&str, CaseFn)] = &[
    ("avro_python_to_handler", avro_python_to_handler),
    ("json_python_to_handler", json_python_to_handler),
    (
        "checked_json_python_to_handler",
        checked_json_python_to_handler,
    ),
    ("protobuf_python_to_handler", protobuf_python_to_handler),
    ("avro_publisher_to_python", avro_publisher_to_python),
    ("json_publisher_to_python", json_publisher_to_python),
    ("protobuf_publisher_to_python", protobuf_publisher_to_python),
    (
        "incompatible_avro_handler_refused",
        incompatible_avro_handler_refused,
    ),
    (
        "protobuf_handler_on_avro_topic_refused",
        protobuf_handler_on_avro_topic_refused,
    ),
    (
        "checked_json_handler_on_avro_topic_refused",
        checked_json_handler_on_avro_topic_refused,
    ),
    (
        "protobuf_publisher_on_avro_topic_refused",
        protobuf_publisher_on_avro_topic_refused,
    ),
];

fn main() -> ExitCode {
    apache_suite::run_one_at_a_time("schemas", CASES, |case, apache, ns| {
        case(&Case::new(apache, ns))
    })
}
