//! Publishing on a real broker, side by side with the Java client at its defaults: the
//! forwarding pipeline, publish-only throughput, and publish latency. Every contender decodes
//! each order from JSON and encodes what it publishes as JSON.
//!
//! `forward <messages> <rounds> <latency-rate> <latency-seconds>`. Starts Apache Pulsar 4.0.7
//! standalone on 127.0.0.1 (or uses `RUSTSTREAM_BENCH_URL`, whose process is then found by its
//! port if it is a standalone of `start.sh` on this machine).
//!
//! - **forward**: a backlog of `messages` batched 128-byte JSON orders; each contender, on a
//!   subscription of its own made before the backlog was written, decodes each order, publishes
//!   a shipment keyed by the order id to a topic of its own, and acknowledges the order once
//!   the shipment is confirmed. ruststream: a handler that `send`s the shipment and returns
//!   `ack` (the framework acknowledges once the send is confirmed), on tokio at its defaults;
//!   Java: `consumer.receive()`, then `producer.sendAsync`, acknowledging in its callback, the
//!   producer at its defaults. Timed from the moment the consumer is subscribed (ruststream:
//!   the app started, connected and subscribed; Java: `subscribe()` returned, its client
//!   connected before) to the last acknowledgement; the consumer's CPU (this process's, the
//!   JVM's) and the broker's over the same span. Rounds interleaved, the order of the
//!   contenders turned each round; every round printed.
//! - **publish**: `messages` 128-byte JSON messages published as fast as they are taken, from
//!   the first send to the last receipt; ruststream: `RunningApp::send` with a `Pipeline`;
//!   Java: `sendAsync` then `flush`.
//! - **latency**: one message every `1 / latency-rate` s for `latency-seconds` s, each timed
//!   from its send to its receipt (the first second not counted); p50, p99, max.
//! - **file**: `messages` lines of 128-byte JSON published from a file by `ack_service run
//!   --publish TOPIC=FILE` (the runner's pipelined publish) and by the official Python client
//!   (`bench/python/publish_file.py`, batching on), each from its first line read to its last
//!   receipt.
//!
//! Prints `key=value` lines, one per round, then a summary.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use futures::task::AtomicWaker;
use ruststream::app::{App, RunningApp, StartContext};
use ruststream::message::Message;
use ruststream::publish::{Pipeline, Receipt, Tell};
use ruststream::runtime::Runtime;
use ruststream::{MessageId, PublishError};
use ruststream_bench::backlog::publish_backlog;
use ruststream_bench::broker_process::BrokerProcess;
use ruststream_bench::java_consumer::JavaConsumer;
use ruststream_bench::order::{json_of_size, Order};
use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};

/// What the forwarder publishes for each order.
#[derive(Debug, Serialize, Deserialize)]
struct Shipment {
    order: u64,
    customer: String,
    amount_cents: u64,
}

/// The forwarder's state: where shipments go, and how many orders it forwarded.
#[derive(Debug)]
struct Forwarding {
    to: &'static str,
    forwarded: AtomicU64,
    expected: u64,
    done: AtomicWaker,
}

