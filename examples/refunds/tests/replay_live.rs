//! `refunds dead-letter replay` on Apache Pulsar standalone, started here on 127.0.0.1 with
//! batch-index acknowledgement: 1,000 dead-lettered messages, published in batches as a
//! batching producer writes them, are moved back to `refunds`; the replay is SIGKILLed
//! midway and run again. Nothing is lost, and nothing is moved twice but at most the message
//! in flight at the kill. A broker that cannot start fails the test.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::producer::ProducerOptions;
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use ruststream_pulsar::replay::{
    DEAD_LETTER_REASON, DEFAULT_REPLAY_SUBSCRIPTION, ORIGIN_MESSAGE_ID, REAL_TOPIC, REPLAYED_FROM,
};
use ruststream_test_brokers::ApacheStandalone;

const MESSAGES: usize = 1_000;
/// Messages per batched entry.
const BATCH: usize = 100;
const DLQ: &str = "persistent://public/default/refunds-dlq";
const REFUNDS: &str = "persistent://public/default/refunds";
/// The replay is killed once it printed this many moves.
const KILL_AFTER: usize = 300;

async fn client(url: &str) -> Pulsar<TokioExecutor> {
    Pulsar::builder(url, TokioExecutor)
        .build()
        .await
        .expect("connects to the standalone broker")
}

async fn consumer(
    pulsar: &Pulsar<TokioExecutor>,
    topic: &str,
    subscription: &str,
) -> Consumer<Vec<u8>, TokioExecutor> {
    pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(subscription)
        .with_subscription_type(SubType::Shared)
        .with_options(ConsumerOptions::default().with_initial_position(InitialPosition::Earliest))
        .build()
        .await
        .expect("subscribes")
}

/// The dead-letter topic as a dead-letter step leaves it: a subscription of its own (a review
/// handler's), then `MESSAGES` messages in entries of `BATCH`, each with its key, an
/// application property and the dead-letter properties.
async fn dead_letter(url: &str) {
    let pulsar = client(url).await;
    let mut review = consumer(&pulsar, DLQ, "refunds-review").await;
    review.close().await.expect("closes");
    let mut producer = pulsar
        .producer()
        .with_topic(DLQ)
        .with_options(ProducerOptions {
            batch_size: Some(BATCH as u32),
            block_queue_if_full: true,
            ..ProducerOptions::default()
        })
        .build()
        .await
        .expect("opens a batching producer");
    let mut receipts = Vec::with_capacity(MESSAGES);
    for n in 0..MESSAGES {
        let receipt = producer
            .create_message()
            .with_content(format!("{{\"id\":{n}}}").into_bytes())
            .with_key(format!("card-{n}"))
            .with_property("n", n.to_string())
            .with_property(REAL_TOPIC, REFUNDS)
            .with_property(ORIGIN_MESSAGE_ID, format!("17:{n}:-1"))
            .with_property(DEAD_LETTER_REASON, "out-of-attempts")
            .send_non_blocking()
            .await
            .expect("queued");
        receipts.push(receipt);
    }
    producer.send_batch().await.expect("the last batch sent");
    for receipt in receipts {
        let receipt = receipt.await.expect("stored");
        assert!(
            receipt.message_id.and_then(|id| id.batch_index).is_some(),
            "published in batches"
        );
    }
    producer.close().await.expect("closes");
}

fn replay(url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_refunds"));
    command
        .args(["dead-letter", "replay", "--from", "refunds-dlq"])
        .args(["--batch-index-acks", "--rate", "500/s", "--pulsar-url", url])
        .env("RUST_LOG", "warn");
    command
}

/// How long one run of the replay may take before the test fails (it takes about 2 s).
const WITHIN: Duration = Duration::from_secs(90);

/// Run `command`, its stdout read line by line into `lines` as it prints them.
fn spawn_reading(mut command: Command) -> (Child, Receiver<String>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the refunds binary starts");
    let stdout = child.stdout.take().expect("piped");
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, lines)
}

/// Run the replay and SIGKILL it once it printed `KILL_AFTER` moves; the moves it printed.
fn replay_killed_midway(url: &str) -> usize {
    let (mut child, lines) = spawn_reading(replay(url));
    let deadline = Instant::now() + WITHIN;
    let mut moved = 0;
    while moved < KILL_AFTER {
        let line = match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => line,
            Err(e) => {
                let _ = child.kill();
                panic!("the replay printed {moved} moves, then nothing within {WITHIN:?} ({e})");
            }
        };
        assert!(
            !line.starts_with("summary:"),
            "ended before the kill: {line}"
        );
        if line.starts_with("moved ") {
            moved += 1;
        }
    }
    // Child::kill is SIGKILL: no handler runs, nothing is flushed.
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reaped");
    assert!(!status.success(), "killed: {status}");
    moved
}

/// Run the replay to its end (within [`WITHIN`]); everything it printed.
fn replay_to_end(url: &str) -> String {
    let (mut child, lines) = spawn_reading(replay(url));
    let deadline = Instant::now() + WITHIN;
    let mut printed = String::new();
    loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                printed.push_str(&line);
                printed.push('\n');
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the replay did not end within {WITHIN:?}; it printed:\n{printed}");
            }
        }
    }
    let status = child.wait().expect("reaped");
    assert!(status.success(), "{status}:\n{printed}");
    printed
}

