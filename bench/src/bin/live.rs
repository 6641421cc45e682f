//! On a real broker: CPU per message and throughput of a raw pulsar-rs consume+ack loop (on
//! tokio, and on async-std) and of the framework on tokio, smol and async-std, all draining the
//! same backlog, interleaved and repeated. Every consumer asks the broker for pulsar-rs's
//! default 1,000 permits (its `batch_size`); the receiver queue (the channel from pulsar-rs's
//! consumer engine to the app) is 1,000 for the raw loop and for `tokio-queue-1000`, and the
//! concurrency (32) for the framework's defaults. Then a handler that awaits 1 ms, at the
//! default concurrency and at 64, against a sequential raw loop doing the same.
//!
//! `live <messages> <repeats> <slow-messages>`. Starts Apache Pulsar standalone on 127.0.0.1
//! unless `RUSTSTREAM_BENCH_URL` names a broker. Prints one `key=value` line per run and a
//! summary; logging is at its default level (`info`), as a service runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use futures::task::AtomicWaker;
use futures::StreamExt;
use pulsar::consumer::ConsumerOptions;
use pulsar::producer::ProducerOptions;
use pulsar::{AsyncStdExecutor, Consumer, Executor, Pulsar, SubType, TokioExecutor};
use ruststream::app::{App, RunningApp, StartContext};
use ruststream::runtime::Runtime;
use ruststream_bench::order::json_of_size;
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

/// Acknowledges each message.
#[subscriber("bench-live")]
async fn ack(payload: &[u8], State(count): State<Arc<Count>>) -> HandlerOutcome {
    std::hint::black_box(payload);
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
async fn drain(
    app: impl App<State = Arc<Count>>,
    count: Arc<Count>,
    runtime: Arc<dyn Runtime>,
) -> Run {
    let cpu = ProcessTime::now();
    let wall = Instant::now();
    let running: RunningApp = app
        .into_parts()
        .start(StartContext::new(runtime), None)
        .await
        .unwrap_or_else(|e| panic!("the framework connects: {e}"));
    count.all_handled().await;
    let run = Run {
        cpu: cpu.elapsed(),
        wall: wall.elapsed(),
    };
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

/// The raw loop: receive, (optionally wait 1 ms, on tokio), acknowledge, one message at a
/// time.
async fn raw_drain<Exe: Executor>(
    pulsar: &Pulsar<Exe>,
    topic: &str,
    subscription: &str,
    expected: u64,
    pause: Option<Duration>,
) -> Run {
    let cpu = ProcessTime::now();
    let wall = Instant::now();
    let mut consumer = raw_consumer(pulsar, topic, subscription, None).await;
    let mut done = 0;
    while done < expected {
        let message = consumer
            .next()
            .await
            .expect("the consumer is open")
            .expect("a message");
        std::hint::black_box(&message.payload.data);
        if let Some(pause) = pause {
            tokio::time::sleep(pause).await;
        }
        consumer.ack(&message).await.expect("acknowledged");
        done += 1;
    }
    let run = Run {
        cpu: cpu.elapsed(),
        wall: wall.elapsed(),
    };
    let _ = consumer.close().await;
    run
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
    let url = match std::env::var("RUSTSTREAM_BENCH_URL") {
        Ok(url) => url,
        Err(_) => {
            standalone = ruststream_test_brokers::ApacheStandalone::start()
                .unwrap_or_else(|e| panic!("Apache Pulsar standalone starts: {e}"));
            standalone.url()
        }
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let pulsar: Pulsar<TokioExecutor> = tokio
        .block_on(Pulsar::builder(url.clone(), TokioExecutor).build())
        .expect("a raw client connects");
    // The raw loop on pulsar-rs's async-std transport and async-std's executor: what the
    // runtime costs pulsar-rs itself, apart from the framework.
    let pulsar_async_std: Pulsar<AsyncStdExecutor> =
        async_std::task::block_on(Pulsar::builder(url.clone(), AsyncStdExecutor).build())
            .expect("a raw client connects on async-std");

    let contenders = CONTENDERS;
    let run_id = std::process::id();
    // The handlers' topics; subscriptions are named for this process, and made before the
    // backlog is written, so each drains exactly that backlog.
    let topic = "persistent://public/default/bench-live";
    let slow_topic = "persistent://public/default/bench-slow";
    let name = |contender: &str, repeat: u64| format!("{contender}-{repeat}-{run_id}");
    // Every subscription exists before the backlog is written, so each drains all of it.
    tokio.block_on(async {
        for repeat in 0..repeats {
            for contender in contenders {
                let consumer =
                    raw_consumer(&pulsar, topic, &name(contender, repeat), Some(1)).await;
                drop(consumer);
            }
        }
        for contender in SLOW {
            drop(raw_consumer(&pulsar, slow_topic, &name(contender, 0), Some(1)).await);
        }
        publish(&pulsar, topic, messages).await;
        publish(&pulsar, slow_topic, slow_messages).await;
    });

    let mut runs: Vec<(&str, Run)> = Vec::new();
    for repeat in 0..repeats {
        for contender in contenders {
            let subscription = name(contender, repeat);
            let count = Arc::new(Count::new(messages));
            // `tokio-queue-1000`: the receiver queue of the raw loop (pulsar-rs's default).
            let queue = (contender == "tokio-queue-1000").then_some(1000);
            let framework = || {
                app(
                    &url,
                    "bench-live",
                    &subscription,
                    count.clone(),
                    None,
                    queue,
                )
            };
            let run = match contender {
                "raw" => tokio.block_on(raw_drain(&pulsar, topic, &subscription, messages, None)),
                "raw-async-std" => async_std::task::block_on(raw_drain(
                    &pulsar_async_std,
                    topic,
                    &subscription,
                    messages,
                    None,
                )),
                "tokio" | "tokio-queue-1000" => tokio.block_on(drain(
                    framework(),
                    count.clone(),
                    Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone())),
                )),
                "smol" => smol::block_on(drain(
                    framework(),
                    count.clone(),
                    Arc::new(ruststream_smol::SmolRuntime::global()),
                )),
                _ => async_std::task::block_on(drain(
                    framework(),
                    count.clone(),
                    Arc::new(ruststream_async_std::AsyncStdRuntime::new()),
                )),
            };
            print_run(contender, repeat, messages, run);
            runs.push((contender, run));
        }
    }
    summarize(&runs, messages);

    // A handler that awaits 1 ms: what concurrency buys over a sequential loop.
    let mut slow_runs = Vec::new();
    for contender in SLOW {
        let subscription = name(contender, 0);
        let count = Arc::new(Count::new(slow_messages));
        let run = match contender {
            "raw-sequential" => tokio.block_on(raw_drain(
                &pulsar,
                slow_topic,
                &subscription,
                slow_messages,
                Some(Duration::from_millis(1)),
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
                ))
            }
        };
        print_run(contender, 0, slow_messages, run);
        slow_runs.push((contender, run));
    }
    let sequential = slow_runs[0].1.wall.as_secs_f64();
    for (contender, run) in &slow_runs[1..] {
        println!(
            "summary {contender}: {:.1}x the throughput of the sequential raw loop",
            sequential / run.wall.as_secs_f64()
        );
    }
    drop(pulsar);
    drop(pulsar_async_std);
}

