//! On a real broker, two figures beside `live`'s CPU per message, each consumer in a process
//! of its own (`bench_worker`, or the Java client's `bench/java/LiveConsumer.java`):
//!
//! - **partitions**: a 4-partition topic with a batched backlog (1,000 messages an entry, the
//!   128-byte JSON messages of `live`, the same share on each partition), drained by 1, 2 and 4
//!   instances of a ruststream service (one process each, the framework's app at its defaults,
//!   a handler that reads, counts and acknowledges, Shared) and of the Java client (one JVM
//!   each, a receive/acknowledge loop, Shared, receiver queue 1,000), interleaved and repeated,
//!   one subscription per configuration and round, all made before the backlog. Per run:
//!   messages/s from the first instance's command to the last acknowledgement, the consumers'
//!   CPU per message summed over the processes, the broker's CPU per message, and how many
//!   cores each used.
//! - **forward**: the forwarding pipeline on the same partitioned backlog (each order decoded,
//!   a shipment keyed by its id published, the order acknowledged once the shipment is
//!   confirmed), by 1 and 2 instances of a ruststream service (a handler that `send`s and
//!   returns `ack`) and of the Java client (`sendAsync`, acknowledging in the callback, a
//!   producer at its defaults); the same figures, counting acknowledged orders.
//! - **latency**: messages published one at a time (not batched) at a fixed rate, each
//!   carrying its send time (`ruststream_bench::stamp`); after a warm-up, the publish→handler
//!   latency of the framework (on tokio, at its defaults), a raw pulsar-rs receive/acknowledge
//!   loop and the Java client's receive loop; then the framework with a handler that returns
//!   `retry_after(d)` on each message's first delivery: how late the redelivery comes after
//!   `d`.
//!
//! `live_load [partitions MESSAGES ROUNDS] [forward MESSAGES ROUNDS] [latency RATE SECONDS
//! WARMUP-SECONDS ROUNDS RETRY-MS]`. Starts Apache Pulsar standalone on 127.0.0.1 unless `RUSTSTREAM_BENCH_URL` names
//! a broker (whose CPU is then unknown; the Java contenders then need
//! `RUSTSTREAM_BENCH_JAVA_CLASSPATH`, and the partitioned topic
//! `persistent://public/default/bench-partitioned` must exist with 4 partitions). Prints one
//! `key=value` line per run and a summary.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use futures::StreamExt;
use pulsar::consumer::ConsumerOptions;
use pulsar::producer::{ProducerOptions, SendFuture};
use pulsar::{Consumer, Pulsar, SubType, TokioExecutor};
use ruststream_bench::backlog::publish_backlog;
use ruststream_bench::broker_process::BrokerProcess;
use ruststream_bench::stamp::{quantile, stamped, unix_ns};
use ruststream_bench::worker_process::{each_says, field, next_line, Line, Worker};

/// The partitioned topic; `bench_worker`'s handler names it.
const PARTITIONED: &str = "persistent://public/default/bench-partitioned";
/// Its partitions.
const PARTITIONS: u32 = 4;
/// The instance counts compared.
const INSTANCES: [usize; 3] = [1, 2, 4];
/// The instance counts of the forwarding pipeline.
const FORWARD_INSTANCES: [usize; 2] = [1, 2];
/// The topic of the latency runs, and of the `retry_after` run (`bench_worker`'s handlers name
/// them).
const LATENCY_TOPIC: &str = "persistent://public/default/bench-latency";
const RETRY_TOPIC: &str = "persistent://public/default/bench-retry";
/// How long a worker may stay silent while it should be consuming.
const SILENCE: Duration = Duration::from_secs(120);

/// The consumer processes and their lines.
struct Workers<'a> {
    rust: &'a mut Vec<Worker>,
    /// Empty when the Java client cannot run here.
    java: &'a mut Vec<Worker>,
    lines: &'a mpsc::Receiver<Line>,
}

/// The broker and what runs beside it.
struct Setup {
    url: String,
    broker: Option<BrokerProcess>,
    standalone: Option<ruststream_test_brokers::ApacheStandalone>,
    classpath: Result<String, String>,
    tokio: tokio::runtime::Runtime,
    pulsar: Pulsar<TokioExecutor>,
}