/// The copies on `refunds`, read from the start: by message number, each copy's key and
/// properties.
async fn copies(url: &str) -> BTreeMap<usize, Vec<(Option<String>, BTreeMap<String, String>)>> {
    let pulsar = client(url).await;
    let mut check = consumer(&pulsar, REFUNDS, "replay-check").await;
    let mut copies: BTreeMap<usize, Vec<_>> = BTreeMap::new();
    let mut total = 0;
    loop {
        // Every copy was published before this started: two quiet seconds once all numbers
        // were seen means the topic was read to its end.
        let wait = if copies.len() < MESSAGES {
            Duration::from_secs(30)
        } else {
            Duration::from_secs(2)
        };
        let message = match tokio::time::timeout(wait, check.next()).await {
            Ok(Some(message)) => message.expect("a message"),
            Ok(None) => panic!("the consumer ended"),
            Err(_) => break,
        };
        check.ack(&message).await.expect("acked");
        total += 1;
        let properties: BTreeMap<String, String> = message
            .metadata()
            .properties
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect();
        let n: usize = properties["n"].parse().expect("n is a number");
        assert_eq!(
            message.payload.data,
            format!("{{\"id\":{n}}}").into_bytes(),
            "payload kept"
        );
        copies
            .entry(n)
            .or_default()
            .push((message.key(), properties));
    }
    assert!(total >= copies.len());
    copies
}

/// The replay subscription's backlog on the dead-letter topic.
async fn replay_backlog(url: &str) -> Option<u64> {
    let pulsar = client(url).await;
    let mut replay = consumer(&pulsar, DLQ, DEFAULT_REPLAY_SUBSCRIPTION).await;
    let stats = replay.get_stats().await.expect("stats");
    replay.close().await.expect("closes");
    stats[0].msg_backlog
}

#[test]
fn a_replay_killed_midway_and_run_again_moves_every_message_once_but_the_one_in_flight() {
    let started = Instant::now();
    let broker = ApacheStandalone::start_with(&["acknowledgmentAtBatchIndexLevelEnabled=true"])
        .unwrap_or_else(|e| panic!("{e}"));
    let url = broker.url();
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    rt.block_on(dead_letter(&url));
    let broker_ready = started.elapsed();

    let before_kill = replay_killed_midway(&url);
    let printed = replay_to_end(&url);
    let summary = printed
        .lines()
        .find(|l| l.starts_with("summary: "))
        .unwrap_or_else(|| panic!("no summary in:\n{printed}"));
    assert!(
        summary.contains("failed 0") && summary.contains("duplicates possible 0"),
        "{summary}"
    );
    assert!(
        summary.contains("every message there was at the start was read"),
        "{summary}"
    );
    let moved_again: usize = summary["summary: moved ".len()..]
        .split(',')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));

    let copies = rt.block_on(copies(&url));
    let missing: Vec<usize> = (0..MESSAGES).filter(|n| !copies.contains_key(n)).collect();
    assert!(missing.is_empty(), "lost: {missing:?}");
    let twice: Vec<usize> = copies
        .iter()
        .filter(|(_, c)| c.len() > 1)
        .map(|(n, _)| *n)
        .collect();
    println!(
        "replay live: {MESSAGES} dead-lettered in entries of {BATCH}; the killed replay \
         printed {before_kill} moves, the second moved {moved_again}; {} copies on {REFUNDS}; \
         duplicates: {} {twice:?} (the message in flight at the kill); broker ready in {:?}, \
         all in {:?}",
        copies.values().map(Vec::len).sum::<usize>(),
        twice.len(),
        broker_ready,
        started.elapsed()
    );
    assert!(
        twice.len() <= 1,
        "more than the message in flight moved twice: {twice:?}"
    );
    assert!(
        copies.values().all(|c| c.len() <= 2),
        "a message moved three times"
    );
    assert!(
        moved_again + before_kill >= MESSAGES && moved_again < MESSAGES,
        "the second replay continued where the first stopped: {before_kill} + {moved_again}"
    );
    for (n, copies) in &copies {
        for (key, properties) in copies {
            assert_eq!(
                key.as_deref(),
                Some(format!("card-{n}").as_str()),
                "key kept"
            );
            assert_eq!(properties["n"], n.to_string(), "properties kept");
            assert!(
                properties[REPLAYED_FROM].starts_with(&format!("{DLQ}@")),
                "{properties:?}"
            );
            for gone in [REAL_TOPIC, ORIGIN_MESSAGE_ID, DEAD_LETTER_REASON] {
                assert!(
                    !properties.contains_key(gone),
                    "{gone} left: {properties:?}"
                );
            }
        }
    }
    assert_eq!(
        rt.block_on(replay_backlog(&url)),
        Some(0),
        "the dead-letter backlog"
    );

    // A third run finds nothing and says so at once.
    let printed = replay_to_end(&url);
    assert!(
        printed.contains("summary: moved 0,") && printed.contains("every message there was"),
        "{printed}"
    );
}