impl Forwarding {
    /// Completes once `expected` orders were forwarded (handed to the producer).
    async fn all_forwarded(&self) {
        std::future::poll_fn(|cx| {
            self.done.register(cx.waker());
            if self.forwarded.load(Ordering::Acquire) >= self.expected {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    }
}

/// Decodes the order, sends its shipment keyed by the order id, and acknowledges: the
/// framework acknowledges the order once the shipment is confirmed.
#[subscriber("bench-orders")]
async fn forward(
    order: &Order,
    publisher: Publisher,
    State(state): State<Arc<Forwarding>>,
) -> Result<HandlerOutcome, PublishError> {
    let shipment = Shipment {
        order: order.id,
        customer: order.customer.clone(),
        amount_cents: order.amount_cents,
    };
    publisher
        .publish(Message::json(state.to, &shipment)?.key(order.id.to_string()))
        .await?;
    if state.forwarded.fetch_add(1, Ordering::AcqRel) + 1 == state.expected {
        state.done.wake();
    }
    Ok(HandlerOutcome::ack())
}

/// One contender's round.
#[derive(Debug, Clone, Copy)]
struct Run {
    cpu: Duration,
    wall: Duration,
    broker: Option<Duration>,
}

/// The start of a measured span.
struct Span<'a> {
    cpu: ProcessTime,
    wall: Instant,
    broker: Option<(&'a BrokerProcess, Duration)>,
}

impl<'a> Span<'a> {
    fn start(broker: Option<&'a BrokerProcess>) -> Self {
        Span {
            broker: broker.and_then(|b| Some((b, b.cpu()?))),
            cpu: ProcessTime::now(),
            wall: Instant::now(),
        }
    }

    fn end(self) -> Run {
        let (cpu, wall) = (self.cpu.elapsed(), self.wall.elapsed());
        Run {
            cpu,
            wall,
            broker: self
                .broker
                .and_then(|(b, start)| Some(b.cpu()?.saturating_sub(start))),
        }
    }
}

/// The ruststream forwarder on tokio at its defaults: started (connected, subscribed), then
/// timed until every order is forwarded and acknowledged.
async fn ruststream_forward(
    url: &str,
    subscription: &str,
    to: &'static str,
    messages: u64,
    runtime: Arc<dyn Runtime>,
    broker: Option<&BrokerProcess>,
) -> Run {
    let state = Arc::new(Forwarding {
        to,
        forwarded: AtomicU64::new(0),
        expected: messages,
        done: AtomicWaker::new(),
    });
    let for_app = state.clone();
    let app = RustStream::new(AppInfo::new("bench-forward", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(for_app))
        .with_broker(
            PulsarBroker::new(url).default_subscription(subscription),
            |b| {
                b.include(forward);
            },
        );
    let running: RunningApp = app
        .into_parts()
        .start(StartContext::new(runtime), None)
        .await
        .unwrap_or_else(|e| panic!("the framework connects: {e}"));
    let span = Span::start(broker);
    state.all_forwarded().await;
    // Every acknowledgement made: nothing in flight (a delivery waiting for its shipment's
    // receipt counts as in flight until it is acknowledged).
    running.idle().await;
    let run = span.end();
    running.stop().await;
    run
}

/// Answers of pipelined publishes, with when each was sent, for latency.
#[derive(Default)]
struct Latencies {
    sent: Mutex<Vec<Option<Instant>>>,
    taken: Mutex<Vec<u64>>,
    warmup: u64,
}

impl Tell for Latencies {
    fn tell(&self, token: u64, result: Result<MessageId, PublishError>) {
        let now = Instant::now();
        if let Err(error) = result {
            panic!("publish {token} failed: {error}");
        }
        let sent = self.sent.lock().unwrap()[token as usize].take();
        if let (Some(sent), true) = (sent, token >= self.warmup) {
            let ns = now.duration_since(sent).as_nanos() as u64;
            self.taken.lock().unwrap().push(ns);
        }
    }
}

/// Publish `messages` as fast as the producer takes them, timed from the first send to the
/// last receipt.
async fn ruststream_publish(
    app: &RunningApp,
    topic: &'static str,
    messages: u64,
    broker: Option<&BrokerProcess>,
) -> Run {
    let pipeline = Pipeline::new();
    let span = Span::start(broker);
    for n in 0..messages {
        let message = Message::new(topic, json_of_size(n, 128));
        app.send(message, Receipt::to(pipeline.confirm(n)))
            .await
            .unwrap_or_else(|e| panic!("publish {n}: {e}"));
    }
    pipeline.drained().await;
    let run = span.end();
    if let Some((n, e)) = pipeline.failure() {
        panic!("publish {n} failed: {e}");
    }
    run
}

/// One message every `1 / rate` s for `seconds` s, each timed from its send to its receipt,
/// the first second not counted: the latencies in nanoseconds. Paced on a thread of its own
/// with the OS's sleep, as the Java program paces with `parkNanos`: a sender woken by the
/// runtime's timer would send in bursts at its ticks.
fn ruststream_latency(
    app: &RunningApp,
    tokio: &tokio::runtime::Handle,
    topic: &'static str,
    rate: u64,
    seconds: u64,
) -> Vec<u64> {
    let total = rate * seconds;
    let latencies = Arc::new(Latencies {
        sent: Mutex::new(vec![None; total as usize]),
        taken: Mutex::new(Vec::new()),
        warmup: rate,
    });
    let every = Duration::from_secs_f64(1.0 / rate as f64);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // pulsar-rs looks the topic up on the first send, with tokio's timers.
            let _tokio = tokio.enter();
            let start = Instant::now();
            for n in 0..total {
                let due = start + every * n as u32;
                loop {
                    let now = Instant::now();
                    if now >= due {
                        break;
                    }
                    std::thread::sleep(due - now);
                }
                let message = Message::new(topic, json_of_size(n, 128));
                latencies.sent.lock().unwrap()[n as usize] = Some(Instant::now());
                let receipt = Receipt::to(ruststream::publish::Confirm::new(latencies.clone(), n));
                futures::executor::block_on(app.send(message, receipt))
                    .unwrap_or_else(|e| panic!("publish {n}: {e}"));
            }
        });
    });
    // The last answers.
    while latencies.taken.lock().unwrap().len() < (total - rate) as usize {
        std::thread::sleep(Duration::from_millis(10));
    }
    let taken = latencies.taken.lock().unwrap().clone();
    taken
}

