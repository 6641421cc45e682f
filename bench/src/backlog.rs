//! The live benchmarks' backlog: 128-byte JSON messages written as the Java client's defaults
//! write them, batched up to 1,000 messages an entry.

use pulsar::producer::ProducerOptions;
use pulsar::{Pulsar, TokioExecutor};

use crate::order::json_of_size;

/// Write `messages` JSON messages of 128 bytes to `topic` (one topic or one partition),
/// batched 1,000 an entry, and wait until the broker has stored every one.
pub async fn publish_backlog(pulsar: &Pulsar<TokioExecutor>, topic: &str, messages: u64) {
    publish_batched(pulsar, topic, (0..messages).map(|n| json_of_size(n, 128))).await;
}

/// Write `payloads` to `topic`, batched 1,000 an entry as the Java client's defaults batch,
/// and wait until the broker has stored every one.
pub async fn publish_batched(
    pulsar: &Pulsar<TokioExecutor>,
    topic: &str,
    payloads: impl IntoIterator<Item = Vec<u8>>,
) {
    let mut producer = pulsar
        .producer()
        .with_topic(topic)
        .with_options(ProducerOptions {
            batch_size: Some(1000),
            block_queue_if_full: true,
            ..ProducerOptions::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("a producer on {topic}: {e}"));
    let mut receipts = Vec::new();
    for (n, payload) in payloads.into_iter().enumerate() {
        receipts.push(
            producer
                .send_non_blocking(payload)
                .await
                .unwrap_or_else(|e| panic!("message {n} queued for {topic}: {e}")),
        );
    }
    producer
        .send_batch()
        .await
        .unwrap_or_else(|e| panic!("the last batch sent to {topic}: {e}"));
    for receipt in receipts {
        receipt
            .await
            .unwrap_or_else(|e| panic!("a message stored on {topic}: {e}"));
    }
    producer.close().await.ok();
}