fn main() {
    let usage = "usage: live_load [partitions MESSAGES ROUNDS] [forward MESSAGES ROUNDS] \
                 [latency RATE SECONDS WARMUP-SECONDS ROUNDS RETRY-MS]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |at: usize| -> u64 {
        args.get(at)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("{usage}"))
    };
    let (mut partitions, mut forward, mut latency) = (None, None, None);
    let mut at = 0;
    while at < args.len() {
        match args[at].as_str() {
            "partitions" => {
                partitions = Some((number(at + 1), number(at + 2)));
                at += 3;
            }
            "forward" => {
                forward = Some((number(at + 1), number(at + 2)));
                at += 3;
            }
            "latency" => {
                latency = Some(LatencyPlan {
                    rate: number(at + 1),
                    seconds: number(at + 2),
                    warmup_seconds: number(at + 3),
                    rounds: number(at + 4),
                    retry: Duration::from_millis(number(at + 5)),
                });
                at += 6;
            }
            _ => panic!("{usage}"),
        }
    }
    if partitions.is_none() && forward.is_none() && latency.is_none() {
        panic!("{usage}");
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let setup = setup();
    // The consumer processes, started once for both parts: 4 of each kind for the partitioned
    // runs, else 1.
    let (sender, lines) = mpsc::channel();
    let count = if partitions.is_some() {
        INSTANCES[2]
    } else if forward.is_some() {
        FORWARD_INSTANCES[1]
    } else {
        1
    };
    let (mut rust, mut java) = workers(&setup, count, &sender, &lines)
        .unwrap_or_else(|e| panic!("the consumer processes start: {e}"));
    let mut workers = Workers {
        rust: &mut rust,
        java: &mut java,
        lines: &lines,
    };
    if let Some((messages, rounds)) = partitions {
        if let Err(e) = partitioned(&setup, &mut workers, messages, rounds) {
            panic!("the partitioned benchmark failed: {e}");
        }
    }
    if let Some((messages, rounds)) = forward {
        if let Err(e) = forwarded(&setup, &mut workers, messages, rounds) {
            panic!("the partitioned forwarding benchmark failed: {e}");
        }
    }
    if let Some(plan) = latency {
        if let Err(e) = latencies(&setup, &mut workers, &plan) {
            panic!("the latency benchmark failed: {e}");
        }
    }
    for worker in rust.into_iter().chain(java) {
        worker.stop();
    }
    drop(setup.standalone);
}

/// Start the standalone (or take `RUSTSTREAM_BENCH_URL`'s broker), as `live` does.
fn setup() -> Setup {
    let (url, broker, standalone, classpath) = match std::env::var("RUSTSTREAM_BENCH_URL") {
        Ok(url) => {
            let broker = BrokerProcess::serving(&url);
            match &broker {
                Some(b) => println!(
                    "broker url={url} pid={} (a standalone of start.sh)",
                    b.pid()
                ),
                None => println!(
                    "broker url={url} broker_cpu=unknown (RUSTSTREAM_BENCH_URL names an \
                     outside broker whose process is not found here)"
                ),
            }
            let classpath = std::env::var("RUSTSTREAM_BENCH_JAVA_CLASSPATH")
                .map_err(|_| "RUSTSTREAM_BENCH_JAVA_CLASSPATH is not set".to_owned());
            (url, broker, None, classpath)
        }
        Err(_) => {
            // As `live`: the bookie's disk threshold raised, for build machines with a large
            // cargo target on the disk.
            let standalone = ruststream_test_brokers::ApacheStandalone::start_with(&[
                "diskUsageThreshold=0.99",
                "diskUsageWarnThreshold=0.98",
            ])
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
            (url, Some(broker), Some(standalone), classpath)
        }
    };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let pulsar = tokio
        .block_on(Pulsar::builder(url.clone(), TokioExecutor).build())
        .expect("a client connects");
    Setup {
        url,
        broker,
        standalone,
        classpath,
        tokio,
        pulsar,
    }
}

