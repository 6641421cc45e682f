//! On a real broker: CPU per message and throughput of a raw pulsar-rs consume+ack loop (on
//! tokio, and on async-std), of the framework on tokio, smol and async-std, of the Java client
//! (a receive loop and a `MessageListener`, in one warm JVM) and of magnetar (a receive loop with
//! awaited acknowledgements, and with grouped ones), all draining the same backlog, interleaved
//! and repeated. Every consumer asks the broker for 1,000 permits (pulsar-rs's default
//! `batch_size`; the receiver queue of the Java and magnetar consumers); the receiver queue
//! (the channel from pulsar-rs's consumer engine to the app) is 1,000 for the raw loop and for
//! `tokio-queue-1000`, and the concurrency (32) for the framework's defaults. Each run also
//! reads the broker's CPU time (its JVM's, from `/proc`) over the same span. Then one counting
//! round per contender, not timed, through a proxy that counts the commands the broker gets
//! (acknowledgements, permits, redeliveries). Then a handler that awaits 1 ms, at the default
//! concurrency and at 64, against a sequential raw loop doing the same.
//!
//! `live <messages> <repeats> <slow-messages>`. Starts Apache Pulsar standalone on 127.0.0.1
//! unless `RUSTSTREAM_BENCH_URL` names a broker (whose CPU is then unknown; the Java
//! contenders then need `RUSTSTREAM_BENCH_JAVA_CLASSPATH`, a classpath holding the Java client).
//! Prints one `key=value` line per run and a summary; logging is at its default level
//! (`info`), as a service runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use futures::task::AtomicWaker;
use futures::StreamExt;
use pulsar::consumer::ConsumerOptions;
use pulsar::{AsyncStdExecutor, Consumer, Executor, Pulsar, SubType, TokioExecutor};
use ruststream::app::{App, RunningApp, StartContext};
use ruststream::runtime::Runtime;
use ruststream_bench::backlog::publish_backlog;
use ruststream_bench::broker_process::BrokerProcess;
use ruststream_bench::count_proxy::{Commands, CountProxy};
use ruststream_bench::java_consumer::{JavaConsumer, JavaMode};
use ruststream_bench::order::Order;
use ruststream_pulsar::prelude::*;

/// How many messages the handlers acknowledged, and who waits for the last of them.
///
/// The handler that acknowledges the `expected`th message wakes the waiting run: like the raw
/// loop, which stops at its last message, the run is not woken by a timer while it drains
/// (polling every 2 ms cost each framework run about 500 wake-ups a second).
#[derive(Debug)]
struct Count {
    handled: AtomicU64,
    expected: u64,
    done: AtomicWaker,
}

impl Count {
    fn new(expected: u64) -> Self {
        Count {
            handled: AtomicU64::new(0),
            expected,
            done: AtomicWaker::new(),
        }
    }

    fn one_more(&self) {
        if self.handled.fetch_add(1, Ordering::AcqRel) + 1 == self.expected {
            self.done.wake();
        }
    }