/// How many of the shipments of the orders `topic` holds, read from its start (30 s at most).
async fn count_stored(
    pulsar: &pulsar::Pulsar<pulsar::TokioExecutor>,
    topic: &str,
    expected: u64,
) -> u64 {
    use futures::StreamExt;
    let mut consumer: pulsar::Consumer<Vec<u8>, _> = pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(format!("check-{}", std::process::id()))
        .with_subscription_type(pulsar::SubType::Exclusive)
        .with_options(
            pulsar::consumer::ConsumerOptions::default()
                .with_initial_position(pulsar::consumer::InitialPosition::Earliest),
        )
        .build()
        .await
        .expect("a checking consumer");
    let mut seen = std::collections::HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while (seen.len() as u64) < expected {
        let next = tokio::time::timeout_at(deadline, consumer.next()).await;
        let Ok(Some(Ok(message))) = next else { break };
        if let Ok(shipment) = serde_json::from_slice::<Shipment>(&message.payload.data) {
            seen.insert(shipment.order);
        }
        let _ = consumer.ack(&message).await;
    }
    let _ = consumer.close().await;
    seen.len() as u64
}

/// Microseconds per message of `time`.
fn per_message(time: Duration, messages: u64) -> f64 {
    time.as_secs_f64() * 1e6 / messages as f64
}