/// Start `count` Rust workers and, if the classpath is known, `count` JVMs (indices from
/// `count` on), and wait until all are ready.
fn workers(
    setup: &Setup,
    count: usize,
    lines: &mpsc::Sender<Line>,
    receiver: &mpsc::Receiver<Line>,
) -> Result<(Vec<Worker>, Vec<Worker>), String> {
    let rust = (0..count)
        .map(|i| Worker::rust(i, lines))
        .collect::<Result<Vec<_>, _>>()?;
    let java = match &setup.classpath {
        Ok(classpath) => (0..count)
            .map(|i| Worker::java(count + i, classpath, PARTITIONED, lines))
            .collect::<Result<Vec<_>, _>>()?,
        Err(reason) => {
            println!("skipped contender=java reason={reason:?}");
            Vec::new()
        }
    };
    let all: Vec<usize> = rust.iter().chain(&java).map(Worker::index).collect();
    // Each JVM compiles LiveConsumer.java first: seconds each, all at once on few cores.
    each_says(receiver, &all, "ready", Duration::from_secs(300))?;
    for worker in rust.iter().chain(&java) {
        println!("worker index={} pid={}", worker.index(), worker.pid());
    }
    Ok((rust, java))
}

/// A raw consumer on `topic`'s `subscription` with a receiver queue of 1, dropped at once: the
/// subscription exists from then on.
async fn subscribe(pulsar: &Pulsar<TokioExecutor>, topic: &str, subscription: &str) {
    let consumer: Consumer<Vec<u8>, TokioExecutor> = pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(subscription)
        .with_subscription_type(SubType::Shared)
        .with_options(ConsumerOptions::default().with_receiver_queue_size(1))
        .build()
        .await
        .unwrap_or_else(|e| panic!("subscription {subscription} on {topic}: {e}"));
    drop(consumer);
}

// ---------------------------------------------------------------------------------------------
// partitions

/// The partitioned topic, made here (or checked on an outside broker).
fn ensure_partitioned(setup: &Setup) -> Result<(), String> {
    let found = setup
        .tokio
        .block_on(setup.pulsar.lookup_partitioned_topic_number(PARTITIONED))
        .unwrap_or(0);
    if found == PARTITIONS {
        return Ok(());
    }
    match &setup.standalone {
        Some(standalone) => standalone
            .create_partitioned_topic(PARTITIONED, PARTITIONS)
            .map_err(|e| e.to_string())?,
        None => {
            let found = setup
                .tokio
                .block_on(setup.pulsar.lookup_partitioned_topic_number(PARTITIONED))
                .map_err(|e| format!("cannot look {PARTITIONED} up: {e}"))?;
            if found != PARTITIONS {
                return Err(format!(
                    "{PARTITIONED} has {found} partitions on the outside broker; create it with \
                     {PARTITIONS}"
                ));
            }
        }
    }
    Ok(())
}

/// `messages` batched messages on the partitioned topic, the same share on each partition.
async fn fill_partitions(setup: &Setup, messages: u64) {
    let per_partition = messages / u64::from(PARTITIONS);
    let extra = messages % u64::from(PARTITIONS);
    let partitions: Vec<(String, u64)> = (0..PARTITIONS)
        .map(|p| {
            let count = per_partition + u64::from(u64::from(p) < extra);
            (format!("{PARTITIONED}-partition-{p}"), count)
        })
        .collect();
    join_all(
        partitions
            .iter()
            .map(|(topic, count)| publish_backlog(&setup.pulsar, topic, *count)),
    )
    .await;
}

/// One configuration's run.
#[derive(Debug, Clone)]
struct ShareRun {
    messages: u64,
    /// From the first instance's command to the last acknowledgement.
    wall: Duration,
    /// The instances' CPU time, summed.
    cpu: Duration,
    /// The broker's CPU time from before the first command to when the orchestrator saw the
    /// last count, and that span.
    broker: Option<(Duration, Duration)>,
    per_instance: Vec<u64>,
}

