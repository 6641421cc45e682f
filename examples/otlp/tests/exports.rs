//! The example exports its traces: run it embedded on three orders against a stand-in OTLP/HTTP
//! collector on 127.0.0.1, decode what it receives, and find each shipment's delivery span a
//! child of its acceptance's, in one trace per order.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

#[test]
fn each_orders_trace_reaches_the_collector_across_both_handlers() {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("a free port"));
    let port = server.server_addr().to_ip().expect("an IP address").port();
    let received: Arc<Mutex<Vec<(String, ExportTraceServiceRequest)>>> = Arc::default();
    let collector = {
        let (server, received) = (server.clone(), received.clone());
        std::thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut body = Vec::new();
                request.as_reader().read_to_end(&mut body).expect("a body");
                let decoded = ExportTraceServiceRequest::decode(body.as_slice())
                    .expect("an OTLP protobuf trace export");
                received
                    .lock()
                    .unwrap()
                    .push((request.url().to_owned(), decoded));
                let header =
                    tiny_http::Header::from_bytes("Content-Type", "application/x-protobuf")
                        .unwrap();
                let _ = request.respond(tiny_http::Response::empty(200).with_header(header));
            }
        })
    };

    let orders = concat!(env!("CARGO_MANIFEST_DIR"), "/orders.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_otlp"))
        .args(["--embedded", "--publish", &format!("orders={orders}")])
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("http://127.0.0.1:{port}/v1/traces"),
        )
        .env("OTEL_SERVICE_NAME", "orders-under-test")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .spawn()
        .expect("the example starts");
    // A guard against a hang, not a measurement: the embedded run ends once idle.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the embedded run did not end within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    server.unblock();
    collector.join().unwrap();
    assert!(status.success(), "the example exited with {status}");

    let received = received.lock().unwrap();
    assert!(!received.is_empty(), "the collector received no export");
    let mut spans: Vec<&Span> = Vec::new();
    for (url, export) in received.iter() {
        assert_eq!(url, "/v1/traces");
        for resource in &export.resource_spans {
            let attributes = &resource.resource.as_ref().expect("a resource").attributes;
            assert_eq!(text(attributes, "service.name"), Some("orders-under-test"));
            spans.extend(resource.scope_spans.iter().flat_map(|s| &s.spans));
        }
    }
    let deliveries = |handler: &str| -> Vec<&Span> {
        spans
            .iter()
            .copied()
            .filter(|s| s.name == "delivery" && text(&s.attributes, "handler") == Some(handler))
            .collect()
    };
    let (accepted, shipped) = (deliveries("accept"), deliveries("ship"));
    assert_eq!(
        accepted.len(),
        3,
        "one `accept` delivery per order: {spans:#?}"
    );
    assert_eq!(
        shipped.len(),
        3,
        "one `ship` delivery per order: {spans:#?}"
    );
    for ship in &shipped {
        let parent = accepted
            .iter()
            .find(|a| a.span_id == ship.parent_span_id)
            .unwrap_or_else(|| panic!("`ship` has no `accept` parent: {ship:#?}"));
        assert_eq!(ship.trace_id, parent.trace_id, "one trace per order");
    }
    let mut traces: Vec<_> = accepted.iter().map(|a| a.trace_id.clone()).collect();
    traces.sort();
    traces.dedup();
    assert_eq!(traces.len(), 3, "each order starts its own trace");
}