fn print_run(part: &str, contender: &str, round: u64, messages: u64, run: Run) {
    let broker = match run.broker {
        Some(broker) => format!("{:.2}", per_message(broker, messages)),
        None => "unknown".to_owned(),
    };
    println!(
        "{part} contender={contender} round={round} messages={messages} \
         cpu_us_per_message={:.2} broker_cpu_us_per_message={broker} wall_seconds={:.3} \
         messages_per_second={:.0}",
        per_message(run.cpu, messages),
        run.wall.as_secs_f64(),
        messages as f64 / run.wall.as_secs_f64()
    );
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// p50, p99 and max of `ns`, in microseconds.
fn percentiles(mut ns: Vec<u64>) -> (f64, f64, f64) {
    if ns.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() as f64 * q) as usize).min(ns.len() - 1)] as f64 / 1e3;
    (at(0.50), at(0.99), *ns.last().unwrap_or(&0) as f64 / 1e3)
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let usage = "usage: forward <messages> <rounds> <latency-rate> <latency-seconds>";
    let (messages, rounds, rate, seconds) =
        match (args.next(), args.next(), args.next(), args.next()) {
            (Some(Some(m)), Some(Some(r)), Some(Some(l)), Some(Some(s))) => (m, r, l, s),
            _ => panic!("{usage}"),
        };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let standalone;
    let (url, broker, classpath) = match std::env::var("RUSTSTREAM_BENCH_URL") {
        Ok(url) => {
            let port = url
                .rsplit(':')
                .next()
                .and_then(|p| p.trim_end_matches('/').parse().ok());
            let broker = port.and_then(|port| BrokerProcess::standalone_on_port(port).ok());
            let classpath = std::env::var("RUSTSTREAM_BENCH_JAVA_CLASSPATH")
                .map_err(|_| "RUSTSTREAM_BENCH_JAVA_CLASSPATH is not set".to_owned());
            (url, broker, classpath)
        }
        Err(_) => {
            standalone = ruststream_test_brokers::ApacheStandalone::start()
                .unwrap_or_else(|e| panic!("Apache Pulsar standalone starts: {e}"));
            let url = standalone.url();
            let port = url
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("the standalone's URL ends with its port");
            let broker = BrokerProcess::standalone_on_port(port).ok();
            let classpath = standalone
                .java_classpath()
                .map_err(|e| format!("no Java classpath: {e}"));
            (url, broker, classpath)
        }
    };
    match &broker {
        Some(b) => println!("broker url={url} pid={}", b.pid()),
        None => println!("broker url={url} broker_cpu=unknown"),
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let runtime: Arc<dyn Runtime> =
        Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone()));
    let pulsar = tokio
        .block_on(pulsar::Pulsar::builder(url.clone(), pulsar::TokioExecutor).build())
        .expect("a raw client connects");
    let run_id = std::process::id();
    let topic = "persistent://public/default/bench-orders";
    // `BENCH_CONTENDERS=ruststream` runs one contender (to profile it).
    let chosen = std::env::var("BENCH_CONTENDERS").unwrap_or_else(|_| "ruststream,java".to_owned());
    let contenders: Vec<&str> = ["ruststream", "java"]
        .into_iter()
        .filter(|c| chosen.split(',').any(|w| w == *c))
        .collect();
    let java = match contenders.contains(&"java") {
        true => classpath.and_then(|classpath| JavaConsumer::start(&classpath, topic)),
        false => Err("not chosen (BENCH_CONTENDERS)".to_owned()),
    };
    let mut java = match java {
        Ok(java) => Some(java),
        Err(reason) => {
            println!("skipped contender=java reason={reason:?}");
            None
        }
    };
    let name = |contender: &str, round: &str| format!("{contender}-{round}-{run_id}");
    let rounds_named: Vec<String> = std::iter::once("warm-up".to_owned())
        .chain((0..rounds).map(|r| r.to_string()))
        .collect();
    tokio.block_on(async {
        for round in &rounds_named {
            for contender in &contenders {
                let consumer = pulsar
                    .consumer()
                    .with_topic(topic)
                    .with_subscription(name(contender, round))
                    .with_subscription_type(pulsar::SubType::Shared)
                    .build::<Vec<u8>>()
                    .await
                    .expect("a subscription");
                drop(consumer);
            }
        }
        publish_backlog(&pulsar, topic, messages).await;
    });

    // The forwarding pipeline.
    let mut runs: Vec<(&str, Run)> = Vec::new();
    let latency_only = std::env::var("BENCH_LATENCY_ONLY").is_ok();
    for (index, round) in rounds_named.iter().enumerate().filter(|_| !latency_only) {
        // The order turns each round, so that no contender always runs first.
        let mut order = contenders.to_vec();
        order.rotate_left(index % contenders.len().max(1));
        for contender in order {
            let subscription = name(contender, round);
            let to: &'static str = Box::leak(
                format!("persistent://public/default/bench-shipments-{subscription}")
                    .into_boxed_str(),
            );
            let run = match contender {
                "ruststream" => tokio.block_on(ruststream_forward(
                    &url,
                    &subscription,
                    to,
                    messages,
                    runtime.clone(),
                    broker.as_ref(),
                )),
                "java" => {
                    let Some(java) = java.as_mut() else { continue };
                    let start = broker.as_ref().and_then(|b| Some((b, b.cpu()?)));
                    let mut at_last = None;
                    let java_run = java
                        .forward(&url, &subscription, to, messages, || {
                            at_last =
                                start.and_then(|(b, start)| Some(b.cpu()?.saturating_sub(start)));
                        })
                        .unwrap_or_else(|e| panic!("the Java client forwards: {e}"));
                    Run {
                        cpu: java_run.cpu,
                        wall: java_run.wall,
                        broker: at_last,
                    }
                }
                _ => unreachable!(),
            };
            if index == 1 {
                // Once a contender: every order's shipment is on its topic.
                let stored = tokio.block_on(count_stored(&pulsar, to, messages));
                println!("check forward contender={contender} shipments={stored} of {messages}");
                assert_eq!(stored, messages, "{contender} forwarded every order");
            }
            if round == "warm-up" {
                print_run("warm-up forward", contender, 0, messages, run);
            } else {
                print_run("run forward", contender, index as u64 - 1, messages, run);
                runs.push((contender, run));
            }
        }
    }
    for contender in contenders.iter().copied() {
        let of = |figure: &dyn Fn(&Run) -> f64| -> f64 {
            median(
                runs.iter()
                    .filter(|(c, _)| *c == contender)
                    .map(|(_, r)| figure(r))
                    .collect(),
            )
        };
        println!(
            "summary forward {contender}: median {:.0} messages/s, consumer CPU {:.2} us/message, \
             broker CPU {:.2} us/message",
            of(&|r| messages as f64 / r.wall.as_secs_f64()),
            of(&|r| per_message(r.cpu, messages)),
            of(&|r| r.broker.map_or(f64::NAN, |b| per_message(b, messages))),
        );
    }

    // Publishing alone, and its latency.
    let skip_publish = std::env::var("BENCH_LATENCY_ONLY").is_ok();
    let mut publishing = PulsarBroker::new(url.as_str());
    if let Some(us) = std::env::var("BENCH_BATCH_DELAY_US")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        publishing = publishing
            .batching(ruststream::publish::Batching::new().max_delay(Duration::from_micros(us)));
    }
    if std::env::var("BENCH_BATCHING_OFF").is_ok() {
        publishing = publishing.batching(ruststream::publish::Batching::off());
    }
    let app =
        RustStream::new(AppInfo::new("bench-publish", "0.0.0")).with_broker(publishing, |_| {});
    let running = tokio
        .block_on(
            app.into_parts()
                .start(StartContext::new(runtime.clone()), None),
        )
        .unwrap_or_else(|e| panic!("the framework connects: {e}"));
    let mut publish_runs: Vec<(&str, Run)> = Vec::new();
    for (index, round) in rounds_named.iter().enumerate().filter(|_| !skip_publish) {
        let mut order = contenders.to_vec();
        order.rotate_left(index % contenders.len().max(1));
        for contender in order {
            let to: &'static str = Box::leak(
                format!(
                    "persistent://public/default/bench-published-{}",
                    name(contender, round)
                )
                .into_boxed_str(),
            );
            let run = match contender {
                "ruststream" => {
                    tokio.block_on(ruststream_publish(&running, to, messages, broker.as_ref()))
                }
                "java" => {
                    let Some(java) = java.as_mut() else { continue };
                    let start = broker.as_ref().and_then(|b| Some((b, b.cpu()?)));
                    let mut at_last = None;
                    let java_run = java
                        .publish(&url, to, messages, || {
                            at_last =
                                start.and_then(|(b, start)| Some(b.cpu()?.saturating_sub(start)));
                        })
                        .unwrap_or_else(|e| panic!("the Java client publishes: {e}"));
                    Run {
                        cpu: java_run.cpu,
                        wall: java_run.wall,
                        broker: at_last,
                    }
                }
                _ => unreachable!(),
            };
            if round == "warm-up" {
                print_run("warm-up publish", contender, 0, messages, run);
            } else {
                print_run("run publish", contender, index as u64 - 1, messages, run);
                publish_runs.push((contender, run));
            }
        }
    }
    for contender in contenders.iter().copied() {
        let of = |figure: &dyn Fn(&Run) -> f64| -> f64 {
            median(
                publish_runs
                    .iter()
                    .filter(|(c, _)| *c == contender)
                    .map(|(_, r)| figure(r))
                    .collect(),
            )
        };
        println!(
            "summary publish {contender}: median {:.0} messages/s, CPU {:.2} us/message, broker \
             CPU {:.2} us/message",
            of(&|r| messages as f64 / r.wall.as_secs_f64()),
            of(&|r| per_message(r.cpu, messages)),
            of(&|r| r.broker.map_or(f64::NAN, |b| per_message(b, messages))),
        );
    }
    let mut latency: Vec<(&str, Vec<u64>)> = Vec::new();
    for round in 0..rounds.max(1) {
        let mut order = contenders.to_vec();
        order.rotate_left(round as usize % contenders.len().max(1));
        for contender in order {
            let to: &'static str = Box::leak(
                format!(
                    "persistent://public/default/bench-latency-{}",
                    name(contender, &round.to_string())
                )
                .into_boxed_str(),
            );
            let taken = match contender {
                "ruststream" => ruststream_latency(&running, tokio.handle(), to, rate, seconds),
                "java" => {
                    let Some(java) = java.as_mut() else { continue };
                    java.send_latency(&url, to, rate, seconds)
                        .unwrap_or_else(|e| panic!("the Java client's latency: {e}"))
                }
                _ => unreachable!(),
            };
            let (p50, p99, max) = percentiles(taken.clone());
            println!(
                "run latency contender={contender} round={round} rate={rate} messages={} \
                 p50_us={p50:.0} p99_us={p99:.0} max_us={max:.0}",
                taken.len()
            );
            latency.push((contender, taken));
        }
    }
    for contender in contenders.iter().copied() {
        let all: Vec<u64> = latency
            .iter()
            .filter(|(c, _)| *c == contender)
            .flat_map(|(_, taken)| taken.iter().copied())
            .collect();
        if all.is_empty() {
            continue;
        }
        let (p50, p99, max) = percentiles(all);
        println!(
            "summary latency {contender}: send to receipt at {rate} messages/s, p50 {p50:.0} us, \
             p99 {p99:.0} us, max {max:.0} us"
        );
    }
    tokio.block_on(running.stop());
    if let Some(java) = java {
        java.stop();
    }

    // A file published from the command line: `run --publish` against the Python client.
    if std::env::var("BENCH_SKIP_FILE").is_err() {
        publish_file_rounds(&url, messages, rounds, run_id);
    }
}

