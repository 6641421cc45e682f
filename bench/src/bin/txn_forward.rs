//! Transactional consume-transform-produce on Apache Pulsar with transactions (PIP-31):
//! ruststream's `.transactional()` registration against the official Java client, in messages
//! per second.
//!
//! `txn_forward <messages> <rounds> <warm-up-messages>`. Starts Apache Pulsar 4.0.7 standalone
//! on 127.0.0.1 with the transaction coordinator and batch-index acknowledgement
//! (`acknowledgmentAtBatchIndexLevelEnabled=true`, which a transactional acknowledgement of a
//! message of a batched entry needs: `tests/brokers/java/Transactions.java`).
//!
//! For each round and contender, a namespace of its own: `messages` payloads `{"id":n}` written
//! to its input topic by a batching pulsar-rs producer (1,000 an entry, as the other forward
//! benchmarks write their backlog) after the contender's subscription (Shared) was made; then
//! the contender forwards every message to the namespace's output topic, decoding `{"id":n}`
//! and publishing it re-encoded:
//!
//! - `ruststream-txn`: a handler that decodes the message (serde), `send`s it through its
//!   `Publisher` and returns `ack`, mounted `.transactional()`: ONE TRANSACTION PER MESSAGE (the
//!   send and the acknowledgement commit together), up to the default concurrency (32) of them
//!   at once, as a Shared subscription's handlers run.
//! - `ruststream-txn-seq`: the same with `.concurrency(1)`: one delivery, so one transaction,
//!   at a time, as the Java contenders run theirs.
//! - `ruststream-txn-100`: the same with `.transactional_with(TransactionPolicy::new()
//!   .group(100, 1 s))`: up to 100 deliveries in one transaction, committed once it is full
//!   (every group of the backlog fills well within the second).
//! - `java-txn-1` and `java-txn-100`: `Transactions.java forward` (through
//!   `ruststream_test_brokers::java_forward`, a JVM each run): a Shared consumer, one
//!   transaction at a time over 1 message and over 100 messages, sends and acknowledgements
//!   asynchronous within it, committed once they completed.
//! - `ruststream-plain`: the same handler mounted without `.transactional()`, for reference:
//!   at least once, the message acknowledged once its send is confirmed.
//!
//! Each is timed from its first message received (ruststream: the first handler call; Java:
//! its first `receive` returned) to its last commit answered (ruststream: the commit that
//! completed the count of messages committed, read from the framework's settlement metrics;
//! without transactions, every acknowledgement made: nothing left in flight). After each
//! run the output topic is read from its start: how many messages, how many distinct ids (a
//! transactional contender must show each id exactly once); and the input subscription's
//! backlog is read from the admin API (0 once every acknowledgement took effect; waited for
//! up to 10 s). Rounds interleaved, the order of the contenders turned each round, after a
//! warm-up round of `warm-up-messages` (none for 0) not counted; every round printed, then the
//! medians. Nothing is asserted. `BENCH_CONTENDERS=a,b` runs only those contenders;
//! `BENCH_TXN_CONCURRENCY=n` runs `ruststream-txn` at concurrency `n`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;
use ruststream::app::{App, RunningApp, StartContext};
use ruststream::message::Message;
use ruststream::runtime::Runtime;
use ruststream::transaction::TransactionPolicy;
use ruststream::PublishError;
use ruststream_pulsar::metric::{CALLS, COMMANDS};
use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};

/// What every contender decodes and publishes re-encoded: `{"id":n}`.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    id: u64,
}

/// The input topic, in the round's namespace.
const INPUT: &str = "txn-in";
/// The output topic, in the round's namespace.
const OUTPUT: &str = "txn-out";
/// The contenders, in the first round's order.
const CONTENDERS: [&str; 6] = [
    "ruststream-txn",
    "java-txn-1",
    "ruststream-txn-seq",
    "java-txn-100",
    "ruststream-txn-100",
    "ruststream-plain",
];
/// A run that makes no progress for this long is reported and stops the benchmark.
const STALLED: Duration = Duration::from_secs(120);

/// The handler's state: where records go, and how far the run is.
#[derive(Debug)]
struct Forwarding {
    to: String,
    first_call: OnceLock<Instant>,
    forwarded: AtomicU64,
    expected: u64,
    done: AtomicWaker,
}