fn partitioned(
    setup: &Setup,
    workers: &mut Workers<'_>,
    messages: u64,
    rounds: u64,
) -> Result<(), String> {
    println!(
        "== partitions: {messages} messages on {PARTITIONS} partitions (batched 1000 an entry), \
         {rounds} rounds, 1, 2 and 4 instances, one process each"
    );
    ensure_partitioned(setup)?;
    let lines = workers.lines;
    let mut contenders: Vec<(&str, &mut Vec<Worker>)> = vec![("framework", &mut *workers.rust)];
    if !workers.java.is_empty() {
        contenders.push(("java", &mut *workers.java));
    }
    let id = std::process::id();
    let name = |contender: &str, instances: usize, round: &str| {
        format!("{contender}-{instances}x-{round}-{id}")
    };
    // Every subscription exists before the backlog is written, so each drains all of it.
    setup.tokio.block_on(async {
        for (contender, _) in &contenders {
            subscribe(&setup.pulsar, PARTITIONED, &name(contender, 4, "warm-up")).await;
            for round in 0..rounds {
                for instances in INSTANCES {
                    let subscription = name(contender, instances, &round.to_string());
                    subscribe(&setup.pulsar, PARTITIONED, &subscription).await;
                }
            }
        }
        fill_partitions(setup, messages).await;
    });
    let broker = setup.broker.as_ref();
    // A first run per contender on all instances, not counted: the JVMs load and compile the
    // client's code.
    for (contender, workers) in contenders.iter_mut() {
        let run = share(
            workers,
            lines,
            &setup.url,
            &name(contender, 4, "warm-up"),
            messages,
            broker,
        )?;
        print_share("warm-up", contender, 4, 0, &run);
    }
    let mut runs: Vec<(&str, usize, ShareRun)> = Vec::new();
    for round in 0..rounds {
        for instances in INSTANCES {
            for (contender, workers) in contenders.iter_mut() {
                let run = share(
                    &mut workers[..instances],
                    lines,
                    &setup.url,
                    &name(contender, instances, &round.to_string()),
                    messages,
                    broker,
                )?;
                print_share("run", contender, instances, round, &run);
                runs.push((contender, instances, run));
            }
        }
    }
    let names: Vec<&str> = contenders.iter().map(|(c, _)| *c).collect();
    summarize_share(&names, &runs);
    Ok(())
}

/// `workers` drain `subscription` of the partitioned topic together, until they acknowledged
/// `messages` between them.
fn share(
    workers: &mut [Worker],
    lines: &mpsc::Receiver<Line>,
    url: &str,
    subscription: &str,
    messages: u64,
    broker: Option<&BrokerProcess>,
) -> Result<ShareRun, String> {
    let command = format!("share {url} {PARTITIONED} {subscription}");
    run_shared(workers, lines, &command, messages, broker)
}

/// `workers` run `command` together, until they counted `messages` between them.
fn run_shared(
    workers: &mut [Worker],
    lines: &mpsc::Receiver<Line>,
    command: &str,
    messages: u64,
    broker: Option<&BrokerProcess>,
) -> Result<ShareRun, String> {
    let indices: Vec<usize> = workers.iter().map(Worker::index).collect();
    let broker_start = broker.and_then(|b| Some((b, b.cpu()?, Instant::now())));
    for worker in workers.iter_mut() {
        worker.send(command)?;
    }
    let mut counts = vec![0u64; workers.len()];
    while counts.iter().sum::<u64>() < messages {
        let (index, line) = next_line(lines, SILENCE)?;
        let slot = indices
            .iter()
            .position(|i| *i == index)
            .ok_or_else(|| format!("worker {index} is not in this run but said {line:?}"))?;
        if line.starts_with("progress ") {
            counts[slot] = field(&line, "messages").ok_or("a progress line without a count")?;
        } else if line != "subscribed" {
            return Err(format!("worker {index} said {line:?} during a run"));
        }
    }
    let broker = broker_start.and_then(|(b, start, at)| Some((b.cpu()? - start, at.elapsed())));
    for worker in workers.iter_mut() {
        worker.send("stop")?;
    }
    let results = each_says(lines, &indices, "result", SILENCE)?;
    let value =
        |line: &String, key: &str| field(line, key).ok_or_else(|| format!("{line:?} has no {key}"));
    let mut run = ShareRun {
        messages: 0,
        wall: Duration::ZERO,
        cpu: Duration::ZERO,
        broker,
        per_instance: Vec::new(),
    };
    let (mut first, mut last) = (u64::MAX, 0);
    for line in &results {
        let handled = value(line, "messages")?;
        run.messages += handled;
        run.per_instance.push(handled);
        run.cpu += Duration::from_nanos(value(line, "cpu_ns")?);
        first = first.min(value(line, "start_unix_ns")?);
        if handled > 0 {
            last = last.max(value(line, "last_unix_ns")?);
        }
    }
    run.wall = Duration::from_nanos(last.saturating_sub(first));
    Ok(run)
}

