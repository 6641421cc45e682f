//! Transactional registrations on a real broker: Apache Pulsar standalone with the transaction
//! coordinator and batch-index acknowledgement, started here on 127.0.0.1 (a broker that cannot
//! start fails the run: these tests never skip).
//!
//! - `exactly_once_through_three_sigkills`: a consume-transform-produce service (the `instance`
//!   binary, `exactly_once_forward`) forwards 10,000 jobs, published in batches of 100, to a
//!   4-partition topic, and is SIGKILLed three times mid-stream, a fresh instance started after
//!   each kill. Run twice, in fresh namespaces: registered `.transactional()` (a 10 s
//!   transaction timeout), then the same handler without a transaction. The official Java
//!   client then reads the output from the earliest message: the transactional run must hold
//!   every job exactly once; the plain one every job at least once (its duplicates printed).
//! - `an_aborted_java_transaction_is_never_seen`: the Java client writes 100 messages in a
//!   transaction it aborts, then a marker outside any; a ruststream service sees the marker
//!   and nothing of the 100.
//! - `exactly_once_in_process_on_{tokio,async-std,smol}`: the transactional forwarder
//!   (`tx_forwarder`) in process on each runtime, 1,000 batched jobs; the Java client reads
//!   each once from its output.
//!
//! Each case prints its figures and how long it took. The cases run one at a time.

use std::collections::BTreeSet;
use std::future::IntoFuture;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};
use ruststream::message::Message;
use ruststream::runtime::Runtime;
use ruststream::transaction::TransactionPolicy;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::LiveApp;
use ruststream_test_brokers::{ApacheStandalone, Distinct, APACHE_PULSAR_VERSION};
use ruststream_tests::scenario::{
    app, raw_reader, ret, tx_forwarder, Plan, Script, EXACTLY_ONCE_OUT, PARTITIONS,
};

/// The jobs of the crash runs.
const JOBS: u64 = 10_000;

/// Messages per batch (one entry each) of the input.
const BATCH: usize = 100;

/// The transaction timeout of the transactional instances (`INSTANCE_TXN_TIMEOUT_MS`).
const TXN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the Java counter waits for one more message before it stops.
const COUNT_IDLE: Duration = Duration::from_secs(5);