/// Decodes `{"id":n}`, sends it re-encoded to the output topic and acknowledges: mounted
/// `.transactional()`, the send and the acknowledgement commit together.
#[subscriber("txn-in")]
async fn relay(
    record: &Record,
    publisher: Publisher,
    State(state): State<Arc<Forwarding>>,
) -> Result<HandlerOutcome, PublishError> {
    state.first_call.get_or_init(Instant::now);
    publisher
        .publish(Message::json(state.to.clone(), record)?)
        .await?;
    if state.forwarded.fetch_add(1, Ordering::AcqRel) + 1 >= state.expected {
        state.done.wake();
    }
    Ok(HandlerOutcome::ack())
}

/// The framework's settlement calls in this process, counted by [`Calls`]: the messages
/// settled by `call` with `result` (`ruststream_settlement_calls_total`; one for each abort),
/// and the commits asked for (`ruststream_settlement_commands_total{call="commit"}`: the
/// transactions).
static COUNTED: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];
/// What each of [`COUNTED`] counts: its name in the output, the metric, `call`, and `result`
/// (`None` for a metric without it).
const COUNTED_CALLS: [(&str, &str, &str, Option<&str>); 6] = [
    ("committed", CALLS, "commit", Some("ok")),
    ("commit_failed", CALLS, "commit", Some("error")),
    ("aborts", CALLS, "abort", None),
    ("acknowledged", CALLS, "ack", Some("ok")),
    ("ack_failed", CALLS, "ack", Some("error")),
    ("transactions", COMMANDS, "commit", None),
];
/// Where [`COUNTED`] counts the messages committed.
const COMMITTED: usize = 0;
/// When the last commit was answered (`ruststream_settlement_calls_total{call="commit",
/// result="ok"}` counted).
static LAST_COMMIT: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

/// The settlement calls counted so far, by [`COUNTED_CALLS`].
fn counted() -> [u64; 6] {
    std::array::from_fn(|i| COUNTED[i].load(Ordering::Acquire))
}

/// A metrics recorder that counts the framework's settlement calls of [`COUNTED_CALLS`] and
/// ignores every other metric.
struct Calls;

/// One of [`COUNTED`].
struct CallCounter(usize);

impl metrics::CounterFn for CallCounter {
    fn increment(&self, value: u64) {
        if self.0 == COMMITTED {
            *LAST_COMMIT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
        COUNTED[self.0].fetch_add(value, Ordering::AcqRel);
    }

    fn absolute(&self, _value: u64) {}
}

impl metrics::Recorder for Calls {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }

    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
        };
        let (call, result) = (label("call"), label("result"));
        let at = COUNTED_CALLS.iter().position(|(_, metric, c, r)| {
            key.name() == *metric
                && call.as_deref() == Some(*c)
                && r.is_none_or(|r| result.as_deref() == Some(r))
        });
        match at {
            Some(at) => metrics::Counter::from_arc(Arc::new(CallCounter(at))),
            None => metrics::Counter::noop(),
        }
    }

    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }

    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}

/// One ruststream run: the seconds from the first handler call to the last settlement, and
/// the settlement calls made meanwhile.
struct RustRun {
    seconds: f64,
    calls: [u64; 6],
}

/// How a ruststream contender mounts its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount {
    /// `.transactional()` at the default concurrency (32): one transaction per delivery.
    Transactional,
    /// `.transactional().concurrency(1)`: one delivery, so one transaction, at a time.
    TransactionalOneAtATime,
    /// `.transactional_with(TransactionPolicy::new().group(100, GROUP_WAIT))`: up to 100
    /// deliveries in one transaction.
    TransactionalGrouped,
    /// Without transactions.
    Plain,
}

/// How long after its first delivery started a grouped transaction takes more: long enough
/// that every group of the backlog fills (the Java contender's groups are always full).
const GROUP_WAIT: Duration = Duration::from_secs(1);

/// `BENCH_TXN_CONCURRENCY=n`: `ruststream-txn` at concurrency `n` instead of the default (32).
fn concurrency() -> Option<usize> {
    std::env::var("BENCH_TXN_CONCURRENCY").ok()?.parse().ok()
}