/// The forwarding pipeline on the partitioned backlog (see the top of this file): 1 and 2
/// instances of each contender, rounds interleaved (the order of the contenders turned each
/// round), a subscription and an output topic per run.
fn forwarded(
    setup: &Setup,
    workers: &mut Workers<'_>,
    messages: u64,
    rounds: u64,
) -> Result<(), String> {
    println!(
        "== forward: {messages} orders on {PARTITIONS} partitions (batched 1000 an entry), \
         {rounds} rounds, 1 and 2 instances, one process each: decode, publish a shipment, \
         acknowledge once it is confirmed"
    );
    ensure_partitioned(setup)?;
    let lines = workers.lines;
    let mut contenders: Vec<(&str, &mut Vec<Worker>)> = vec![("framework", &mut *workers.rust)];
    if !workers.java.is_empty() {
        contenders.push(("java", &mut *workers.java));
    }
    let id = std::process::id();
    let name = |contender: &str, instances: usize, round: &str| {
        format!("forward-{contender}-{instances}x-{round}-{id}")
    };
    setup.tokio.block_on(async {
        for (contender, _) in &contenders {
            subscribe(&setup.pulsar, PARTITIONED, &name(contender, 2, "warm-up")).await;
            for round in 0..rounds {
                for instances in FORWARD_INSTANCES {
                    let subscription = name(contender, instances, &round.to_string());
                    subscribe(&setup.pulsar, PARTITIONED, &subscription).await;
                }
            }
        }
        fill_partitions(setup, messages).await;
    });
    let broker = setup.broker.as_ref();
    let url = &setup.url;
    let command = |subscription: &str| {
        format!(
            "share-forward {url} {PARTITIONED} {subscription} \
             persistent://public/default/shipments-{subscription}"
        )
    };
    for (contender, workers) in contenders.iter_mut() {
        let subscription = name(contender, 2, "warm-up");
        let run = run_shared(
            &mut workers[..2],
            lines,
            &command(&subscription),
            messages,
            broker,
        )?;
        print_forward("warm-up", contender, 2, 0, &run);
    }
    let mut runs: Vec<(&str, usize, ShareRun)> = Vec::new();
    for round in 0..rounds {
        for instances in FORWARD_INSTANCES {
            let count = contenders.len();
            let turn = (round as usize) % count;
            for at in 0..count {
                let (contender, workers) = &mut contenders[(at + turn) % count];
                let subscription = name(contender, instances, &round.to_string());
                let run = run_shared(
                    &mut workers[..instances],
                    lines,
                    &command(&subscription),
                    messages,
                    broker,
                )?;
                print_forward("run", contender, instances, round, &run);
                runs.push((contender, instances, run));
            }
        }
    }
    for (contender, _) in &contenders {
        for instances in FORWARD_INSTANCES {
            let of = |figure: &dyn Fn(&ShareRun) -> f64| -> f64 {
                median(
                    runs.iter()
                        .filter(|(c, i, _)| c == contender && *i == instances)
                        .map(|(_, _, r)| figure(r))
                        .collect(),
                )
            };
            println!(
                "summary forward {contender} x{instances}: median {:.0} messages/s, consumer CPU \
                 {:.2} us/message (summed over {instances} processes), broker CPU {:.2} \
                 us/message",
                of(&|r| r.messages as f64 / r.wall.as_secs_f64()),
                of(&|r| per_message(r.cpu, r.messages)),
                of(&|r| r
                    .broker
                    .map_or(f64::NAN, |(b, _)| per_message(b, r.messages))),
            );
        }
    }
    Ok(())
}

fn print_forward(kind: &str, contender: &str, instances: usize, round: u64, run: &ShareRun) {
    let broker = match run.broker {
        Some((cpu, _)) => format!("{:.2}", per_message(cpu, run.messages)),
        None => "unknown".to_owned(),
    };
    let shares: Vec<String> = run.per_instance.iter().map(u64::to_string).collect();
    println!(
        "{kind} forward contender={contender} instances={instances} round={round} messages={} \
         wall_seconds={:.3} messages_per_second={:.0} consumer_cpu_us_per_message={:.2} \
         broker_cpu_us_per_message={broker} per_instance={}",
        run.messages,
        run.wall.as_secs_f64(),
        run.messages as f64 / run.wall.as_secs_f64(),
        per_message(run.cpu, run.messages),
        shares.join("/")
    );
}

/// Microseconds per message of `time`.
fn per_message(time: Duration, messages: u64) -> f64 {
    time.as_secs_f64() * 1e6 / messages.max(1) as f64
}