    /// Completes once `expected` messages were acknowledged.
    async fn all_handled(&self) {
        std::future::poll_fn(|cx| {
            self.done.register(cx.waker());
            if self.handled.load(Ordering::Acquire) >= self.expected {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await
    }
}

/// Decodes each order, acknowledges it.
#[subscriber("bench-live")]
async fn ack(order: &Order, State(count): State<Arc<Count>>) -> HandlerOutcome {
    std::hint::black_box(order);
    count.one_more();
    HandlerOutcome::ack()
}

/// Waits 1 ms (an I/O call), then acknowledges.
#[subscriber("bench-slow")]
async fn slow(payload: &[u8], State(count): State<Arc<Count>>) -> HandlerOutcome {
    std::hint::black_box(payload);
    tokio::time::sleep(Duration::from_millis(1)).await;
    count.one_more();
    HandlerOutcome::ack()
}

/// One contender's run.
#[derive(Debug, Clone, Copy)]
struct Run {
    cpu: Duration,
    wall: Duration,
    /// The broker's CPU time over the same span; `None` when its process is not known.
    broker: Option<Duration>,
}

/// The start of a measured span: this process's CPU time, the wall clock, and the broker's
/// CPU time, read together so that all three cover the same span.
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

fn app(
    url: &str,
    topic: &'static str,
    subscription: &str,
    count: Arc<Count>,
    concurrency: Option<usize>,
    receiver_queue: Option<usize>,
) -> impl App<State = Arc<Count>> {
    let broker = PulsarBroker::new(url).default_subscription(subscription);
    RustStream::new(AppInfo::new("bench-live", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(count))
        .with_broker(broker, move |b| {
            let mounted = if topic == "bench-slow" {
                b.include(slow)
            } else {
                b.include(ack)
            };
            let mounted = match concurrency {
                Some(limit) => mounted.concurrency(limit),
                None => mounted,
            };
            if let Some(messages) = receiver_queue {
                mounted.receiver_queue(messages);
            }
        })
}

/// Start `app` on `runtime`, wait until `count` says every message was acknowledged, stop.
/// Timed from the app started (connected and subscribed), as every contender is timed from
/// its consumer subscribed.
async fn drain(
    app: impl App<State = Arc<Count>>,
    count: Arc<Count>,
    runtime: Arc<dyn Runtime>,
    broker: Option<&BrokerProcess>,
) -> Run {
    let running: RunningApp = app
        .into_parts()
        .start(StartContext::new(runtime), None)
        .await
        .unwrap_or_else(|e| panic!("the framework connects: {e}"));
    let span = Span::start(broker);
    count.all_handled().await;
    let run = span.end();
    running.stop().await;
    run
}

async fn raw_consumer<Exe: Executor>(
    pulsar: &Pulsar<Exe>,
    topic: &str,
    subscription: &str,
    queue: Option<u32>,
) -> Consumer<Vec<u8>, Exe> {
    let mut options = ConsumerOptions::default();
    if let Some(queue) = queue {
        options = options.with_receiver_queue_size(queue);
    }
    pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(subscription)
        .with_subscription_type(SubType::Shared)
        .with_options(options)
        .build()
        .await
        .expect("a raw consumer")
}

/// The raw loop: receive, decode the order, (optionally wait 1 ms, on tokio), acknowledge,
/// one message at a time. Timed from the consumer subscribed.
async fn raw_drain<Exe: Executor>(
    pulsar: &Pulsar<Exe>,
    topic: &str,
    subscription: &str,
    expected: u64,
    pause: Option<Duration>,
    broker: Option<&BrokerProcess>,
) -> Run {
    let mut consumer = raw_consumer(pulsar, topic, subscription, None).await;
    let span = Span::start(broker);
    let mut done = 0;
    while done < expected {
        let message = consumer
            .next()
            .await
            .expect("the consumer is open")
            .expect("a message");
        let order: Order = serde_json::from_slice(&message.payload.data).expect("an order");
        std::hint::black_box(order);
        if let Some(pause) = pause {
            tokio::time::sleep(pause).await;
        }
        consumer.ack(&message).await.expect("acknowledged");
        done += 1;
    }
    let run = span.end();
    let _ = consumer.close().await;
    run
}

/// How a magnetar loop acknowledges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MagnetarAck {
    /// `consumer.ack(id).await`, as magnetar's own example: each waits for the broker's
    /// `CommandAckResponse`.
    Awaited,
    /// `consumer.ack_grouped(id)` with `ack_group_time(100 ms)`, the Java client's default
    /// grouping: one `CommandAck` per 100 ms.
    Grouped,
}

/// The magnetar loop (on tokio): receive, read the payload, acknowledge, one message at a
/// time, with a receiver queue of 1,000 as the raw loop's.
///
/// Each run has a client of its own, connected before the measured span as the raw loop's is.
/// One client kept for every round got slower with each round, with either way of
/// acknowledging (five rounds of 100,000 messages: awaited 25.8, 56.4, 144, 249 and 392 s;
/// grouped 0.70, 0.95, 1.09, 1.57 and 1.75 s; a fresh client in the next round took 29 s
/// awaited again): magnetar 1.7.4's client holds state that grows with what it consumed. A
/// fresh client per run measures what a consumer costs, not that growth.
async fn magnetar_drain(
    url: &str,
    topic: &str,
    subscription: &str,
    expected: u64,
    acks: MagnetarAck,
    broker: Option<&BrokerProcess>,
) -> Result<Run, String> {
    // magnetar's tokio engine runs its connection on the runtime it is built in.
    let client = magnetar::PulsarClient::builder()
        .service_url(url)
        .build()
        .await
        .unwrap_or_else(|e| panic!("a magnetar client connects to {url}: {e}"));
    let mut builder = client
        .consumer(topic)
        .subscription(subscription)
        .subscription_type(magnetar::proto::pb::command_subscribe::SubType::Shared)
        .receiver_queue_size(1000);
    if acks == MagnetarAck::Grouped {
        builder = builder.ack_group_time(Duration::from_millis(100));
    }
    let consumer = builder.subscribe().await.expect("a magnetar consumer");
    let span = Span::start(broker);
    for received in 0..expected {
        // A run that breaks off is reported, not fatal: one contender's failure (magnetar's
        // consumer was once closed under it in a fifth round) leaves the others' figures.
        let message = consumer.receive().await.map_err(|e| {
            format!("magnetar's consumer failed after {received} of {expected} messages: {e}")
        })?;
        let order: Order = serde_json::from_slice(&message.payload).expect("an order");
        std::hint::black_box(order);
        match acks {
            MagnetarAck::Awaited => consumer
                .ack(message.message_id)
                .await
                .expect("acknowledged by magnetar"),
            MagnetarAck::Grouped => consumer.ack_grouped(message.message_id),
        }
    }
    let run = span.end();
    let _ = consumer.close().await;
    client.close().await;
    Ok(run)
}

/// A Java run; `broker` is read from before the command to the moment the program says the
/// last message is acknowledged.
fn java_drain(
    java: &mut JavaConsumer,
    mode: JavaMode,
    url: &str,
    subscription: &str,
    messages: u64,
    broker: Option<&BrokerProcess>,
) -> Run {
    let start = broker.and_then(|b| Some((b, b.cpu()?)));
    let mut at_last_ack = None;
    let java_run = java
        .run(mode, url, subscription, messages, || {
            at_last_ack = start.and_then(|(b, start)| Some(b.cpu()?.saturating_sub(start)));
        })
        .unwrap_or_else(|e| panic!("the Java client drains {subscription}: {e}"));
    Run {
        cpu: java_run.cpu,
        wall: java_run.wall,
        broker: at_last_ack,
    }
}

/// The clients of one service URL: the broker's own, or the counting proxy's.
struct Clients {
    url: String,
    pulsar: Pulsar<TokioExecutor>,
    pulsar_async_std: Pulsar<AsyncStdExecutor>,
}

impl Clients {
    fn connect(url: &str, tokio: &tokio::runtime::Runtime) -> Self {
        let pulsar = tokio
            .block_on(Pulsar::builder(url.to_owned(), TokioExecutor).build())
            .expect("a raw client connects");
        // The raw loop on pulsar-rs's async-std transport and async-std's executor: what the
        // runtime costs pulsar-rs itself, apart from the framework.
        let pulsar_async_std =
            async_std::task::block_on(Pulsar::builder(url.to_owned(), AsyncStdExecutor).build())
                .expect("a raw client connects on async-std");
        Clients {
            url: url.to_owned(),
            pulsar,
            pulsar_async_std,
        }
    }

    fn close(self) {
        drop(self.pulsar);
        drop(self.pulsar_async_std);
    }
}

/// What a run needs besides its contender and subscription.
struct Bench<'a> {
    tokio: &'a tokio::runtime::Runtime,
    java: Option<JavaConsumer>,
    broker: Option<&'a BrokerProcess>,
    topic: &'a str,
    messages: u64,
}

impl Bench<'_> {
    /// One run of `contender` on `subscription`, with the clients of `clients`; an error
    /// says why the run broke off.
    fn run(
        &mut self,
        contender: &str,
        clients: &Clients,
        subscription: &str,
    ) -> Result<Run, String> {
        let (tokio, broker, topic, messages) = (self.tokio, self.broker, self.topic, self.messages);
        let count = Arc::new(Count::new(messages));
        // `tokio-queue-1000`: the receiver queue of the raw loop (pulsar-rs's default).
        let queue = (contender == "tokio-queue-1000").then_some(1000);
        let framework = || {
            app(
                &clients.url,
                "bench-live",
                subscription,
                count.clone(),
                None,
                queue,
            )
        };
        Ok(match contender {
            "raw" => tokio.block_on(raw_drain(
                &clients.pulsar,
                topic,
                subscription,
                messages,
                None,
                broker,
            )),
            "raw-async-std" => async_std::task::block_on(raw_drain(
                &clients.pulsar_async_std,
                topic,
                subscription,
                messages,
                None,
                broker,
            )),
            "tokio" | "tokio-queue-1000" => tokio.block_on(drain(
                framework(),
                count.clone(),
                Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone())),
                broker,
            )),
            "smol" => smol::block_on(drain(
                framework(),
                count.clone(),
                Arc::new(ruststream_smol::SmolRuntime::global()),
                broker,
            )),
            "async-std" => async_std::task::block_on(drain(
                framework(),
                count.clone(),
                Arc::new(ruststream_async_std::AsyncStdRuntime::new()),
                broker,
            )),
            "java-receive" | "java-listener" => {
                let mode = if contender == "java-receive" {
                    JavaMode::Receive
                } else {
                    JavaMode::Listener
                };
                let java = self.java.as_mut().expect("the JVM runs");
                java_drain(java, mode, &clients.url, subscription, messages, broker)
            }
            "magnetar" | "magnetar-grouped" => {
                let acks = if contender == "magnetar" {
                    MagnetarAck::Awaited
                } else {
                    MagnetarAck::Grouped
                };
                return tokio.block_on(magnetar_drain(
                    &clients.url,
                    topic,
                    subscription,
                    messages,
                    acks,
                    broker,
                ));
            }
            other => panic!("no contender {other}"),
        })
    }
}

