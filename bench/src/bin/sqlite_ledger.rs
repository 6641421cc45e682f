//! The ledger example (`examples/ledger`) on a real broker: movements stored in SQLite by a
//! handler of one message (a transaction each) against a batch handler of 100 (a transaction
//! per batch).
//!
//! `sqlite_ledger <messages> <rounds>`. Starts Apache Pulsar 4.0.7 standalone on 127.0.0.1. For each
//! round and contender: a namespace of its own, where `messages` movements (JSON, about 60
//! bytes) are written by a batching pulsar-rs producer (1,000 an entry, as the Java client's
//! defaults batch); then the ledger service starts on it with a fresh SQLite file (WAL,
//! `synchronous = FULL`: every commit synced to disk), and is timed from its start (connect and
//! subscribe included) to its last movement written. Rounds interleaved, the order of the two
//! contenders turned each round; every round printed, then the medians.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ledger::{app_on, Books, Handling, Ledger, Movement};
use ruststream::app::{App, StartContext};
use ruststream::runtime::Runtime;
use ruststream_pulsar::PulsarBroker;

/// Write `messages` movements to `topic`, batched, and wait until all are stored.
async fn publish(pulsar: &pulsar::Pulsar<pulsar::TokioExecutor>, topic: &str, messages: u64) {
    let movements = (0..messages).map(|id| {
        let movement = Movement {
            id,
            account: format!("account-{}", id % 50),
            amount_cents: if id % 2 == 0 { 125 } else { -75 },
        };
        serde_json::to_vec(&movement).expect("a movement encodes")
    });
    ruststream_bench::backlog::publish_batched(pulsar, topic, movements).await;
}

/// One round of one contender: the service stores `messages` movements already on the
/// broker; its rate in movements per second.
fn round(
    tokio: &tokio::runtime::Runtime,
    url: &str,
    namespace: &str,
    handling: Handling,
    messages: u64,
    dir: &std::path::Path,
) -> f64 {
    let db = dir.join(format!("{}.sqlite3", namespace.replace('/', "-")));
    let ledger = Arc::new(Ledger::open(&db).expect("a ledger file"));
    let books = Books {
        ledger: ledger.clone(),
    };
    let app = app_on(PulsarBroker::new(url).namespace(namespace), handling, None);
    let runtime: Arc<dyn Runtime> =
        Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone()));
    let started = Instant::now();
    let running = tokio
        .block_on(
            app.into_parts()
                .start(StartContext::new(runtime), Some(books)),
        )
        .unwrap_or_else(|e| panic!("the ledger starts: {e}"));
    while ledger.written() < messages {
        if started.elapsed() > Duration::from_secs(600) {
            panic!(
                "{handling:?}: only {} of {messages} written in 600 s",
                ledger.written()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let seconds = started.elapsed().as_secs_f64();
    tokio.block_on(running.stop());
    let _ = std::fs::remove_file(&db);
    messages as f64 / seconds
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let usage = "usage: sqlite_ledger <messages> <rounds>";
    let (messages, rounds) = match (args.next(), args.next()) {
        (Some(Some(m)), Some(Some(r))) => (m, r),
        _ => panic!("{usage}"),
    };
    let standalone = ruststream_test_brokers::ApacheStandalone::start()
        .unwrap_or_else(|e| panic!("Apache Pulsar standalone starts: {e}"));
    let url = standalone.url();
    println!("broker url={url}");
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let pulsar = tokio
        .block_on(pulsar::Pulsar::builder(url.clone(), pulsar::TokioExecutor).build())
        .expect("a raw client connects");
    let dir = std::env::temp_dir().join(format!("ruststream-ledger-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the ledger files");
    let contenders = [
        ("one-by-one", Handling::OneByOne),
        ("batch-of-100", Handling::Batches),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
    for r in 0..rounds {
        let order: Vec<usize> = match r % 2 {
            0 => vec![0, 1],
            _ => vec![1, 0],
        };
        for c in order {
            let (name, handling) = contenders[c];
            let namespace = format!("public/ledger-{name}-{r}-{}", std::process::id());
            standalone
                .create_namespace(&namespace)
                .unwrap_or_else(|e| panic!("namespace {namespace}: {e}"));
            let topic = format!("persistent://{namespace}/{}", ledger::MOVEMENTS);
            tokio.block_on(publish(&pulsar, &topic, messages));
            let rate = round(&tokio, &url, &namespace, handling, messages, &dir);
            println!("round={r} contender={name} messages={messages} msg_per_s={rate:.0}");
            rates[c].push(rate);
        }
    }
    let single = median(rates[0].clone());
    let batch = median(rates[1].clone());
    println!(
        "ledger on Apache Pulsar, SQLite synced at every commit: one transaction per movement \
         {single:.0} msg/s, one per batch of 100 {batch:.0} msg/s ({:.1}x), medians of {rounds} \
         rounds",
        batch / single
    );
    let _ = std::fs::remove_dir_all(&dir);
}
