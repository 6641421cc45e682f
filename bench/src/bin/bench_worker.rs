//! One consumer process of `live_load` (the partitioned-scaling and latency benchmarks): a
//! ruststream service, or a raw pulsar-rs loop, driven by commands on its stdin, one run at a
//! time, on a tokio runtime (multi-threaded, as the runner's default) that lives as long as the
//! process. Its Java counterpart is `bench/java/LiveConsumer.java`, which answers the same
//! commands.
//!
//! stdin, one command a line:
//! - `share URL TOPIC SUBSCRIPTION`: the framework's app at its defaults, one handler on the
//!   partitioned topic `bench-partitioned` (TOPIC must name it), joining SUBSCRIPTION (Shared);
//!   the handler reads the payload, counts it and notes the time, then acknowledges, as
//!   `live`'s framework contender does.
//! - `share-forward URL TOPIC SUBSCRIPTION OUT`: as `share`, but the handler decodes each order
//!   (JSON), `send`s a shipment keyed by the order id to OUT and returns `ack`: the framework
//!   acknowledges the order once the shipment is confirmed. Its count is of the messages
//!   acknowledged (the framework's `ruststream_settlement_calls_total{call="ack"}`, through a
//!   metrics recorder of this process), not of the handler's calls.
//! - `latency MODE URL TOPIC SUBSCRIPTION WARMUP FILE`: MODE `framework` (a handler on
//!   `bench-latency`), `raw` (a pulsar-rs receive/acknowledge loop on TOPIC, as `live`'s raw
//!   contender) or `retry-<ms>` (a handler on `bench-retry` that returns `retry_after(<ms>)` on
//!   a message's first delivery and acknowledges the redelivery). Each message carries its
//!   sequence number and send time (`ruststream_bench::stamp`); from sequence number WARMUP on,
//!   it records the receive time minus the send time (`framework`, `raw`), or how late the
//!   redelivery came: its receive time minus (the first delivery's return + the delay)
//!   (`retry-*`), in nanoseconds, and writes them to FILE, one a line, at `stop`.
//! - `stop`: stop the run (the app, or the loop).
//!
//! stdout: `ready` once; per run `subscribed` once it consumes, `progress messages=N` at most
//! every 50 ms while the count of messages handled (finally: acknowledged) changes, and after
//! `stop`, `result messages=N cpu_ns=C start_unix_ns=S last_unix_ns=L recorded=K`. C is this
//! process's CPU time from the command to the first progress report that saw the final count
//! (at most 50 ms after the last message, idle in between); S is when the command was read, L
//! when the last message was handled. The process exits when stdin closes.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cpu_time::ProcessTime;
use futures::future::Either;
use futures::StreamExt;
use pulsar::{Pulsar, SubType, TokioExecutor};
use ruststream::app::{App, RunningApp, StartContext};
use ruststream::message::Message;
use ruststream::PublishError;
use ruststream_bench::order::Order;
use ruststream_bench::stamp::{read_stamp, unix_ns};
use ruststream_pulsar::prelude::*;

/// What the handlers of one run count and record.
#[derive(Debug, Default)]
struct Tally {
    handled: AtomicU64,
    /// When the last message was handled, in ns since the Unix epoch.
    last_ns: AtomicU64,
    /// Messages below this sequence number are warm-up: not recorded.
    warmup: u64,
    /// The wait a `retry-*` run asks for.
    delay: Duration,
    /// Latencies or lateness, in ns.
    values: Mutex<Vec<i64>>,
    /// `retry-*`: when the handler asked for the wait, by sequence number.
    first: Mutex<HashMap<u64, u64>>,
    /// `share-forward`: where the shipments go, and [`ACKED`] when the run began (its count is
    /// of acknowledgements since).
    to: &'static str,
    acked_from: Option<u64>,
}

impl Tally {
    /// The run's count: the handler's, or the acknowledgements since it began.
    fn count(&self) -> u64 {
        match self.acked_from {
            Some(from) => ACKED.load(Ordering::Acquire) - from,
            None => self.handled.load(Ordering::Acquire),
        }
    }

    /// When the run's last message was handled (or acknowledged).
    fn last(&self) -> u64 {
        match self.acked_from {
            Some(_) => LAST_ACK_NS.load(Ordering::Acquire),
            None => self.last_ns.load(Ordering::Relaxed),
        }
    }
}

