//! The refunds service on real brokers, as the guide describes it: an unavailable processor
//! gives five deliveries and then one message on `refunds-dlq` carrying the original payload
//! and properties plus `REAL_TOPIC` and `ORIGIN_MESSAGE_ID`; a busy one is delivered again 30 s
//! later. Run on pulsar-lite (through the bridge) and on Apache Pulsar standalone, both
//! started here on 127.0.0.1; a broker that cannot start fails the test.

use std::sync::Arc;
use std::time::Duration;

use ruststream::runtime::Runtime;
use ruststream_pulsar::testing::LiveApp;
use ruststream_test_brokers::{ApacheStandalone, LiveBroker};

use super::*;

fn refund(id: u64) -> Refund {
    Refund {
        id,
        card: "4111-1111-1111-1111".into(),
        amount_cents: 1250,
    }
}

async fn connect(url: &str, namespace: &str, refusal: Refusal, rt: Arc<dyn Runtime>) -> LiveApp {
    let clients = Clients {
        processor: Arc::new(Processor::Refusing(refusal)),
    };
    LiveApp::with_state(app(), clients, rt)
        .url(url)
        .namespace(namespace)
        .await
        .expect("the refunds app connects")
}

async fn unavailable(url: &str, namespace: &str, rt: Arc<dyn Runtime>) {
    let live = connect(url, namespace, Refusal::Unavailable, rt).await;
    let payload = serde_json::to_vec(&refund(1)).unwrap();
    live.publish(
        Message::of(&refund(1))
            .unwrap()
            .property("origin", "live-test"),
    )
    .await
    .unwrap();
    assert!(
        live.wait_until(Duration::from_secs(20), |l| !l
            .calls_of("review")
            .is_empty())
            .await,
        "nothing reached refunds-dlq"
    );
    live.sleep(Duration::from_secs(2)).await;
    let calls = live.calls_of("process_refund");
    assert_eq!(calls.len(), 5, "five deliveries, the first included");
    let reviews = live.calls_of("review");
    assert_eq!(reviews.len(), 1, "one message on refunds-dlq");
    let dead = &reviews[0];
    assert_eq!(dead.payload_bytes(), payload, "the original payload");
    assert_eq!(
        dead.property("origin"),
        Some("live-test"),
        "the original properties"
    );
    assert_eq!(dead.property("REAL_TOPIC"), Some(calls[0].topic()));
    assert_eq!(
        dead.property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    assert!(dead.topic().ends_with("/refunds-dlq"));
    live.stop().await;
}

async fn busy(url: &str, namespace: &str, rt: Arc<dyn Runtime>) {
    let live = connect(url, namespace, Refusal::Busy, rt).await;
    live.publish(&refund(2)).await.unwrap();
    assert!(
        live.wait_until(BACKOFF + Duration::from_secs(15), |l| {
            l.calls_of("process_refund").len() >= 2
        })
        .await,
        "the busy refund did not come back"
    );
    let calls = live.calls_of("process_refund");
    let gap = calls[1].at() - calls[0].at();
    assert!(
        gap >= BACKOFF,
        "delivered again after {gap:?}, before BACKOFF"
    );
    assert!(
        gap < Duration::from_secs(120),
        "came back by the ack timeout, not the wait"
    );
    live.stop().await;
}

fn both_scenarios(url: String, namespaces: [String; 2]) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let adapter: Arc<dyn Runtime> =
        Arc::new(ruststream_tokio::TokioRuntime::new(rt.handle().clone()));
    rt.block_on(async {
        futures::join!(
            unavailable(&url, &namespaces[0], adapter.clone()),
            busy(&url, &namespaces[1], adapter.clone()),
        );
    });
}

#[test]
fn on_pulsar_lite() {
    let broker = LiveBroker::pulsar_lite_blocking().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("broker: {} at {}", broker.name(), broker.url());
    both_scenarios(
        broker.url().to_owned(),
        [
            "public/refunds-unavailable".into(),
            "public/refunds-busy".into(),
        ],
    );
}

#[test]
fn on_apache_pulsar() {
    let broker = ApacheStandalone::start().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("broker: Apache Pulsar standalone at {}", broker.url());
    let namespaces = ["public/refunds-unavailable", "public/refunds-busy"];
    for ns in namespaces {
        broker.create_namespace(ns).unwrap();
    }
    both_scenarios(broker.url(), namespaces.map(String::from));
}