/// One `instance` process and the lines it printed.
struct Instance {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Instance {
    fn start(url: &str, namespace: &str, handler: &str) -> Instance {
        let mut child = Command::new(env!("CARGO_BIN_EXE_instance"))
            .env("INSTANCE_URL", url)
            .env("INSTANCE_NAMESPACE", namespace)
            .env("INSTANCE_HANDLER", handler)
            .env("INSTANCE_RULE", "ack")
            .env(
                "INSTANCE_TXN_TIMEOUT_MS",
                TXN_TIMEOUT.as_millis().to_string(),
            )
            // `INSTANCE_LOG` widens what the instances log, to look into a failing case.
            .env(
                "RUST_LOG",
                std::env::var("INSTANCE_LOG").unwrap_or_else(|_| "warn".to_owned()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the instance binary starts");
        let stdout = child.stdout.take().expect("piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Instance { child, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn wait_ready(&self) -> Result<(), Failed> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let lines = self.lines();
            if let Some(error) = lines.iter().find(|x| x.starts_with("error ")) {
                return Err(format!("the instance did not start: {error}").into());
            }
            if lines.iter().any(|x| x == "ready") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("the instance was not ready within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The job ids of every handler call it printed, in order.
    fn calls(&self) -> Vec<u64> {
        self.lines()
            .iter()
            .filter_map(|l| l.strip_prefix("call ")?.split(' ').next()?.parse().ok())
            .collect()
    }

    /// SIGKILL.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the graceful stop (SIGKILL past 60 s).
    fn terminate(&mut self) -> Result<(), Failed> {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| Failed::from(e.to_string()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self
            .child
            .try_wait()
            .map_err(|e| Failed::from(e.to_string()))?
            .is_none()
        {
            if Instant::now() > deadline {
                self.kill();
                return Err("no graceful stop within 60 s of SIGTERM".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !self.lines().iter().any(|l| l == "stopped") {
            return Err("the instance ended without its graceful stop".into());
        }
        Ok(())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A two-thread tokio runtime, and the app's adapter over it.
fn tokio_runtime() -> Result<(tokio::runtime::Runtime, Arc<ruststream_tokio::TokioRuntime>), Failed>
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(e.to_string()))?;
    let adapter = Arc::new(ruststream_tokio::TokioRuntime::new(rt.handle().clone()));
    Ok((rt, adapter))
}

/// Publish jobs `ids` to `topic` of namespace `ns` in batches of [`BATCH`] (an entry each),
/// from a service of its own, as another process would; how many entries.
fn publish_batched(url: &str, ns: &str, topic: &str, ids: std::ops::Range<u64>) -> usize {
    let (rt, runtime) = tokio_runtime().expect("tokio");
    let ids: Vec<u64> = ids.collect();
    rt.block_on(async {
        let producer = LiveApp::with_state(
            app(|_| {}),
            Plan::new(Script::always(ret(HandlerOutcome::ack()))),
            runtime,
        )
        .url(url)
        .namespace(ns)
        .into_future()
        .await
        .expect("the producer connects");
        let mut entries = BTreeSet::new();
        for chunk in ids.chunks(BATCH) {
            let published = producer
                .publish_batch(
                    chunk
                        .iter()
                        .map(|id| Message::new(topic.to_owned(), format!("{{\"id\":{id}}}"))),
                )
                .await
                .expect("published");
            for id in published {
                entries.insert((id.parts()[0], id.parts()[1]));
            }
        }
        producer.stop().await;
        entries.len()
    })
}

/// A fully qualified topic of namespace `ns`.
fn topic(ns: &str, name: &str) -> String {
    format!("persistent://{ns}/{name}")
}

/// `GET path` on the broker's admin API: the JSON body of a 200 answer.
fn admin_get(broker: &ApacheStandalone, path: &str) -> Result<serde_json::Value, String> {
    let mut stream = std::net::TcpStream::connect(broker.http()).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| e.to_string())?;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("GET {path}: no HTTP answer"))?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!(
            "GET {path}: {}",
            head.lines().next().unwrap_or_default()
        ));
    }
    serde_json::from_str(body).map_err(|e| format!("GET {path}: {e}"))
}

/// The backlog of `subscription` on `topic` (fully qualified, not partitioned) and its count of
/// messages delivered and not acknowledged, as the broker's stats say (`msgBacklog`,
/// `unackedMessages`; the broker's count, which went below 0 where transactions timed out and
/// their messages came back).
fn backlog(
    broker: &ApacheStandalone,
    topic: &str,
    subscription: &str,
) -> Result<(i64, i64), String> {
    let rest = topic
        .strip_prefix("persistent://")
        .expect("fully qualified");
    let stats = admin_get(broker, &format!("/admin/v2/persistent/{rest}/stats"))?;
    let sub = &stats["subscriptions"][subscription];
    let count = |field: &str| {
        sub[field]
            .as_i64()
            .ok_or_else(|| format!("the stats of {topic} have no {subscription}.{field}: {sub}"))
    };
    Ok((count("msgBacklog")?, count("unackedMessages")?))
}

/// The output of a run, as the Java client counted it, and what the run did.
struct Run {
    counted: Distinct,
    calls: usize,
    entries: usize,
    /// When each SIGKILL came (seconds from the start), and how many distinct jobs had been
    /// handled then.
    kills_at: Vec<(f64, usize)>,
    /// When the input's backlog was 0 (seconds from the start).
    finished: f64,
    /// The input subscription's `unackedMessages` then.
    unacked: i64,
    seconds: f64,
}

/// Forward [`JOBS`] jobs through instances mounting `handler`, SIGKILLing three of them
/// mid-stream; count the output with the Java client.
fn forward_through_kills(
    broker: &ApacheStandalone,
    ns: &str,
    handler: &str,
) -> Result<Run, Failed> {
    let fail = |e: String| Failed::from(e);
    let started = Instant::now();
    let url = broker.url();
    let output = topic(ns, EXACTLY_ONCE_OUT);
    broker
        .create_partitioned_topic(&output, PARTITIONS)
        .map_err(|e| fail(e.to_string()))?;
    let mut instances = vec![Instance::start(&url, ns, handler)];
    instances[0].wait_ready()?;
    let publishing = {
        let (url, ns) = (url.clone(), ns.to_owned());
        std::thread::spawn(move || publish_batched(&url, &ns, "eo-in", 0..JOBS))
    };
    let distinct = |instances: &[Instance]| {
        (instances.iter())
            .flat_map(Instance::calls)
            .collect::<BTreeSet<u64>>()
            .len()
    };
    let mut kills_at = Vec::new();
    let mut last_kill = Instant::now();
    for kill in 1..=3u64 {
        let at = (JOBS * kill / 4) as usize;
        let deadline = Instant::now() + Duration::from_secs(120);
        while distinct(&instances) < at {
            if Instant::now() > deadline {
                return Err(format!(
                    "{handler}: before kill {kill}, only {} jobs handled within 120 s",
                    distinct(&instances)
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        instances.last_mut().expect("one").kill();
        last_kill = Instant::now();
        kills_at.push((started.elapsed().as_secs_f64(), distinct(&instances)));
        instances.push(Instance::start(&url, ns, handler));
        instances.last().expect("one").wait_ready()?;
    }
    let entries = publishing
        .join()
        .map_err(|_| Failed::from("publishing failed"))?;
    // The last instance finishes: every job acknowledged (committed, in transactions).
    let input = topic(ns, "eo-in");
    let deadline = Instant::now() + Duration::from_secs(180);
    let unacked = loop {
        let left = backlog(broker, &input, "eo-forward").map_err(fail)?;
        if left.0 == 0 {
            break left.1;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{handler}: the input's backlog and unacknowledged count are still {left:?} 180 s \
                 after the last kill; {} distinct jobs handled",
                distinct(&instances)
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let finished = started.elapsed();
    // What the killed instances left open is aborted by the broker at its timeout; until then
    // it holds the output's readers back.
    let aborted_by = last_kill + TXN_TIMEOUT + Duration::from_secs(5);
    if handler == "tx-forward" {
        std::thread::sleep(aborted_by.saturating_duration_since(Instant::now()));
    }
    let classpath = broker.java_classpath().map_err(|e| fail(e.to_string()))?;
    let counted = ruststream_test_brokers::java_count_distinct(
        &classpath,
        &url,
        &output,
        "counter",
        JOBS as usize,
        COUNT_IDLE,
    )
    .map_err(|e| fail(e.to_string()))?;
    instances.last_mut().expect("one").terminate()?;
    let calls = instances.iter().map(|i| i.calls().len()).sum();
    Ok(Run {
        counted,
        calls,
        entries,
        kills_at,
        finished: finished.as_secs_f64(),
        unacked,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// See the module documentation.
fn exactly_once_through_three_sigkills(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let transactional = forward_through_kills(broker, ns, "tx-forward")?;
    let plain_ns = format!("{ns}-plain");
    broker
        .create_namespace(&plain_ns)
        .map_err(|e| Failed::from(e.to_string()))?;
    let plain = forward_through_kills(broker, &plain_ns, "forward-plain")?;
    for (name, run) in [("transactional", &transactional), ("plain", &plain)] {
        let c = &run.counted;
        let duplicates = c.total - c.distinct;
        eprintln!(
            "live_exactly_once exactly_once_through_three_sigkills ({name}): {JOBS} jobs in {} \
             entries; SIGKILLed at (s, distinct jobs handled) {:?}; every job acknowledged \
             {:.1} s after the start (the input subscription's unackedMessages then: {}); {} \
             handler calls in all; the Java client read total {}, distinct {}, duplicates \
             {}{}; {:.1} s",
            run.entries,
            run.kills_at
                .iter()
                .map(|(at, handled)| (format!("{at:.1}"), *handled))
                .collect::<Vec<_>>(),
            run.finished,
            run.unacked,
            run.calls,
            c.total,
            c.distinct,
            duplicates,
            match (name, duplicates) {
                ("plain", 0) => " (no duplicate appeared)".to_owned(),
                ("plain", _) => format!(
                    " (duplicates appeared, e.g. {:?})",
                    &c.duplicates[..c.duplicates.len().min(5)]
                ),
                (_, 0) => String::new(),
                _ => format!(" (e.g. {:?})", &c.duplicates[..c.duplicates.len().min(5)]),
            },
            run.seconds
        );
    }
    let t = &transactional.counted;
    if t.total != JOBS || t.distinct != JOBS {
        return Err(format!(
            "transactional: expected each of {JOBS} jobs exactly once, read total {}, distinct {} \
             (duplicates {:?})",
            t.total, t.distinct, t.duplicates
        )
        .into());
    }
    if plain.counted.distinct != JOBS {
        return Err(format!("plain: {} of {JOBS} jobs forwarded", plain.counted.distinct).into());
    }
    Ok(())
}

/// See the module documentation.
fn an_aborted_java_transaction_is_never_seen(
    broker: &ApacheStandalone,
    ns: &str,
) -> Result<(), Failed> {
    const ABORTED: usize = 100;
    let started = Instant::now();
    let url = broker.url();
    let classpath = broker
        .java_classpath()
        .map_err(|e| Failed::from(e.to_string()))?;
    let (rt, runtime) = tokio_runtime()?;
    let script = Script::always(ret(HandlerOutcome::ack()));
    rt.block_on(async {
        let service = LiveApp::with_state(
            app(|b| {
                b.include(raw_reader);
            }),
            Plan::new(script.clone()),
            runtime,
        )
        .url(url.clone())
        .namespace(ns)
        .await
        .map_err(|e| Failed::from(e.to_string()))?;
        let produced = ruststream_test_brokers::java_produce_aborted(
            &classpath,
            &url,
            &topic(ns, "jobs-raw"),
            ABORTED,
        );
        let marker = b"{\"id\":-1}".to_vec();
        let seen_marker = produced.is_ok()
            && service
                .wait_until(Duration::from_secs(60), |_| {
                    script.seen().iter().any(|s| s.payload == marker)
                })
                .await;
        // The aborted messages would come before the marker; a little longer all the same.
        service.sleep(Duration::from_secs(3)).await;
        service.stop().await;
        produced.map_err(|e| Failed::from(e.to_string()))?;
        let seen: Vec<String> = (script.seen().iter())
            .map(|s| String::from_utf8_lossy(&s.payload).into_owned())
            .collect();
        eprintln!(
            "live_exactly_once an_aborted_java_transaction_is_never_seen: {ABORTED} messages \
             in an aborted transaction, then the marker; the service saw {} message(s): {:?}; \
             {:.1} s",
            seen.len(),
            &seen[..seen.len().min(5)],
            started.elapsed().as_secs_f64()
        );
        if !seen_marker {
            return Err(Failed::from("the marker did not arrive within 60 s"));
        }
        if seen.len() != 1 {
            return Err(format!(
                "the service saw {} messages besides the marker",
                seen.len() - 1
            )
            .into());
        }
        Ok(())
    })
}

/// The jobs of the in-process cases.
const IN_PROCESS_JOBS: u64 = 1_000;

/// `tx_forwarder` mounted transactional in process on `runtime`, forwarding
/// [`IN_PROCESS_JOBS`] batched jobs from `tx-in` to `tx-out` (4 partitions); the Java client
/// reads each job once there.
fn exactly_once_in_process(
    broker: &ApacheStandalone,
    ns: &str,
    runtime: &'static str,
) -> Result<(), Failed> {
    let started = Instant::now();
    let url = broker.url();
    let output = topic(ns, "tx-out");
    broker
        .create_partitioned_topic(&output, PARTITIONS)
        .map_err(|e| Failed::from(e.to_string()))?;
    let script = Script::always(ret(HandlerOutcome::ack()));
    let run = |rt: Arc<dyn Runtime>| {
        let (url, ns, script) = (url.clone(), ns.to_owned(), script.clone());
        async move {
            let service = LiveApp::with_state(
                app(|b| {
                    b.include(tx_forwarder)
                        .transactional_with(TransactionPolicy::new().timeout(TXN_TIMEOUT));
                }),
                Plan::new(script),
                rt,
            )
            .url(url.clone())
            .namespace(ns.clone())
            .await
            .map_err(|e| e.to_string())?;
            let input = topic(&ns, "tx-in");
            let publishing =
                std::thread::spawn(move || publish_batched(&url, &ns, "tx-in", 0..IN_PROCESS_JOBS));
            // Done once every job is acknowledged: its transaction committed.
            let mut left = None;
            let done = service
                .wait_until(Duration::from_secs(120), |s| {
                    if s.calls_of("tx_forwarder").len() < IN_PROCESS_JOBS as usize {
                        return false;
                    }
                    left = Some(backlog(broker, &input, "tx"));
                    matches!(left, Some(Ok((0, _))))
                })
                .await;
            let entries = publishing.join().map_err(|_| "publishing failed")?;
            let calls = service.calls_of("tx_forwarder").len();
            service.stop().await;
            if !done {
                return Err(format!(
                    "{calls} handler calls, and the input's backlog and unacknowledged count \
                     {left:?} after 120 s"
                ));
            }
            let unacked = match left {
                Some(Ok((_, unacked))) => unacked,
                _ => 0,
            };
            Ok::<_, String>((entries, calls, unacked))
        }
    };
    let ran = match runtime {
        "tokio" => {
            let (rt, adapter) = tokio_runtime()?;
            rt.block_on(run(adapter))
        }
        "async-std" => {
            async_std::task::block_on(run(Arc::new(ruststream_async_std::AsyncStdRuntime::new())))
        }
        _ => smol::block_on(run(Arc::new(ruststream_smol::SmolRuntime::global()))),
    };
    let (entries, calls, unacked) = ran.map_err(Failed::from)?;
    let handled_in = started.elapsed();
    let classpath = broker
        .java_classpath()
        .map_err(|e| Failed::from(e.to_string()))?;
    let c = ruststream_test_brokers::java_count_distinct(
        &classpath,
        &url,
        &output,
        "counter",
        IN_PROCESS_JOBS as usize,
        COUNT_IDLE,
    )
    .map_err(|e| Failed::from(e.to_string()))?;
    eprintln!(
        "live_exactly_once exactly_once_in_process ({runtime}): {IN_PROCESS_JOBS} jobs in \
         {entries} entries, {calls} handler calls, every job acknowledged {:.1} s after the \
         start (the input subscription's unackedMessages then: {unacked}); the Java client \
         read total {}, distinct {}, duplicates {}; {:.1} s in all",
        handled_in.as_secs_f64(),
        c.total,
        c.distinct,
        c.total - c.distinct,
        started.elapsed().as_secs_f64()
    );
    if c.total != IN_PROCESS_JOBS || c.distinct != IN_PROCESS_JOBS {
        return Err(format!(
            "expected each of {IN_PROCESS_JOBS} jobs once, read total {}, distinct {} \
             (duplicates {:?})",
            c.total, c.distinct, c.duplicates
        )
        .into());
    }
    Ok(())
}

type CaseFn = fn(&ApacheStandalone, &str) -> Result<(), Failed>;

const CASES: &[(&str, CaseFn)] = &[
    (
        "an_aborted_java_transaction_is_never_seen",
        an_aborted_java_transaction_is_never_seen,
    ),
    (
        "exactly_once_through_three_sigkills",
        exactly_once_through_three_sigkills,
    ),
    ("exactly_once_in_process_on_tokio", |b, ns| {
        exactly_once_in_process(b, ns, "tokio")
    }),
    ("exactly_once_in_process_on_async-std", |b, ns| {
        exactly_once_in_process(b, ns, "async-std")
    }),
    ("exactly_once_in_process_on_smol", |b, ns| {
        exactly_once_in_process(b, ns, "smol")
    }),
];

/// One broker with transactions and batch-index acknowledgement for every case, each case in a
/// fresh namespace, one case at a time.
/// The failed cases and why, in the order they ran.
fn failures() -> &'static Mutex<Vec<String>> {
    static FAILURES: Mutex<Vec<String>> = Mutex::new(Vec::new());
    &FAILURES
}

fn main() -> ExitCode {
    static NEXT_NAMESPACE: AtomicU64 = AtomicU64::new(0);
    let begun = Instant::now();
    // What the in-process services log, as `INSTANCE_LOG` says for the instances (warnings).
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            std::env::var("INSTANCE_LOG").unwrap_or_else(|_| "warn".to_owned()),
        ))
        .with_writer(std::io::stderr)
        .init();
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let apache = if args.list {
        None
    } else {
        Some(
            ApacheStandalone::start_with_transactions(&[
                "acknowledgmentAtBatchIndexLevelEnabled=true",
            ])
            .map(Arc::new),
        )
    };
    if let Some(Ok(_)) = &apache {
        eprintln!(
            "live_exactly_once: the broker (transactions on) started in {:.1} s",
            begun.elapsed().as_secs_f64()
        );
    }
    let label = format!("apache-pulsar-{APACHE_PULSAR_VERSION}");
    let mut trials = Vec::new();
    if let Some(Err(e)) = &apache {
        let message = e.to_string();
        trials.push(Trial::test(
            "broker-start/Apache Pulsar (transactions)",
            move || Err(message.clone().into()),
        ));
    }
    let apache = apache.and_then(Result::ok);
    for &(name, case) in CASES {
        let apache = apache.clone();
        trials.push(Trial::test(format!("{label}/{name}"), move || {
            let apache = apache.ok_or_else(|| Failed::from("no broker"))?;
            let n = NEXT_NAMESPACE.fetch_add(1, Ordering::SeqCst);
            let ns = format!("public/exactly-once-{n}");
            apache
                .create_namespace(&ns)
                .map_err(|e| Failed::from(e.to_string()))?;
            let result = case(&apache, &ns);
            if let Err(failed) = &result {
                // Printed again at the very end, after the broker has stopped, so that the tail
                // of a long CI log holds why the run failed.
                failures()
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!(
                        "{name}: {}",
                        failed.message().unwrap_or("(no message)")
                    ));
            }
            result
        }));
    }
    let conclusion = libtest_mimic::run(&args, trials);
    drop(apache);
    eprintln!(
        "live_exactly_once: {:.1} s in all",
        begun.elapsed().as_secs_f64()
    );
    for failure in failures()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        eprintln!("live_exactly_once: FAILED {failure}");
    }
    if conclusion.has_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