fn main() {
    // As the runner's async-std entry point does: async-std's executor on one thread unless
    // ASYNC_STD_THREAD_COUNT names a count. This is also the raw async-std loop's executor.
    ruststream_async_std::start_global_executor();
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let usage = "usage: live <messages> <repeats> <slow-messages>";
    let (messages, repeats, slow_messages) = match (args.next(), args.next(), args.next()) {
        (Some(Some(m)), Some(Some(r)), Some(Some(s))) => (m, r, s),
        _ => panic!("{usage}"),
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();

    let standalone;
    let (url, broker, classpath) = match std::env::var("RUSTSTREAM_BENCH_URL") {
        Ok(url) => {
            println!(
                "broker url={url} broker_cpu=unknown (RUSTSTREAM_BENCH_URL names an outside \
                 broker: its process is not read)"
            );
            let classpath = std::env::var("RUSTSTREAM_BENCH_JAVA_CLASSPATH")
                .map_err(|_| "RUSTSTREAM_BENCH_JAVA_CLASSPATH is not set".to_owned());
            (url, None, classpath)
        }
        Err(_) => {
            // (start.sh lets the bookie write until less than 2 GiB of its disk are free.)
            standalone = ruststream_test_brokers::ApacheStandalone::start()
                .unwrap_or_else(|e| panic!("Apache Pulsar standalone starts: {e}"));
            let url = standalone.url();
            let port = url
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("the standalone's URL ends with its port");
            let broker = BrokerProcess::standalone_on_port(port)
                .unwrap_or_else(|e| panic!("the standalone's process is found: {e}"));
            println!("broker url={url} pid={}", broker.pid());
            let classpath = standalone
                .java_classpath()
                .map_err(|e| format!("no Java classpath: {e}"));
            (url, Some(broker), classpath)
        }
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let direct = Clients::connect(&url, &tokio);

    // The handlers' topics; subscriptions are named for this process, and made before the
    // backlog is written, so each drains exactly that backlog.
    let topic = "persistent://public/default/bench-live";
    let slow_topic = "persistent://public/default/bench-slow";
    let java = classpath.and_then(|classpath| JavaConsumer::start(&classpath, topic));
    let contenders: Vec<&str> = CONTENDERS
        .into_iter()
        .filter(|contender| match (&java, contender.starts_with("java-")) {
            (Err(reason), true) => {
                println!("skipped contender={contender} reason={reason:?}");
                false
            }
            _ => true,
        })
        .collect();
    let run_id = std::process::id();
    let name = |contender: &str, repeat: &str| format!("{contender}-{repeat}-{run_id}");
    // The first run of the JVM, on a subscription of its own, is not counted: it loads and
    // compiles the client's code. One for each mode, so that both paths are warm.
    let warm_ups: Vec<&str> = contenders
        .iter()
        .copied()
        .filter(|c| c.starts_with("java-"))
        .collect();
    // Every subscription exists before the backlog is written, so each drains all of it.
    tokio.block_on(async {
        let mut subscriptions = Vec::new();
        for repeat in 0..repeats {
            for contender in &contenders {
                subscriptions.push(name(contender, &repeat.to_string()));
            }
        }
        for contender in &contenders {
            subscriptions.push(name(contender, "count"));
        }
        for contender in &warm_ups {
            subscriptions.push(name(contender, "warm-up"));
        }
        for subscription in subscriptions {
            drop(raw_consumer(&direct.pulsar, topic, &subscription, Some(1)).await);
        }
        for contender in SLOW {
            drop(raw_consumer(&direct.pulsar, slow_topic, &name(contender, "0"), Some(1)).await);
        }
        publish_backlog(&direct.pulsar, topic, messages).await;
        publish_backlog(&direct.pulsar, slow_topic, slow_messages).await;
    });

    let mut bench = Bench {
        tokio: &tokio,
        java: java.ok(),
        broker: broker.as_ref(),
        topic,
        messages,
    };
    if let Some(java) = &bench.java {
        println!("java pid={}", java.pid());
    }
    for contender in &warm_ups {
        match bench.run(contender, &direct, &name(contender, "warm-up")) {
            Ok(run) => print_run("warm-up", contender, 0, messages, run),
            Err(why) => println!("failed warm-up contender={contender} reason={why:?}"),
        }
    }
    let mut runs: Vec<(&str, Run)> = Vec::new();
    for repeat in 0..repeats {
        // The order turns each round, so that no contender always runs first (or right after
        // the same one).
        let mut order = contenders.clone();
        let turn = repeat as usize % order.len().max(1);
        order.rotate_left(turn);
        for contender in &order {
            match bench.run(contender, &direct, &name(contender, &repeat.to_string())) {
                Ok(run) => {
                    print_run("run", contender, repeat, messages, run);
                    runs.push((contender, run));
                }
                Err(why) => println!(
                    "failed run contender={contender} repeat={repeat} reason={why:?} (left out \
                     of the medians)"
                ),
            }
        }
    }

    // One more round, not timed, through the counting proxy: the commands each contender sends
    // the broker for the same backlog.
    let mut commands: Vec<(&str, Commands)> = Vec::new();
    let upstream = url.trim_start_matches("pulsar://").trim_end_matches('/');
    match CountProxy::start(upstream) {
        Ok(mut proxy) => {
            println!("proxy url={} pid={}", proxy.url(), proxy.pid());
            let counted = Clients::connect(proxy.url(), &tokio);
            for contender in &contenders {
                let before = proxy.counts().expect("the proxy counts");
                let run = match bench.run(contender, &counted, &name(contender, "count")) {
                    Ok(run) => run,
                    Err(why) => {
                        println!("failed count contender={contender} reason={why:?}");
                        continue;
                    }
                };
                // What is still on its way through the proxy (a close's last acknowledgements)
                // arrives within this.
                std::thread::sleep(Duration::from_millis(300));
                let seen = proxy.counts().expect("the proxy counts") - before;
                println!(
                    "count contender={contender} messages={messages} ack_commands={} \
                     acked_ids={} flow_commands={} redeliver_commands={} \
                     lookups_through_proxy={} wall_seconds={:.3}",
                    seen.ack_commands,
                    seen.acked_ids,
                    seen.flow_commands,
                    seen.redeliver_commands,
                    seen.lookups_rewritten,
                    run.wall.as_secs_f64(),
                );
                if seen.ack_commands == 0 {
                    println!(
                        "warning contender={contender}: the proxy saw no acknowledgement; its \
                         connection did not go through the proxy"
                    );
                }
                commands.push((contender, seen));
            }
            if let Some(java) = bench.java.take() {
                java.stop();
            }
            counted.close();
            proxy.stop();
        }
        Err(e) => println!("skipped counting round reason={e:?}"),
    }
    if let Some(java) = bench.java.take() {
        java.stop();
    }
    summarize(&contenders, &runs, &commands, messages, broker.is_some());

    // A handler that awaits 1 ms: what concurrency buys over a sequential loop.
    let mut slow_runs = Vec::new();
    for contender in SLOW {
        let subscription = name(contender, "0");
        let count = Arc::new(Count::new(slow_messages));
        let run = match contender {
            "raw-sequential" => tokio.block_on(raw_drain(
                &direct.pulsar,
                slow_topic,
                &subscription,
                slow_messages,
                Some(Duration::from_millis(1)),
                broker.as_ref(),
            )),
            _ => {
                let limit = (contender == "slow-64").then_some(64);
                tokio.block_on(drain(
                    app(
                        &url,
                        "bench-slow",
                        &subscription,
                        count.clone(),
                        limit,
                        None,
                    ),
                    count.clone(),
                    Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone())),
                    broker.as_ref(),
                ))
            }
        };
        print_run("run", contender, 0, slow_messages, run);
        slow_runs.push((contender, run));
    }
    let sequential = slow_runs[0].1.wall.as_secs_f64();
    for (contender, run) in &slow_runs[1..] {
        println!(
            "summary {contender}: {:.1}x the throughput of the sequential raw loop",
            sequential / run.wall.as_secs_f64()
        );
    }
    direct.close();
}