impl Tally {
    fn one_more(&self, now: u64) {
        self.last_ns.store(now, Ordering::Relaxed);
        self.handled.fetch_add(1, Ordering::Release);
    }

    /// Record the latency of `payload` (received `now`), then count it.
    fn latency(&self, payload: &[u8], now: u64) {
        if let Some((seq, sent)) = read_stamp(payload) {
            if seq >= self.warmup {
                let took = now as i64 - sent as i64;
                self.values.lock().expect("not poisoned").push(took);
            }
        }
        self.one_more(now);
    }

    /// `Some(delay)` on the first delivery of `payload`; on the redelivery, records how late it
    /// came, counts it, and answers `None`.
    fn retry(&self, payload: &[u8]) -> Option<Duration> {
        let now = unix_ns();
        let Some((seq, _)) = read_stamp(payload) else {
            self.one_more(now);
            return None;
        };
        let asked = self.first.lock().expect("not poisoned").get(&seq).copied();
        match asked {
            None => {
                self.first
                    .lock()
                    .expect("not poisoned")
                    .insert(seq, unix_ns());
                Some(self.delay)
            }
            Some(asked) => {
                if seq >= self.warmup {
                    let due = asked + self.delay.as_nanos() as u64;
                    let late = now as i64 - due as i64;
                    self.values.lock().expect("not poisoned").push(late);
                }
                self.one_more(now);
                None
            }
        }
    }
}

/// Reads the payload, counts it, acknowledges (the partitioned backlog).
#[subscriber("bench-partitioned")]
async fn share(payload: &[u8], State(tally): State<Arc<Tally>>) -> HandlerOutcome {
    std::hint::black_box(payload);
    tally.one_more(unix_ns());
    HandlerOutcome::ack()
}

/// Decodes the order, sends its shipment keyed by the order id, returns `ack` (acknowledged
/// once the shipment is confirmed).
#[subscriber("bench-partitioned")]
async fn forward_share(
    order: &Order,
    publisher: Publisher,
    State(tally): State<Arc<Tally>>,
) -> Result<HandlerOutcome, PublishError> {
    let shipment = Shipment {
        order: order.id,
        customer: order.customer.clone(),
        amount_cents: order.amount_cents,
    };
    publisher
        .publish(Message::json(tally.to, &shipment)?.key(order.id.to_string()))
        .await?;
    Ok(HandlerOutcome::ack())
}

/// What the forwarding handler publishes for each order.
#[derive(serde::Serialize)]
struct Shipment {
    order: u64,
    customer: String,
    amount_cents: u64,
}

/// The messages the framework acknowledged in this process, and when it last did, counted by
/// [`Acks`].
static ACKED: AtomicU64 = AtomicU64::new(0);
static LAST_ACK_NS: AtomicU64 = AtomicU64::new(0);

/// A metrics recorder that counts the framework's acknowledged messages
/// (`ruststream_settlement_calls_total{call="ack",result="ok"}`) and ignores the rest.
struct Acks;

/// The counter [`Acks`] hands out for acknowledgements.
struct AckCounter;

impl metrics::CounterFn for AckCounter {
    fn increment(&self, value: u64) {
        ACKED.fetch_add(value, Ordering::AcqRel);
        LAST_ACK_NS.store(unix_ns(), Ordering::Release);
    }

    fn absolute(&self, _value: u64) {}
}

impl metrics::Recorder for Acks {
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
        let acks = key.name() == ruststream_pulsar::metric::CALLS
            && label("call").as_deref() == Some("ack")
            && label("result").as_deref() == Some("ok");
        if acks {
            metrics::Counter::from_arc(Arc::new(AckCounter))
        } else {
            metrics::Counter::noop()
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

/// Records publish→handler latency, acknowledges.
#[subscriber("bench-latency")]
async fn latency(payload: &[u8], State(tally): State<Arc<Tally>>) -> HandlerOutcome {
    tally.latency(payload, unix_ns());
    HandlerOutcome::ack()
}

/// `retry_after` once per message, then acknowledges the redelivery.
#[subscriber("bench-retry")]
async fn retry(payload: &[u8], State(tally): State<Arc<Tally>>) -> HandlerOutcome {
    match tally.retry(payload) {
        Some(delay) => HandlerOutcome::retry_after(delay),
        None => HandlerOutcome::ack(),
    }
}

/// Which handler an app mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handler {
    Share,
    Forward,
    Latency,
    Retry,
}

impl Handler {
    /// The topic its `#[subscriber]` names.
    fn topic(self) -> &'static str {
        match self {
            Handler::Share | Handler::Forward => "bench-partitioned",
            Handler::Latency => "bench-latency",
            Handler::Retry => "bench-retry",
        }
    }
}

