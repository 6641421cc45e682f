//! pulsar-rs against a real pulsar-lite through the bridge. These tests start the broker
//! themselves; without pulsar-lite installed they fail (with install advice), never skip.

use std::time::Duration;

use futures::StreamExt as _;
use pulsar::consumer::Message;
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use ruststream_test_brokers::{require_broker, unique_topic, LiveBroker};
use tokio::time::timeout;

/// Generous: a loaded 2-core CI machine; a healthy run takes milliseconds per step.
const STEP: Duration = Duration::from_secs(30);
/// How long "nothing arrives" is watched for.
const QUIET: Duration = Duration::from_millis(1500);

async fn pulsar_lite() -> LiveBroker {
    match LiveBroker::pulsar_lite().await {
        Ok(broker) => broker,
        Err(err) => panic!("{err}"),
    }
}

async fn client(broker: &LiveBroker) -> Pulsar<TokioExecutor> {
    println!("broker: {} at {}", broker.name(), broker.url());
    timeout(STEP, Pulsar::builder(broker.url(), TokioExecutor).build())
        .await
        .expect("connecting timed out")
        .expect("pulsar-rs connects through the bridge")
}

async fn shared_consumer(
    pulsar: &Pulsar<TokioExecutor>,
    topic: &str,
    subscription: &str,
) -> Consumer<Vec<u8>, TokioExecutor> {
    timeout(
        STEP,
        pulsar
            .consumer()
            .with_topic(topic)
            .with_subscription(subscription)
            .with_subscription_type(SubType::Shared)
            .build(),
    )
    .await
    .expect("subscribing timed out")
    .expect("subscribe")
}

async fn publish(pulsar: &Pulsar<TokioExecutor>, topic: &str, body: &str) {
    let mut producer = timeout(STEP, pulsar.producer().with_topic(topic).build())
        .await
        .expect("creating the producer timed out")
        .expect("create producer");
    let receipt = timeout(STEP, async {
        producer
            .send_non_blocking(body.as_bytes().to_vec())
            .await?
            .await
    })
    .await
    .expect("publishing timed out")
    .expect("publish");
    println!("published {body:?} to {topic}: {:?}", receipt.message_id);
}

async fn next(consumer: &mut Consumer<Vec<u8>, TokioExecutor>) -> Message<Vec<u8>> {
    timeout(STEP, consumer.next())
        .await
        .expect("no delivery in time: is the bridge fixing MESSAGE frames?")
        .expect("the consumer stream ended")
        .expect("a delivery pulsar-rs can decode")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_subscription_nack_redelivers_with_count_one_then_ack_settles() {
    let broker = pulsar_lite().await;
    let pulsar = client(&broker).await;
    let topic = unique_topic("bridge-smoke");
    let mut consumer = shared_consumer(&pulsar, &topic, "smoke").await;
    publish(&pulsar, &topic, "hello through the bridge").await;

    let first = next(&mut consumer).await;
    assert_eq!(first.payload.data, b"hello through the bridge");
    assert_eq!(first.topic, topic);
    let id = first.message_id().clone();
    consumer.nack(&first).await.expect("nack");

    let second = next(&mut consumer).await;
    assert_eq!(second.payload.data, b"hello through the bridge");
    assert_eq!(
        (second.message_id().ledger_id, second.message_id().entry_id),
        (id.ledger_id, id.entry_id),
        "the nacked message comes back"
    );
    consumer.ack(&second).await.expect("ack");

    // The bridge saw the redelivery counts on the wire, whatever the client exposes.
    let counts = broker
        .deliveries()
        .expect("a bridged broker logs deliveries")
        .redelivery_counts(id.ledger_id, id.entry_id);
    println!("redelivery counts seen by the bridge: {counts:?}");
    assert_eq!(counts, vec![0, 1]);

    let after_ack = timeout(QUIET, consumer.next()).await;
    assert!(
        after_ack.is_err(),
        "an acknowledged message must not come back: {after_ack:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_topic_names_reach_pulsar_lite_unexpanded_so_tests_use_full_names() {
    // Apache Pulsar treats `name` and `persistent://public/default/name` as one topic;
    // pulsar-rs does not expand short names and pulsar-lite does not either. The bridge
    // forwards client frames unchanged, so this is not its job: live tests use full names.
    let broker = pulsar_lite().await;
    let pulsar = client(&broker).await;
    let full = unique_topic("bridge-short");
    let short = full
        .trim_start_matches("persistent://public/default/")
        .to_owned();
    let mut on_full = shared_consumer(&pulsar, &full, "full").await;
    let mut on_short = shared_consumer(&pulsar, &short, "short").await;

    publish(&pulsar, &short, "published under the short name").await;

    let got = next(&mut on_short).await;
    assert_eq!(got.payload.data, b"published under the short name");
    on_short.ack(&got).await.expect("ack");
    let on_full_result = timeout(QUIET, on_full.next()).await;
    assert!(
        on_full_result.is_err(),
        "pulsar-lite now expands short names (update docs/live-brokers.md): {on_full_result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_required_broker_round_trips_a_message() {
    // Whatever broker the policy gives (external if RUSTSTREAM_PULSAR_URL is set).
    let broker = match require_broker().await {
        Ok(broker) => broker,
        Err(err) => panic!("{err}"),
    };
    let pulsar = client(&broker).await;
    let topic = unique_topic("bridge-roundtrip");
    let mut consumer = shared_consumer(&pulsar, &topic, "roundtrip").await;
    for n in 0..20 {
        publish(&pulsar, &topic, &format!("message {n}")).await;
    }
    let mut bodies = Vec::new();
    for _ in 0..20 {
        let message = next(&mut consumer).await;
        bodies.push(String::from_utf8(message.payload.data.clone()).expect("utf-8"));
        consumer.ack(&message).await.expect("ack");
    }
    bodies.sort_by_key(|b| b.trim_start_matches("message ").parse::<u32>().unwrap_or(0));
    let expected: Vec<String> = (0..20).map(|n| format!("message {n}")).collect();
    assert_eq!(bodies, expected);
}