fn print_share(kind: &str, contender: &str, instances: usize, round: u64, run: &ShareRun) {
    let (broker, broker_cores) = match run.broker {
        Some((cpu, span)) => (
            format!("{:.2}", per_message(cpu, run.messages)),
            format!("{:.2}", cpu.as_secs_f64() / span.as_secs_f64()),
        ),
        None => ("unknown".to_owned(), "unknown".to_owned()),
    };
    let shares: Vec<String> = run.per_instance.iter().map(u64::to_string).collect();
    println!(
        "{kind} partitions contender={contender} instances={instances} round={round} \
         messages={} wall_seconds={:.3} messages_per_second={:.0} \
         consumer_cpu_us_per_message={:.2} broker_cpu_us_per_message={broker} \
         consumer_cores={:.2} broker_cores={broker_cores} per_instance={}",
        run.messages,
        run.wall.as_secs_f64(),
        run.messages as f64 / run.wall.as_secs_f64(),
        per_message(run.cpu, run.messages),
        run.cpu.as_secs_f64() / run.wall.as_secs_f64(),
        shares.join("/")
    );
}

/// The median of `values` (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn summarize_share(contenders: &[&str], runs: &[(&str, usize, ShareRun)]) {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    for contender in contenders {
        let mut rates = Vec::new();
        for instances in INSTANCES {
            let of = |figure: &dyn Fn(&ShareRun) -> f64| -> f64 {
                median(
                    runs.iter()
                        .filter(|(c, i, _)| c == contender && *i == instances)
                        .map(|(_, _, r)| figure(r))
                        .collect(),
                )
            };
            let rate = of(&|r| r.messages as f64 / r.wall.as_secs_f64());
            rates.push(rate);
            let cpu = of(&|r| per_message(r.cpu, r.messages));
            let consumer_cores = of(&|r| r.cpu.as_secs_f64() / r.wall.as_secs_f64());
            let broker = of(&|r| {
                r.broker
                    .map_or(f64::NAN, |(b, _)| per_message(b, r.messages))
            });
            let broker_cores = of(&|r| {
                r.broker
                    .map_or(f64::NAN, |(b, span)| b.as_secs_f64() / span.as_secs_f64())
            });
            println!(
                "summary partitions {contender} x{instances}: median {rate:.0} messages/s, \
                 consumer CPU {cpu:.2} us/message (summed over {instances} processes, \
                 {consumer_cores:.2} cores), broker CPU {broker:.2} us/message \
                 ({broker_cores:.2} cores); consumers and broker together {:.2} of the {cores} \
                 cores of this machine",
                consumer_cores + broker_cores
            );
        }
        println!(
            "summary partitions {contender}: 4 instances give {:.2}x the throughput of one, \
             2 instances {:.2}x",
            rates[2] / rates[0],
            rates[1] / rates[0]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// latency

/// What the latency benchmark runs.
#[derive(Debug, Clone, Copy)]
struct LatencyPlan {
    /// Messages a second.
    rate: u64,
    /// Seconds measured, after the warm-up.
    seconds: u64,
    warmup_seconds: u64,
    rounds: u64,
    /// The `retry_after` wait of the timer run.
    retry: Duration,
}

/// The quantiles of one run, in microseconds.
#[derive(Debug, Clone, Copy)]
struct Quantiles {
    p50: f64,
    p99: f64,
    max: f64,
    min: f64,
}

impl Quantiles {
    fn of_ns(mut values: Vec<i64>) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        values.sort_unstable();
        let us = |ns: i64| ns as f64 / 1e3;
        Some(Quantiles {
            p50: us(quantile(&values, 0.5)),
            p99: us(quantile(&values, 0.99)),
            max: us(values[values.len() - 1]),
            min: us(values[0]),
        })
    }
}