fn app(
    url: &str,
    subscription: &str,
    handler: Handler,
    tally: Arc<Tally>,
) -> impl App<State = Arc<Tally>> {
    let broker = PulsarBroker::new(url).default_subscription(subscription);
    RustStream::new(AppInfo::new("bench-worker", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(tally))
        .with_broker(broker, move |b| match handler {
            Handler::Share => {
                b.include(share);
            }
            Handler::Forward => {
                b.include(forward_share);
            }
            Handler::Latency => {
                b.include(latency);
            }
            Handler::Retry => {
                b.include(retry);
            }
        })
}

/// What consumes during a run.
enum Consuming {
    App(RunningApp),
    Raw {
        stop: futures::channel::oneshot::Sender<()>,
        done: tokio::task::JoinHandle<()>,
    },
}

/// A run in progress.
struct Active {
    consuming: Consuming,
    tally: Arc<Tally>,
    start_ns: u64,
    file: Option<String>,
    reporting: Arc<AtomicBool>,
    reporter: std::thread::JoinHandle<Duration>,
}

/// Report progress every 50 ms while the count changes; the CPU time since `start` when the
/// last change was seen.
fn reporter(
    tally: Arc<Tally>,
    start: ProcessTime,
    running: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Duration> {
    std::thread::spawn(move || {
        let (mut seen, mut cpu) = (0, Duration::ZERO);
        while running.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(50));
            let now = tally.count();
            if now != seen {
                seen = now;
                cpu = start.elapsed();
                answer(&format!("progress messages={now}"));
            }
        }
        cpu
    })
}