/// The contenders on the backlog: the raw loop (on tokio, and on async-std's executor), the
/// framework on each runtime at its defaults, and on tokio with the raw loop's receiver queue;
/// the Java client's receive loop and listener; magnetar's loop with awaited and with grouped
/// acknowledgements.
const CONTENDERS: [&str; 10] = [
    "raw",
    "tokio",
    "tokio-queue-1000",
    "smol",
    "async-std",
    "raw-async-std",
    "java-receive",
    "java-listener",
    "magnetar",
    "magnetar-grouped",
];

/// The 1 ms handler's contenders: the raw loop, the framework at its default concurrency (32)
/// and at 64.
const SLOW: [&str; 3] = ["raw-sequential", "slow-default", "slow-64"];

/// Microseconds per message of `time`.
fn per_message(time: Duration, messages: u64) -> f64 {
    time.as_secs_f64() * 1e6 / messages as f64
}

/// One `key=value` line: `kind` is `run`, or `warm-up` for a run that is not counted.
fn print_run(kind: &str, contender: &str, repeat: u64, messages: u64, run: Run) {
    let broker = match run.broker {
        Some(broker) => format!("{:.2}", per_message(broker, messages)),
        None => "unknown".to_owned(),
    };
    println!(
        "{kind} contender={contender} repeat={repeat} messages={messages} \
         cpu_us_per_message={:.2} broker_cpu_us_per_message={broker} wall_seconds={:.3} \
         messages_per_second={:.0}",
        per_message(run.cpu, messages),
        run.wall.as_secs_f64(),
        messages as f64 / run.wall.as_secs_f64()
    );
}