/// `ack_service run --publish TOPIC=FILE` (the runner's pipelined publish) and the Python
/// client's batched `send_async` of the same file, `rounds` rounds after a warm-up, in turn:
/// each prints the seconds from its first line read to its last receipt.
fn publish_file_rounds(url: &str, messages: u64, rounds: u64, run_id: u32) {
    let file = std::env::temp_dir().join(format!("ruststream-bench-file-{run_id}.jsonl"));
    {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file).expect("a temp file"));
        for n in 0..messages {
            out.write_all(&json_of_size(n, 128)).expect("written");
            out.write_all(b"\n").expect("written");
        }
    }
    let bin = std::env::current_exe().expect("this binary's path");
    let service = bin.with_file_name("ack_service");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/publish_file.py");
    let mut taken: Vec<(&str, f64)> = Vec::new();
    for round in 0..=rounds {
        let mut order = ["ruststream", "python"];
        order.rotate_left(round as usize % 2);
        for contender in order {
            let topic = format!("bench-file-{contender}-{round}-{run_id}");
            let seconds = match contender {
                "ruststream" => run_publish(&service, url, &topic, &file),
                _ => python_publish(&script, url, &topic, &file),
            };
            let seconds = match seconds {
                Ok(seconds) => seconds,
                Err(why) => {
                    println!("failed file contender={contender} round={round} reason={why:?}");
                    continue;
                }
            };
            let kind = if round == 0 { "warm-up" } else { "run" };
            println!(
                "{kind} file contender={contender} round={round} messages={messages} \
                 seconds={seconds:.3} messages_per_second={:.0}",
                messages as f64 / seconds
            );
            if round > 0 {
                taken.push((contender, seconds));
            }
        }
    }
    let of = |contender: &str| {
        median(
            taken
                .iter()
                .filter(|(c, _)| *c == contender)
                .map(|(_, s)| *s)
                .collect(),
        )
    };
    let (ours, python) = (of("ruststream"), of("python"));
    println!(
        "summary file: run --publish of {messages} lines median {ours:.3} s, the Python client \
         (batching on) {python:.3} s: {:.2}x its time",
        ours / python
    );
    let _ = std::fs::remove_file(&file);
}