fn answer(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn start_run(
    tokio: &tokio::runtime::Runtime,
    words: &[&str],
    start_ns: u64,
    start_cpu: ProcessTime,
) -> Result<Active, String> {
    let mut to = "";
    let (handler, raw, url, topic, subscription, warmup, file) = match words {
        ["share", url, topic, subscription] => {
            (Handler::Share, false, *url, *topic, *subscription, 0, None)
        }
        ["share-forward", url, topic, subscription, out] => {
            to = Box::leak((*out).to_owned().into_boxed_str());
            (
                Handler::Forward,
                false,
                *url,
                *topic,
                *subscription,
                0,
                None,
            )
        }
        ["latency", mode, url, topic, subscription, warmup, file] => {
            let warmup = warmup
                .parse::<u64>()
                .map_err(|e| format!("WARMUP {warmup:?}: {e}"))?;
            let (handler, raw) = match *mode {
                "framework" => (Handler::Latency, false),
                "raw" => (Handler::Latency, true),
                m if m.starts_with("retry-") => (Handler::Retry, false),
                other => return Err(format!("no latency mode {other}")),
            };
            let file = Some((*file).to_owned());
            (handler, raw, *url, *topic, *subscription, warmup, file)
        }
        _ => return Err(format!("not a command: {}", words.join(" "))),
    };
    let delay = match words.get(1).and_then(|m| m.strip_prefix("retry-")) {
        Some(ms) => Duration::from_millis(ms.parse().map_err(|e| format!("retry-{ms}: {e}"))?),
        None => Duration::ZERO,
    };
    if !raw && !topic.ends_with(&format!("/{}", handler.topic())) && topic != handler.topic() {
        return Err(format!(
            "the framework's handler reads {}, not {topic}",
            handler.topic()
        ));
    }
    let tally = Arc::new(Tally {
        warmup,
        delay,
        to,
        acked_from: (handler == Handler::Forward).then(|| ACKED.load(Ordering::Acquire)),
        ..Tally::default()
    });
    let consuming = if raw {
        let (stop, stopped) = futures::channel::oneshot::channel();
        let consumer = tokio.block_on(async {
            let pulsar = Pulsar::builder(url.to_owned(), TokioExecutor)
                .build()
                .await
                .map_err(|e| format!("a raw client connects: {e}"))?;
            let consumer: pulsar::Consumer<Vec<u8>, TokioExecutor> = pulsar
                .consumer()
                .with_topic(topic)
                .with_subscription(subscription)
                .with_subscription_type(SubType::Shared)
                .build()
                .await
                .map_err(|e| format!("a raw consumer: {e}"))?;
            Ok::<_, String>((pulsar, consumer))
        })?;
        let tally = tally.clone();
        let done = tokio.spawn(raw_loop(consumer, tally, stopped));
        Consuming::Raw { stop, done }
    } else {
        let runtime = Arc::new(ruststream_tokio::TokioRuntime::new(tokio.handle().clone()));
        let running = tokio
            .block_on(
                app(url, subscription, handler, tally.clone())
                    .into_parts()
                    .start(StartContext::new(runtime), None),
            )
            .map_err(|e| format!("the framework connects: {e}"))?;
        Consuming::App(running)
    };
    answer("subscribed");
    let reporting = Arc::new(AtomicBool::new(true));
    let reporter = reporter(tally.clone(), start_cpu, reporting.clone());
    Ok(Active {
        consuming,
        tally,
        start_ns,
        file,
        reporting,
        reporter,
    })
}

/// The raw loop: receive, record, acknowledge, one message at a time, until told to stop.
async fn raw_loop(
    (pulsar, mut consumer): (
        Pulsar<TokioExecutor>,
        pulsar::Consumer<Vec<u8>, TokioExecutor>,
    ),
    tally: Arc<Tally>,
    mut stopped: futures::channel::oneshot::Receiver<()>,
) {
    loop {
        let message = match futures::future::select(consumer.next(), &mut stopped).await {
            Either::Left((Some(Ok(message)), _)) => message,
            Either::Left((Some(Err(e)), _)) => panic!("the raw consumer failed: {e}"),
            Either::Left((None, _)) | Either::Right(_) => break,
        };
        tally.latency(&message.payload.data, unix_ns());
        consumer.ack(&message).await.expect("acknowledged");
    }
    let _ = consumer.close().await;
    drop(pulsar);
}

fn stop_run(tokio: &tokio::runtime::Runtime, active: Active) -> Result<(), String> {
    let Active {
        consuming,
        tally,
        start_ns,
        file,
        reporting,
        reporter,
    } = active;
    reporting.store(false, Ordering::Release);
    let cpu = reporter.join().map_err(|_| "the reporter panicked")?;
    match consuming {
        Consuming::App(running) => tokio.block_on(running.stop()),
        Consuming::Raw { stop, done } => {
            let _ = stop.send(());
            tokio
                .block_on(done)
                .map_err(|e| format!("the raw loop failed: {e}"))?;
        }
    }
    let values = std::mem::take(&mut *tally.values.lock().expect("not poisoned"));
    if let Some(file) = file {
        let text: String = values.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&file, text).map_err(|e| format!("cannot write {file}: {e}"))?;
    }
    answer(&format!(
        "result messages={} cpu_ns={} start_unix_ns={start_ns} last_unix_ns={} recorded={}",
        tally.count(),
        cpu.as_nanos(),
        tally.last(),
        values.len()
    ));
    Ok(())
}

fn main() {
    metrics::set_global_recorder(Acks).expect("the first recorder");
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    answer("ready");
    let mut active: Option<Active> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin is readable");
        let (start_ns, start_cpu) = (unix_ns(), ProcessTime::now());
        let words: Vec<&str> = line.split_whitespace().collect();
        let outcome = match (words.first().copied(), active.take()) {
            (None, idle) => {
                active = idle;
                Ok(())
            }
            (Some("stop"), Some(run)) => stop_run(&tokio, run),
            (Some("stop"), None) => Err("stop: nothing runs".to_owned()),
            (Some(_), Some(_)) => Err("a run is in progress: stop it first".to_owned()),
            (Some(_), None) => start_run(&tokio, &words, start_ns, start_cpu).map(|run| {
                active = Some(run);
            }),
        };
        if let Err(e) = outcome {
            answer(&format!(
                "error message={}",
                e.replace(char::is_whitespace, "_")
            ));
            std::process::exit(1);
        }
    }
}