/// The ruststream forwarder on tokio at its defaults, in `namespace`, on `subscription` (made
/// before the input was written): started, then timed from its first handler call until every
/// message is forwarded and settled (with transactions, committed).
fn ruststream_run(
    tokio: &tokio::runtime::Runtime,
    url: &str,
    namespace: &str,
    subscription: &str,
    messages: u64,
    mount: Mount,
) -> Result<RustRun, String> {
    let transactional = mount != Mount::Plain;
    let state = Arc::new(Forwarding {
        to: format!("persistent://{namespace}/{OUTPUT}"),
        first_call: OnceLock::new(),
        forwarded: AtomicU64::new(0),
        expected: messages,
        done: AtomicWaker::new(),
    });
    let for_app = state.clone();
    let broker = PulsarBroker::new(url)
        .namespace(namespace)
        .default_subscription(subscription);
    let app = RustStream::new(AppInfo::new("bench-txn-forward", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(for_app))
        .with_broker(broker, |b| {
            let mounted = b.include(relay);
            let _ = match mount {
                Mount::Transactional => match concurrency() {
                    Some(limit) => mounted.transactional().concurrency(limit),
                    None => mounted.transactional(),
                },
                Mount::TransactionalOneAtATime => mounted.transactional().concurrency(1),
                Mount::TransactionalGrouped => mounted.transactional_with(
                    TransactionPolicy::new().group(ruststream::nonzero!(100), GROUP_WAIT),
                ),
                Mount::Plain => mounted,
            };
        });
    let runtime: Arc<dyn Runtime> =
        Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone()));
    let before = counted();
    let running: RunningApp = tokio
        .block_on(app.into_parts().start(StartContext::new(runtime), None))
        .map_err(|e| format!("the service did not start: {e}"))?;
    let settled = |calls: &[u64; 6]| match transactional {
        // Committed: a commit that failed comes back and is handled again.
        true => calls[COMMITTED] - before[COMMITTED] >= messages,
        false => true,
    };
    // Every message forwarded, then nothing in flight (a delivery counts as in flight until its
    // acknowledgement is made, or its commit answered), and, with transactions, `messages`
    // commits answered.
    let waited = tokio.block_on(async {
        let mut last = (0, [0; 6]);
        let mut progressed = Instant::now();
        loop {
            let finished = async {
                std::future::poll_fn(|cx| {
                    state.done.register(cx.waker());
                    match state.forwarded.load(Ordering::Acquire) >= messages {
                        true => std::task::Poll::Ready(()),
                        false => std::task::Poll::Pending,
                    }
                })
                .await;
                running.idle().await;
            };
            match tokio::time::timeout(Duration::from_secs(1), finished).await {
                // With transactions, the last commit's answer (a delivery acknowledged in a
                // group no longer counts as in flight while it waits for the commit).
                Ok(()) if settled(&counted()) => match transactional {
                    true => {
                        let last = *LAST_COMMIT.lock().unwrap_or_else(|e| e.into_inner());
                        return Ok(last.expect("a commit was counted"));
                    }
                    false => return Ok(Instant::now()),
                },
                // A commit failed: its message comes back and is handled again.
                Ok(()) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(_) => {}
            }
            let now = (state.forwarded.load(Ordering::Acquire), counted());
            if now != last {
                (last, progressed) = (now, Instant::now());
            } else if progressed.elapsed() > STALLED {
                return Err(format!(
                    "no progress for {} s: {} of {messages} handled, {} in flight, {}",
                    STALLED.as_secs(),
                    now.0,
                    running.in_flight(),
                    describe_calls(&diff(&now.1, &before)),
                ));
            }
        }
    });
    let calls = diff(&counted(), &before);
    tokio.block_on(running.stop());
    let end = waited?;
    let first = state
        .first_call
        .get()
        .copied()
        .ok_or_else(|| "the handler was never called".to_owned())?;
    Ok(RustRun {
        seconds: end.duration_since(first).as_secs_f64(),
        calls,
    })
}

fn diff(now: &[u64; 6], before: &[u64; 6]) -> [u64; 6] {
    std::array::from_fn(|i| now[i] - before[i])
}