/// The contenders on the backlog: the raw loop (on tokio, and on async-std's executor), the
/// framework on each runtime at its defaults, and on tokio with the raw loop's receiver queue.
const CONTENDERS: [&str; 6] = [
    "raw",
    "tokio",
    "tokio-queue-1000",
    "smol",
    "async-std",
    "raw-async-std",
];

/// The 1 ms handler's contenders: the raw loop, the framework at its default concurrency (32)
/// and at 64.
const SLOW: [&str; 3] = ["raw-sequential", "slow-default", "slow-64"];

/// Write `messages` JSON messages of 128 bytes to `topic` as the Java client's defaults do:
/// batched, up to 1000 messages an entry.
async fn publish(pulsar: &Pulsar<TokioExecutor>, topic: &str, messages: u64) {
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
        .expect("a producer");
    let mut receipts = Vec::with_capacity(messages as usize);
    for n in 0..messages {
        receipts.push(
            producer
                .send_non_blocking(json_of_size(n, 128))
                .await
                .expect("queued"),
        );
    }
    producer.send_batch().await.expect("the last batch is sent");
    for receipt in receipts {
        receipt.await.expect("stored");
    }
    producer.close().await.ok();
}

fn print_run(contender: &str, repeat: u64, messages: u64, run: Run) {
    println!(
        "run contender={contender} repeat={repeat} messages={messages} cpu_us_per_message={:.2} \
         wall_seconds={:.3} messages_per_second={:.0}",
        run.cpu.as_secs_f64() * 1e6 / messages as f64,
        run.wall.as_secs_f64(),
        messages as f64 / run.wall.as_secs_f64()
    );
}

/// Each contender's CPU per message over the rounds: the median, and the fastest round, against
/// the raw loop's and the framework on tokio's. On a shared machine other work only adds CPU
/// time (cache misses, migrations), so the fastest round is the least disturbed; compare both.
fn summarize(runs: &[(&str, Run)], messages: u64) {
    // (median, fastest round) of a contender.
    let figures = |contender: &str| -> (f64, f64) {
        let mut cpu: Vec<f64> = runs
            .iter()
            .filter(|(c, _)| *c == contender)
            .map(|(_, r)| r.cpu.as_secs_f64() * 1e6 / messages as f64)
            .collect();
        cpu.sort_by(f64::total_cmp);
        (cpu[cpu.len() / 2], cpu[0])
    };
    let against = |cpu: f64, base: f64| (cpu / base - 1.0) * 100.0;
    let (raw, tokio) = (figures("raw"), figures("tokio"));
    for contender in CONTENDERS {
        let (m, f) = figures(contender);
        println!(
            "summary {contender}: median CPU {m:.2} us/message, {:+.1}% against the raw loop, \
             {:+.1}% against the framework on tokio; fastest round {f:.2} us/message, {:+.1}% \
             and {:+.1}%",
            against(m, raw.0),
            against(m, tokio.0),
            against(f, raw.1),
            against(f, tokio.1),
        );
    }
}
