//! A producer whose messages ruststream's client cannot read, on a real broker: crates.io's
//! pulsar-rs 6.9.1 compressing with Snappy. It writes Snappy's framed stream format, while the
//! Java and C++ clients (and ruststream, which reads and writes what they do) use the raw block
//! format: each side fails to decompress what the other wrote. A service on pulsar-rs 6.9.1
//! publishing with Snappy is how such messages reach a topic in practice.
#![allow(missing_docs)]

use std::io::Write;

use pulsar_6_9_1::compression::{Compression, CompressionSnappy};
use pulsar_6_9_1::producer::{Producer, ProducerOptions};
use pulsar_6_9_1::{AsyncStdExecutor, Pulsar};

/// Publish `payload` to `topic` (fully qualified) on the broker at `url` with pulsar-rs 6.9.1
/// and Snappy, not batched, and wait for the receipt; the bytes the broker stores (the framed
/// Snappy stream of `payload`).
pub async fn publish_framed_snappy(url: &str, topic: &str, payload: Vec<u8>) -> Vec<u8> {
    let mut producer = snappy_producer(url, topic, None).await;
    let stored = framed_snappy(&payload);
    producer
        .send_non_blocking(payload)
        .await
        .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 sends to {topic}: {e}"))
        .await
        .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 gets a receipt from {topic}: {e}"));
    let _ = producer.close().await;
    stored
}

/// Publish `payloads` to `topic` (fully qualified) on the broker at `url` with pulsar-rs 6.9.1,
/// Snappy and batching, as one batched entry, and wait for the receipts.
pub async fn publish_framed_snappy_batch(url: &str, topic: &str, payloads: Vec<Vec<u8>>) {
    let batch = u32::try_from(payloads.len()).unwrap_or(u32::MAX);
    let mut producer = snappy_producer(url, topic, Some(batch)).await;
    let mut receipts = Vec::new();
    for payload in payloads {
        receipts.push(
            producer
                .send_non_blocking(payload)
                .await
                .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 sends to {topic}: {e}")),
        );
    }
    producer
        .send_batch()
        .await
        .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 sends the batch to {topic}: {e}"));
    for receipt in receipts {
        receipt
            .await
            .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 gets a receipt from {topic}: {e}"));
    }
    let _ = producer.close().await;
}

/// A pulsar-rs 6.9.1 producer on `topic` at `url` compressing with Snappy, batching
/// `batch_size` messages an entry where given.
async fn snappy_producer(
    url: &str,
    topic: &str,
    batch_size: Option<u32>,
) -> Producer<AsyncStdExecutor> {
    let pulsar: Pulsar<AsyncStdExecutor> = Pulsar::builder(url, AsyncStdExecutor)
        .build()
        .await
        .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 connects to {url}: {e}"));
    pulsar
        .producer()
        .with_topic(topic)
        .with_options(ProducerOptions {
            compression: Some(Compression::Snappy(CompressionSnappy::default())),
            batch_size,
            ..ProducerOptions::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("pulsar-rs 6.9.1 opens a producer on {topic}: {e}"))
}

/// `payload` in Snappy's framed stream format, as pulsar-rs 6.9.1 compresses it.
pub fn framed_snappy(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = snap::write::FrameEncoder::new(&mut out);
    encoder.write_all(payload).expect("writes to memory");
    encoder.flush().expect("writes to memory");
    drop(encoder);
    out
}