fn latencies(setup: &Setup, workers: &mut Workers<'_>, plan: &LatencyPlan) -> Result<(), String> {
    let retry = format!("retry-{}", plan.retry.as_millis());
    println!(
        "== latency: {} messages/s, published one at a time (not batched), {} s measured after \
         {} s of warm-up, {} rounds; then {retry}: retry_after({} ms) once per message",
        plan.rate,
        plan.seconds,
        plan.warmup_seconds,
        plan.rounds,
        plan.retry.as_millis()
    );
    let lines = workers.lines;
    let mut contenders = vec!["framework", "raw"];
    if !workers.java.is_empty() {
        contenders.push("java");
    }
    contenders.push(&retry);
    let dir = tempfile_dir()?;
    let mut results: Vec<(&str, Quantiles)> = Vec::new();
    let mut receipts: Vec<Option<Quantiles>> = Vec::new();
    for round in 0..plan.rounds {
        for contender in &contenders {
            let (worker, mode, topic) = match *contender {
                "java" => (&mut workers.java[0], "receive", LATENCY_TOPIC),
                "framework" | "raw" => (&mut workers.rust[0], *contender, LATENCY_TOPIC),
                _ => (&mut workers.rust[0], *contender, RETRY_TOPIC),
            };
            let subscription = format!("latency-{contender}-{round}-{}", std::process::id());
            let file = dir.join(format!("{contender}-{round}.txt"));
            let run = latency_run(
                setup,
                worker,
                lines,
                plan,
                mode,
                topic,
                &subscription,
                &file,
            )?;
            let values = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?
                .lines()
                .map(|l| l.parse::<i64>().map_err(|e| format!("{l:?}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            let _ = std::fs::remove_file(&file);
            let what = if contender.starts_with("retry-") {
                "lateness"
            } else {
                "latency"
            };
            let recorded = values.len();
            let Some(q) = Quantiles::of_ns(values) else {
                return Err(format!("{contender} recorded nothing"));
            };
            println!(
                "run latency contender={contender} round={round} figure={what} \
                 published={} recorded={recorded} p50_us={:.0} p99_us={:.0} max_us={:.0} \
                 min_us={:.0} consumer_cpu_us_per_message={:.2} publish_rate={:.0} \
                 publish_lag_p99_us={:.0} receipt_p50_us={:.0} receipt_p99_us={:.0}",
                run.published,
                q.p50,
                q.p99,
                q.max,
                q.min,
                run.cpu_per_message,
                run.rate,
                run.lag_p99_us,
                run.stored.map_or(f64::NAN, |s| s.p50),
                run.stored.map_or(f64::NAN, |s| s.p99),
            );
            receipts.push(run.stored);
            results.push((contender, q));
        }
        // A subscription left behind would hold the backlog of every later run.
        setup.tokio.block_on(async {
            for contender in &contenders {
                let topic = if contender.starts_with("retry-") {
                    RETRY_TOPIC
                } else {
                    LATENCY_TOPIC
                };
                let subscription = format!("latency-{contender}-{round}-{}", std::process::id());
                unsubscribe(&setup.pulsar, topic, &subscription).await;
            }
        });
    }
    let _ = std::fs::remove_dir(&dir);
    let of = |contender: &str, figure: fn(&Quantiles) -> f64| {
        median(
            results
                .iter()
                .filter(|(c, _)| *c == contender)
                .map(|(_, q)| figure(q))
                .collect(),
        )
    };
    for contender in &contenders {
        let what = if contender.starts_with("retry-") {
            "lateness of the redelivery after the wait"
        } else {
            "publish->handler latency"
        };
        println!(
            "summary latency {contender}: {what}, medians over {} rounds: p50 {:.0} us, p99 \
             {:.0} us, max {:.0} us",
            plan.rounds,
            of(contender, |q| q.p50),
            of(contender, |q| q.p99),
            of(contender, |q| q.max)
        );
    }
    let receipt =
        |figure: fn(&Quantiles) -> f64| median(receipts.iter().flatten().map(figure).collect());
    println!(
        "summary latency: publish->broker receipt (the message stored), medians over every \
         run: p50 {:.0} us, p99 {:.0} us",
        receipt(|q| q.p50),
        receipt(|q| q.p99)
    );
    let (framework, raw) = (of("framework", |q| q.p99), of("raw", |q| q.p99));
    println!(
        "summary latency: the framework's p99 is {:+.1}% against the raw pulsar-rs loop's \
         ({framework:.0} against {raw:.0} us)",
        (framework / raw - 1.0) * 100.0
    );
    Ok(())
}

/// A folder for the workers' files.
fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("ruststream-live-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Subscribe as `subscription` and unsubscribe, removing it.
async fn unsubscribe(pulsar: &Pulsar<TokioExecutor>, topic: &str, subscription: &str) {
    let mut consumer: Consumer<Vec<u8>, TokioExecutor> = pulsar
        .consumer()
        .with_topic(topic)
        .with_subscription(subscription)
        .with_subscription_type(SubType::Shared)
        .with_options(ConsumerOptions::default().with_receiver_queue_size(1))
        .build()
        .await
        .unwrap_or_else(|e| panic!("subscription {subscription} on {topic}: {e}"));
    if let Err(e) = consumer.unsubscribe().await {
        println!("note: cannot remove subscription {subscription}: {e}");
    }
}

/// What the publisher of one latency run saw, and the consumer's CPU.
struct LatencyRun {
    published: u64,
    /// Messages a second achieved.
    rate: f64,
    /// How late the publisher sent, against its schedule (p99).
    lag_p99_us: f64,
    /// From the send to the broker's receipt, after the warm-up.
    stored: Option<Quantiles>,
    cpu_per_message: f64,
}

#[allow(clippy::too_many_arguments)]
fn latency_run(
    setup: &Setup,
    worker: &mut Worker,
    lines: &mpsc::Receiver<Line>,
    plan: &LatencyPlan,
    mode: &str,
    topic: &str,
    subscription: &str,
    file: &std::path::Path,
) -> Result<LatencyRun, String> {
    let warmup = plan.rate * plan.warmup_seconds;
    let total = warmup + plan.rate * plan.seconds;
    worker.send(&format!(
        "latency {mode} {} {topic} {subscription} {warmup} {}",
        setup.url,
        file.display()
    ))?;
    each_says(lines, &[worker.index()], "subscribed", SILENCE)?;
    let (elapsed, mut lags, mut stored) =
        setup
            .tokio
            .block_on(publish_at_rate(&setup.pulsar, topic, plan.rate, total));
    let mut handled = 0;
    while handled < total {
        let (index, line) = next_line(lines, SILENCE)?;
        match field(&line, "messages") {
            Some(count) if index == worker.index() && line.starts_with("progress ") => {
                handled = count
            }
            _ => return Err(format!("worker {index} said {line:?} during a run")),
        }
    }
    worker.send("stop")?;
    let result = each_says(lines, &[worker.index()], "result", SILENCE)?.remove(0);
    let cpu = field(&result, "cpu_ns").ok_or("a result without cpu_ns")?;
    lags.sort_unstable();
    // The receipts of the messages measured, not of the warm-up.
    let mut stored = stored.split_off(warmup as usize);
    stored.sort_unstable();
    Ok(LatencyRun {
        published: total,
        rate: total as f64 / elapsed.as_secs_f64(),
        lag_p99_us: quantile(&lags, 0.99) as f64 / 1e3,
        stored: Quantiles::of_ns(stored),
        cpu_per_message: per_message(Duration::from_nanos(cpu), total),
    })
}

/// Publish `total` stamped messages of 128 bytes to `topic`, one at a time, message `n` at
/// `n / rate` s from the start (tokio's timer: up to a millisecond's worth leave together),
/// waiting when pulsar-rs's queue to the connection is full. The time it took, how late each
/// send was against the schedule, and each message's time from its stamp to the broker's
/// receipt (that it stored the message: the broker's share of the latency), in ns.
async fn publish_at_rate(
    pulsar: &Pulsar<TokioExecutor>,
    topic: &str,
    rate: u64,
    total: u64,
) -> (Duration, Vec<i64>, Vec<i64>) {
    let mut producer = pulsar
        .producer()
        .with_topic(topic)
        .with_options(ProducerOptions {
            batch_size: None,
            block_queue_if_full: true,
            ..ProducerOptions::default()
        })
        .build()
        .await
        .unwrap_or_else(|e| panic!("a producer on {topic}: {e}"));
    // The receipts, awaited in order as they come (the broker answers in order).
    let (receipts, mut pending) = futures::channel::mpsc::unbounded::<(u64, SendFuture)>();
    let stored = tokio::spawn(async move {
        let mut took = Vec::with_capacity(total as usize);
        while let Some((sent, receipt)) = pending.next().await {
            receipt.await.expect("stored");
            took.push(unix_ns() as i64 - sent as i64);
        }
        took
    });
    let mut lags = Vec::with_capacity(total as usize);
    let start = tokio::time::Instant::now();
    for seq in 0..total {
        let due = start + Duration::from_nanos(seq * 1_000_000_000 / rate);
        tokio::time::sleep_until(due).await;
        lags.push(due.elapsed().as_nanos() as i64);
        let sent = unix_ns();
        let receipt = producer
            .send_non_blocking(stamped(seq, sent, 128))
            .await
            .expect("queued");
        receipts
            .unbounded_send((sent, receipt))
            .expect("the receipts are awaited");
    }
    let elapsed = start.elapsed();
    drop(receipts);
    let stored = stored.await.expect("the receipts' task");
    producer.close().await.ok();
    (elapsed, lags, stored)
}