fn describe_calls(calls: &[u64; 6]) -> String {
    (COUNTED_CALLS.iter().zip(calls))
        .map(|((name, ..), n)| format!("{name}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `topic` holds from its start: every message, and the distinct ids among them; read
/// until every id is seen, or nothing came for 5 s (30 s at most).
async fn check_output(
    pulsar: &pulsar::Pulsar<pulsar::TokioExecutor>,
    topic: &str,
    expected: u64,
) -> (u64, u64) {
    use futures::StreamExt;
    let mut consumer: pulsar::Consumer<Vec<u8>, _> = pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription("check")
        .with_subscription_type(pulsar::SubType::Exclusive)
        .with_options(
            pulsar::consumer::ConsumerOptions::default()
                .with_initial_position(pulsar::consumer::InitialPosition::Earliest),
        )
        .build()
        .await
        .expect("a checking consumer");
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while (seen.len() as u64) < expected && tokio::time::Instant::now() < deadline {
        let next = tokio::time::timeout(Duration::from_secs(5), consumer.next()).await;
        let Ok(Some(Ok(message))) = next else { break };
        total += 1;
        if let Ok(record) = serde_json::from_slice::<Record>(&message.payload.data) {
            seen.insert(record.id);
        }
        let _ = consumer.ack(&message).await;
    }
    let _ = consumer.close().await;
    (total, seen.len() as u64)
}

/// The messages `subscription` of `topic` still has to acknowledge (`msgBacklog` of the
/// admin API's topic stats), once it is 0 or after 10 s; `None` if the stats cannot be read.
fn backlog(admin: std::net::SocketAddr, topic: &str, subscription: &str) -> Option<u64> {
    use std::io::{Read, Write};
    let path = format!(
        "/admin/v2/{}/stats",
        topic.replacen("persistent://", "persistent/", 1)
    );
    let read = || -> Option<u64> {
        let mut stream =
            std::net::TcpStream::connect_timeout(&admin, Duration::from_secs(5)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        // HTTP/1.0: the answer is not chunked, and ends with the connection.
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {admin}\r\n\r\n").ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let (_, body) = answer.split_once("\r\n\r\n")?;
        let stats: serde_json::Value = serde_json::from_str(body).ok()?;
        stats["subscriptions"][subscription]["msgBacklog"].as_u64()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = read();
        if left != Some(0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        return left;
    }
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let usage = "usage: txn_forward <messages> <rounds> <warm-up-messages>";
    let (messages, rounds, warmup) = match (args.next(), args.next(), args.next()) {
        (Some(Some(m)), Some(Some(r)), Some(Some(w))) if m > 0 => (m, r, w),
        _ => panic!("{usage}"),
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    metrics::set_global_recorder(Calls).expect("the first recorder");
    let started = Instant::now();
    let standalone = ruststream_test_brokers::ApacheStandalone::start_with_transactions(&[
        "acknowledgmentAtBatchIndexLevelEnabled=true",
    ])
    .unwrap_or_else(|e| panic!("Apache Pulsar standalone with transactions starts: {e}"));
    let url = standalone.url();
    let classpath = standalone.java_classpath();
    println!(
        "broker url={url} transactions=on ready_after_seconds={:.1}",
        started.elapsed().as_secs_f64()
    );
    println!(
        "note: ruststream-txn runs one transaction per message, up to 32 at once (the default \
         concurrency), ruststream-txn-seq one handler at a time (concurrency 1; its commits \
         overlap the next messages, up to 32), ruststream-txn-100 up to 100 messages \
         in one (TransactionPolicy::group); java-txn-1 one per message and java-txn-100 one per \
         100, one transaction at a time; ruststream-plain is at least once, without transactions"
    );
    if let Err(e) = &classpath {
        println!("skipped contender=java reason={:?}", e.to_string());
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let pulsar = tokio
        .block_on(pulsar::Pulsar::builder(url.clone(), pulsar::TokioExecutor).build())
        .expect("a raw client connects");
    let run_id = std::process::id();
    let mut rounds_named: Vec<(String, u64)> = Vec::new();
    if warmup > 0 {
        rounds_named.push(("warm-up".to_owned(), warmup));
    }
    rounds_named.extend((0..rounds).map(|r| (r.to_string(), messages)));
    // `BENCH_CONTENDERS=ruststream-txn,java-txn-1` runs only those.
    let chosen = std::env::var("BENCH_CONTENDERS").ok();
    let contenders: Vec<&str> = (CONTENDERS.into_iter())
        .filter(|c| {
            chosen
                .as_ref()
                .is_none_or(|chosen| chosen.split(',').any(|w| w == *c))
        })
        .collect();
    let mut rates: Vec<(&str, f64)> = Vec::new();
    let mut failed = false;
    for (index, (round, count)) in rounds_named.iter().enumerate() {
        let count = *count;
        let mut order = contenders.clone();
        // The order turns each round, so that no contender always runs first.
        order.rotate_left(index % contenders.len().max(1));
        for contender in order {
            let java_group = match contender {
                "java-txn-1" => Some(1),
                "java-txn-100" => Some(100),
                _ => None,
            };
            if java_group.is_some() && classpath.is_err() {
                continue;
            }
            let namespace = format!("public/txn-{contender}-{round}-{run_id}");
            standalone
                .create_namespace(&namespace)
                .unwrap_or_else(|e| panic!("namespace {namespace}: {e}"));
            let input = format!("persistent://{namespace}/{INPUT}");
            let output = format!("persistent://{namespace}/{OUTPUT}");
            let subscription = "txn-forward";
            tokio.block_on(async {
                let consumer = pulsar
                    .consumer()
                    .with_topic(&input)
                    .with_subscription(subscription)
                    .with_subscription_type(pulsar::SubType::Shared)
                    .build::<Vec<u8>>()
                    .await
                    .expect("a subscription");
                drop(consumer);
                let payloads = (0..count)
                    .map(|id| serde_json::to_vec(&Record { id }).expect("a record encodes"));
                ruststream_bench::backlog::publish_batched(&pulsar, &input, payloads).await;
            });
            let outcome: Result<(f64, String), String> = match java_group {
                Some(group) => ruststream_test_brokers::java_forward(
                    classpath.as_ref().expect("checked above"),
                    &url,
                    &input,
                    &output,
                    subscription,
                    count as usize,
                    group,
                )
                .map(|figures| {
                    (
                        figures.seconds,
                        format!("transactions={}", count.div_ceil(group as u64)),
                    )
                })
                .map_err(|e| e.to_string()),
                None => ruststream_run(
                    &tokio,
                    &url,
                    &namespace,
                    subscription,
                    count,
                    match contender {
                        "ruststream-txn" => Mount::Transactional,
                        "ruststream-txn-seq" => Mount::TransactionalOneAtATime,
                        "ruststream-txn-100" => Mount::TransactionalGrouped,
                        _ => Mount::Plain,
                    },
                )
                .map(|run| (run.seconds, describe_calls(&run.calls))),
            };
            let (seconds, detail) = match outcome {
                Ok(figures) => figures,
                Err(why) => {
                    println!("failed contender={contender} round={round} reason={why:?}");
                    failed = true;
                    continue;
                }
            };
            let (total, distinct) = tokio.block_on(check_output(&pulsar, &output, count));
            let left = backlog(standalone.http(), &input, subscription)
                .map_or_else(|| "unknown".to_owned(), |n| n.to_string());
            let kind = if round == "warm-up" { "warm-up" } else { "run" };
            println!(
                "{kind} txn-forward contender={contender} round={round} messages={count} \
                 seconds={seconds:.3} messages_per_second={:.1} output_total={total} \
                 output_distinct={distinct} input_backlog={left} {detail}",
                count as f64 / seconds
            );
            if kind == "run" {
                rates.push((contender, count as f64 / seconds));
            }
        }
    }
    for contender in CONTENDERS {
        let of: Vec<f64> = (rates.iter())
            .filter(|(c, _)| *c == contender)
            .map(|(_, r)| *r)
            .collect();
        if of.is_empty() {
            continue;
        }
        let per = match contender {
            "ruststream-txn" => "one transaction per message, up to 32 at once",
            "ruststream-txn-seq" => "one transaction per message, one handler at a time",
            "java-txn-1" => "one transaction per message, one at a time",
            "java-txn-100" => "one transaction per 100 messages, one at a time",
            "ruststream-txn-100" => "up to 100 messages in one transaction",
            _ => "no transaction, at least once",
        };
        println!(
            "summary txn-forward {contender} ({per}): median {:.1} messages/s over {} rounds of \
             {messages} (rounds: {})",
            median(of.clone()),
            of.len(),
            of.iter()
                .map(|r| format!("{r:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let med = |c: &str| {
        median(
            rates
                .iter()
                .filter(|(x, _)| *x == c)
                .map(|(_, r)| *r)
                .collect(),
        )
    };
    let (ours, seq, grouped, java1, java100, plain) = (
        med("ruststream-txn"),
        med("ruststream-txn-seq"),
        med("ruststream-txn-100"),
        med("java-txn-1"),
        med("java-txn-100"),
        med("ruststream-plain"),
    );
    println!(
        "summary txn-forward: one transaction per message, ruststream {ours:.1} msg/s ({:.2}x \
         the Java client's {java1:.1}), one handler at a time {seq:.1} ({:.2}x; its commits \
         overlap, the Java client's do not); per \
         100 messages, ruststream {grouped:.1} ({:.2}x the Java client's {java100:.1}); \
         ruststream without transactions {plain:.1}",
        ours / java1,
        seq / java1,
        grouped / java100,
    );
    // The clients first: the broker's end would leave them retrying their connections.
    drop(pulsar);
    tokio.shutdown_timeout(Duration::from_secs(5));
    drop(standalone);
    if failed {
        std::process::exit(1);
    }
}