/// The median and the smallest of `values`.
fn median_and_least(mut values: Vec<f64>) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    match values.first() {
        Some(&least) => (values[values.len() / 2], least),
        // Every run of the contender failed (each failure is printed).
        None => (f64::NAN, f64::NAN),
    }
}

/// Each contender's CPU per message over the rounds: the median, and the fastest round, against
/// the raw loop's and the framework on tokio's. On a shared machine other work only adds CPU
/// time (cache misses, migrations), so the fastest round is the least disturbed; compare both.
/// Then the broker's CPU per message (median) and the throughput (median), and the commands
/// of the counting round.
fn summarize(
    contenders: &[&str],
    runs: &[(&str, Run)],
    commands: &[(&str, Commands)],
    messages: u64,
    broker_known: bool,
) {
    let of = |contender: &str, figure: &dyn Fn(&Run) -> f64| -> Vec<f64> {
        runs.iter()
            .filter(|(c, _)| *c == contender)
            .map(|(_, r)| figure(r))
            .collect()
    };
    let cpu =
        |contender: &str| median_and_least(of(contender, &|r: &Run| per_message(r.cpu, messages)));
    let against = |cpu: f64, base: f64| (cpu / base - 1.0) * 100.0;
    let (raw, tokio) = (cpu("raw"), cpu("tokio"));
    for contender in contenders {
        let (m, f) = cpu(contender);
        let broker = if broker_known {
            let (b, least) = median_and_least(of(contender, &|r: &Run| {
                r.broker.map_or(f64::NAN, |b| per_message(b, messages))
            }));
            format!("broker CPU median {b:.2} us/message (least {least:.2})")
        } else {
            "broker CPU unknown (outside broker)".to_owned()
        };
        let (rate, _) = median_and_least(of(contender, &|r: &Run| {
            messages as f64 / r.wall.as_secs_f64()
        }));
        let acks = match commands.iter().find(|(c, _)| c == contender) {
            Some((_, seen)) => format!(
                "{} ack commands ({} ids), {} flow, {} redeliver for {messages} messages",
                seen.ack_commands, seen.acked_ids, seen.flow_commands, seen.redeliver_commands
            ),
            None => "ack commands not counted".to_owned(),
        };
        println!(
            "summary {contender}: median CPU {m:.2} us/message, {:+.1}% against the raw loop, \
             {:+.1}% against the framework on tokio; fastest round {f:.2} us/message, {:+.1}% \
             and {:+.1}%; {broker}; median {rate:.0} messages/s; {acks}",
            against(m, raw.0),
            against(m, tokio.0),
            against(f, raw.1),
            against(f, tokio.1),
        );
    }
}