/// `service run --publish TOPIC=FILE` on the broker at `url`: the seconds its log says the file
/// took; then SIGTERM.
fn run_publish(
    service: &std::path::Path,
    url: &str,
    topic: &str,
    file: &std::path::Path,
) -> Result<f64, String> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(service)
        .arg("run")
        .arg("--publish")
        .arg(format!("{topic}={}", file.display()))
        .env("RUSTSTREAM_PULSAR_URL", url)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", service.display()))?;
    let stderr = child.stderr.take().expect("piped");
    let mut seconds = None;
    for line in std::io::BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
    {
        if line.contains("published") {
            if let Some(at) = line.find("seconds=") {
                let value: String = line[at + 8..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                seconds = value.parse::<f64>().ok();
                break;
            }
        }
        if line.contains("ERROR") {
            eprintln!("{line}");
        }
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    seconds.ok_or_else(|| "the service printed no `published ... seconds=` line".to_owned())
}

/// The Python client's batched publish of `file`: the seconds it printed.
fn python_publish(
    script: &std::path::Path,
    url: &str,
    topic: &str,
    file: &std::path::Path,
) -> Result<f64, String> {
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(url)
        .arg(topic)
        .arg(file)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("seconds=")?.parse().ok())
        .ok_or_else(|| format!("publish_file.py printed {text:?}"))
}
