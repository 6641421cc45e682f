//! Several instances of a service on one subscription, each its own process (the `instance`
//! binary of this crate), on Apache Pulsar standalone started here on 127.0.0.1: hand-over when
//! one is killed with SIGKILL mid-stream (Shared, Failover), the refusal of a second Exclusive
//! consumer, KeyShared's one owner per key. Messages are published the way real producers do:
//! half of them in batches.
//!
//! Each case prints its figures (published, acknowledged, lost, duplicates) and asserts that
//! nothing is lost. A broker that cannot start fails the run: these tests never skip. The cases
//! run one at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::future::IntoFuture;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use ruststream::message::Message;
use ruststream_pulsar::testing::LiveApp;
use ruststream_test_brokers::ApacheStandalone;
use ruststream_tests::scenario::{app, Plan, Script};

#[path = "support/apache_suite.rs"]
mod apache_suite;

/// One `instance` process and the lines it printed.
struct Instance {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Instance {
    fn start(url: &str, namespace: &str, handler: &str, rule: &str, hold_ms: u64) -> Instance {
        Instance::start_with(url, namespace, handler, rule, hold_ms, false)
    }

    fn start_with(
        url: &str,
        namespace: &str,
        handler: &str,
        rule: &str,
        hold_ms: u64,
        batch_index_ack: bool,
    ) -> Instance {
        let mut child = Command::new(env!("CARGO_BIN_EXE_instance"))
            .env(
                "INSTANCE_BATCH_INDEX_ACK",
                if batch_index_ack { "1" } else { "0" },
            )
            .env("INSTANCE_URL", url)
            .env("INSTANCE_NAMESPACE", namespace)
            .env("INSTANCE_HANDLER", handler)
            .env("INSTANCE_RULE", rule)
            .env("INSTANCE_HOLD_MS", hold_ms.to_string())
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

    /// Wait until a line satisfies `done`, at most `within`.
    fn wait_for(&self, within: Duration, done: impl Fn(&[String]) -> bool) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if done(&self.lines()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        done(&self.lines())
    }

    fn wait_ready(&self) -> Result<(), Failed> {
        let ok = self.wait_for(Duration::from_secs(30), |l| {
            l.iter().any(|x| x == "ready" || x.starts_with("error "))
        });
        match self.lines().iter().find(|x| x.starts_with("error ")) {
            Some(error) => Err(format!("the instance did not start: {error}").into()),
            None if ok => Ok(()),
            None => Err("the instance printed nothing within 30 s".into()),
        }
    }

    /// `(id, outcome)` of every handler call it printed.
    fn calls(&self) -> Vec<(u64, String)> {
        self.lines()
            .iter()
            .filter_map(|l| {
                let mut parts = l.strip_prefix("call ")?.split(' ');
                Some((parts.next()?.parse().ok()?, parts.next()?.to_owned()))
            })
            .collect()
    }

    /// SIGKILL.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for the graceful stop.
    fn terminate(&mut self) -> Result<(), Failed> {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| Failed::from(e.to_string()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(|e| Failed::from(e.to_string()))?
            {
                break status;
            }
            if Instant::now() > deadline {
                self.kill();
                return Err("no graceful stop within 60 s of SIGTERM".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !self.lines().iter().any(|l| l == "stopped") {
            return Err(format!("no graceful stop: {status}").into());
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

/// Publishes from the test, as another process would.
struct Producer {
    rt: tokio::runtime::Runtime,
    app: Option<LiveApp>,
}

impl Producer {
    fn connect(url: &str, namespace: &str) -> Producer {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio");
        let runtime = Arc::new(ruststream_tokio::TokioRuntime::new(rt.handle().clone()));
        let app = rt
            .block_on(
                LiveApp::with_state(
                    app(|_| {}),
                    Plan::new(Script::always(ruststream_tests::scenario::ret(
                        ruststream::HandlerOutcome::ack(),
                    ))),
                    runtime,
                )
                .url(url)
                .namespace(namespace)
                .into_future(),
            )
            .expect("the producer connects");
        Producer { rt, app: Some(app) }
    }

    /// Publish jobs `ids` to `topic`: in batches of `batch` (1: one at a time), keyed by
    /// `id % keys` when `keys > 0`.
    fn publish(&self, topic: &str, ids: std::ops::Range<u64>, batch: usize, keys: u64) {
        let app = self.app.as_ref().expect("connected");
        let record = |id: u64| {
            let r = Message::new(topic.to_owned(), format!("{{\"id\":{id}}}"));
            if keys > 0 {
                r.key(format!("key-{}", id % keys))
            } else {
                r
            }
        };
        let ids: Vec<u64> = ids.collect();
        self.rt.block_on(async {
            for chunk in ids.chunks(batch) {
                if batch == 1 {
                    app.publish(record(chunk[0])).await.expect("published");
                } else {
                    let published = app
                        .publish_batch(chunk.iter().map(|&id| record(id)))
                        .await
                        .expect("published");
                    assert!(published.iter().all(|id| id.parts().len() == 4));
                }
            }
        });
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        if let Some(app) = self.app.take() {
            self.rt.block_on(app.stop());
        }
    }
}

/// Publish `0..n` to `topic` from another thread, half in batches of 10, half one by one, so
/// that instances can be killed while the stream flows.
fn publish_in_background(
    url: &str,
    ns: &str,
    topic: &'static str,
    n: u64,
) -> std::thread::JoinHandle<()> {
    let (url, ns) = (url.to_owned(), ns.to_owned());
    std::thread::spawn(move || {
        let producer = Producer::connect(&url, &ns);
        producer.publish(topic, 0..n / 2, 10, 0);
        producer.publish(topic, n / 2..n, 1, 0);
    })
}

/// Published, acknowledged (by any instance), lost, duplicate deliveries.
#[derive(Debug)]
struct Figures {
    published: usize,
    acked: usize,
    lost: Vec<u64>,
    duplicates: usize,
}

fn figures(published: u64, instances: &[&Instance]) -> Figures {
    let mut acked = BTreeSet::new();
    let mut ack_lines = 0;
    for instance in instances {
        for (id, outcome) in instance.calls() {
            if outcome == "ack" {
                acked.insert(id);
                ack_lines += 1;
            }
        }
    }
    let lost: Vec<u64> = (0..published).filter(|id| !acked.contains(id)).collect();
    Figures {
        published: published as usize,
        acked: acked.len(),
        lost,
        duplicates: ack_lines - acked.len(),
    }
}

fn wait_all_acked(published: u64, instances: &[&Instance], within: Duration) -> Figures {
    let deadline = Instant::now() + within;
    loop {
        let f = figures(published, instances);
        if f.lost.is_empty() || Instant::now() > deadline {
            return f;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn report(case: &str, f: &Figures) -> Result<(), Failed> {
    eprintln!(
        "live_instances {case}: published {}, acknowledged {}, lost {}, duplicates {}",
        f.published,
        f.acked,
        f.lost.len(),
        f.duplicates
    );
    if f.lost.is_empty() {
        Ok(())
    } else {
        Err(format!("{case}: lost {:?}", f.lost).into())
    }
}

/// Shared: two instances; one is SIGKILLed mid-stream; the other handles its messages.
fn shared_sigkill_mid_stream(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let url = &broker.url();
    let mut a = Instance::start(url, ns, "shared", "ack", 10);
    let b = Instance::start(url, ns, "shared", "ack", 10);
    a.wait_ready()?;
    b.wait_ready()?;
    const N: u64 = 600;
    let publishing = publish_in_background(url, ns, "jobs", N);
    if !a.wait_for(Duration::from_secs(60), |l| l.len() > (N / 8) as usize) {
        return Err("instance A handled nothing".into());
    }
    let a_before: BTreeSet<u64> = a.calls().into_iter().map(|(id, _)| id).collect();
    a.kill();
    publishing
        .join()
        .map_err(|_| Failed::from("publishing failed"))?;
    let f = wait_all_acked(N, &[&a, &b], Duration::from_secs(60));
    report("shared_sigkill_mid_stream", &f)?;
    let b_ids: BTreeSet<u64> = b.calls().into_iter().map(|(id, _)| id).collect();
    if b_ids.is_empty() {
        return Err("B handled nothing".into());
    }
    eprintln!(
        "live_instances shared_sigkill_mid_stream: A handled {} before the kill, B {} in all",
        a_before.len(),
        b_ids.len()
    );
    Ok(())
}

/// Failover: the active instance is SIGKILLed mid-stream; the standby takes over.
fn failover_sigkill_standby_takes_over(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let url = &broker.url();
    let mut a = Instance::start(url, ns, "failover", "ack", 10);
    a.wait_ready()?;
    let mut b = Instance::start(url, ns, "failover", "ack", 10);
    b.wait_ready()?;
    const N: u64 = 300;
    let publishing = publish_in_background(url, ns, "jobs-fo", N);
    // Which one the broker made active depends on the consumer names' hashes: find it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while a.calls().len() + b.calls().len() <= (N / 8) as usize && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (active, standby) = match (a.calls().is_empty(), b.calls().is_empty()) {
        (false, true) => (&mut a, &b),
        (true, false) => (&mut b, &a),
        (true, true) => return Err("no instance received".into()),
        (false, false) => return Err("both instances received on a Failover subscription".into()),
    };
    active.kill();
    publishing
        .join()
        .map_err(|_| Failed::from("publishing failed"))?;
    if standby.calls().is_empty() && figures(N, &[&a, &b]).lost.is_empty() {
        return Err("the active one finished before the kill: nothing was handed over".into());
    }
    let f = wait_all_acked(N, &[&a, &b], Duration::from_secs(60));
    report("failover_sigkill_standby_takes_over", &f)
}

/// Exclusive: a second instance is refused with a clear error.
fn exclusive_refuses_a_second_instance(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let url = &broker.url();
    let a = Instance::start(url, ns, "exclusive", "ack", 0);
    a.wait_ready()?;
    let b = Instance::start(url, ns, "exclusive", "ack", 0);
    let refused = b
        .wait_ready()
        .expect_err("a second Exclusive consumer is refused");
    let text = refused.message().map(str::to_owned).unwrap_or_default();
    eprintln!("live_instances exclusive_refuses_a_second_instance: {text}");
    if !(text.contains("exclusive") && text.contains("Exclusive")) {
        return Err(format!("the refusal does not name the subscription and type: {text}").into());
    }
    Ok(())
}

/// KeyShared: each key is handled by one instance; nothing is lost.
fn key_shared_each_key_on_one_instance(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let url = &broker.url();
    let a = Instance::start(url, ns, "key_shared", "ack", 0);
    let b = Instance::start(url, ns, "key_shared", "ack", 0);
    a.wait_ready()?;
    b.wait_ready()?;
    let producer = Producer::connect(url, ns);
    const N: u64 = 200;
    producer.publish("jobs-ks", 0..N, 1, 8);
    let f = wait_all_acked(N, &[&a, &b], Duration::from_secs(60));
    report("key_shared_each_key_on_one_instance", &f)?;
    let keys = |i: &Instance| -> BTreeMap<u64, ()> {
        i.calls().into_iter().map(|(id, _)| (id % 8, ())).collect()
    };
    let (ka, kb) = (keys(&a), keys(&b));
    if ka.keys().any(|k| kb.contains_key(k)) {
        return Err(format!("a key on both instances: {ka:?} {kb:?}").into());
    }
    Ok(())
}

/// Shared, with odd ids waiting in `retry_after` when the instance is SIGKILLed, then
/// restarted; and a SIGTERM with handlers in flight: nothing lost.
fn shared_restart_after_sigkill_during_waits(
    broker: &ApacheStandalone,
    ns: &str,
) -> Result<(), Failed> {
    let url = &broker.url();
    const N: u64 = 400;
    let producer = Producer::connect(url, ns);
    let mut first = Instance::start(url, ns, "shared", "odd-retry-after-once", 2);
    first.wait_ready()?;
    producer.publish("jobs", 0..N / 2, 10, 0);
    producer.publish("jobs", N / 2..N, 1, 0);
    // Kill while odd ids wait in retry_after.
    first.wait_for(Duration::from_secs(30), |l| {
        l.iter().filter(|x| x.ends_with("retry_after")).count() > 20
    });
    first.kill();
    let mut second = Instance::start(url, ns, "shared", "odd-retry-after-once", 2);
    second.wait_ready()?;
    second.wait_for(Duration::from_secs(30), |l| l.len() > 50);
    // SIGTERM with handlers in flight: their acknowledgements are flushed.
    second.terminate()?;
    let third = Instance::start(url, ns, "shared", "odd-retry-after-once", 0);
    third.wait_ready()?;
    let f = wait_all_acked(N, &[&first, &second, &third], Duration::from_secs(90));
    report("shared_restart_after_sigkill_during_waits", &f)
}

/// Shared with a retry topic: odd ids return the durable `retry_later(3 s)` on their first
/// delivery; the instance is SIGKILLed while their copies wait on the broker, and a fresh one
/// (which acknowledges everything) receives the copies when they are due, and whatever the
/// first left unacknowledged. Nothing lost; duplicates (a copy published, the original not yet
/// acknowledged at the kill) counted.
fn durable_retries_survive_a_sigkill(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let url = &broker.url();
    const N: u64 = 200;
    let producer = Producer::connect(url, ns);
    let mut first = Instance::start(url, ns, "later", "odd-retry-later-once", 0);
    first.wait_ready()?;
    producer.publish("jobs-later", 0..N / 2, 10, 0);
    producer.publish("jobs-later", N / 2..N, 1, 0);
    let later = |i: &Instance| {
        i.calls()
            .into_iter()
            .filter(|(_, o)| o == "retry_later")
            .map(|(id, _)| id)
            .collect::<BTreeSet<u64>>()
    };
    first.wait_for(Duration::from_secs(30), |l| {
        l.iter().filter(|x| x.ends_with("retry_later")).count() >= 40
    });
    first.kill();
    let waiting = later(&first);
    let second = Instance::start(url, ns, "later", "ack", 0);
    second.wait_ready()?;
    let f = wait_all_acked(N, &[&first, &second], Duration::from_secs(60));
    let back: BTreeSet<u64> = second
        .calls()
        .into_iter()
        .filter(|(id, o)| o == "ack" && waiting.contains(id))
        .map(|(id, _)| id)
        .collect();
    eprintln!(
        "live_instances durable_retries_survive_a_sigkill: {} ids had returned retry_later(3 s) \
         at the kill; {} of them came back to the fresh instance",
        waiting.len(),
        back.len()
    );
    report("durable_retries_survive_a_sigkill", &f)?;
    if waiting.is_empty() {
        return Err("no retry_later before the kill: the case tested nothing".into());
    }
    if back != waiting {
        return Err(format!(
            "ids that waited on the retry topic did not come back: {:?}",
            waiting.difference(&back).collect::<Vec<_>>()
        )
        .into());
    }
    Ok(())
}

/// The fault suite: 10,000 messages (of the first 8,000 half in batches of 10 and half one by
/// one, the last 2,000 in batches of 10); odd ids wait in `retry_after` once. The service is SIGKILLed three times
/// mid-stream (the second time while many deliveries wait in `retry_after`) and restarted each
/// time. The broker is then stopped under load (a backlog of 1,000 just published, the service
/// busy with it) and started again; 1,000 more published after the restart must reach the very
/// instance that lived through it: it resumed by itself. The last instance is stopped with
/// SIGTERM while handlers are in flight, and a fresh one finishes. Prints published,
/// acknowledged, lost and duplicates; fails on any loss.
///
/// Load around the restart is made, not waited for: with batching publishers the first 8,000
/// are handled long before the kills are over, and a restart on an idle subscription would
/// prove nothing.
fn fault_suite(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    let url = &broker.url();
    const N: u64 = 10_000;
    const DURING_KILLS: u64 = 8_000;
    const BACKLOG: u64 = 1_000;
    let start = Instant::now();
    let start_one = || Instance::start(url, ns, "shared", "odd-retry-after-once", 1);
    let mut instances = vec![start_one()];
    instances[0].wait_ready()?;
    let publishing = publish_in_background(url, ns, "jobs", DURING_KILLS);
    let handled =
        |instances: &[Instance]| -> usize { instances.iter().map(|i| i.calls().len()).sum() };
    let wait_handled = |instances: &[Instance], at_least: usize| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while handled(instances) < at_least && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // Kill 1: mid-stream.
    wait_handled(&instances, 1_500);
    instances.last_mut().expect("one").kill();
    instances.push(start_one());
    instances.last().expect("one").wait_ready()?;
    // Kill 2: while many deliveries wait in retry_after (every odd id's first delivery does).
    let waiting = |i: &Instance| i.calls().iter().filter(|(_, o)| o == "retry_after").count();
    let deadline = Instant::now() + Duration::from_secs(60);
    while waiting(instances.last().expect("one")) < 200 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let waits_at_kill = waiting(instances.last().expect("one"));
    instances.last_mut().expect("one").kill();
    instances.push(start_one());
    instances.last().expect("one").wait_ready()?;
    // Kill 3: mid-stream again.
    let so_far = handled(&instances);
    wait_handled(&instances, so_far + 1_500);
    instances.last_mut().expect("one").kill();
    instances.push(start_one());
    instances.last().expect("one").wait_ready()?;
    publishing
        .join()
        .map_err(|_| Failed::from("publishing failed"))?;
    // The broker stops under load: a backlog is published, and once the service is busy with
    // it the broker goes down and comes back.
    {
        let producer = Producer::connect(url, ns);
        let so_far = handled(&instances);
        producer.publish("jobs", DURING_KILLS..DURING_KILLS + BACKLOG, 10, 0);
        wait_handled(&instances, so_far + 100);
    }
    let in_hand_at_stop = handled(&instances);
    let restart = Instant::now();
    broker
        .restart(Duration::from_secs(2))
        .map_err(|e| Failed::from(e.to_string()))?;
    let restarted_in = restart.elapsed();
    // Published after the restart: only a consumer that reconnected can be handed these, and
    // the one instance alive is the one that lived through the restart.
    Producer::connect(url, ns).publish("jobs", DURING_KILLS + BACKLOG..N, 10, 0);
    let survivor = instances.last().expect("one");
    let after_restart = |i: &Instance| {
        i.calls()
            .iter()
            .filter(|(id, _)| *id >= DURING_KILLS + BACKLOG)
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while after_restart(survivor) < 100 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let resumed_with = after_restart(survivor);
    // SIGTERM with handlers in flight; then a fresh instance finishes.
    instances.last_mut().expect("one").terminate()?;
    instances.push(start_one());
    instances.last().expect("one").wait_ready()?;
    let all: Vec<&Instance> = instances.iter().collect();
    let f = wait_all_acked(N, &all, Duration::from_secs(240));
    eprintln!(
        "live_instances fault_suite: {} instances; the instance killed second had returned {} \
         retry_after outcomes (1 s waits); {} calls made when the broker went down with a \
         backlog; down and back in {:.1} s; the instance that lived through it then handled \
         {} of the {} published after the restart before its SIGTERM; {:.1} s in all",
        instances.len(),
        waits_at_kill,
        in_hand_at_stop,
        restarted_in.as_secs_f64(),
        resumed_with,
        N - DURING_KILLS - BACKLOG,
        start.elapsed().as_secs_f64()
    );
    report("fault_suite", &f)?;
    if resumed_with == 0 {
        return Err(
            "the service did not resume after the broker restart: the instance that lived \
             through it handled none of the messages published after it within 120 s"
                .into(),
        );
    }
    Ok(())
}

/// On a broker with batch-index acknowledgement, with the framework acknowledging at that level:
/// an instance acknowledges the even ids of batched entries and keeps retrying the odd ones;
/// killed, its successor is handed only the odd ids (the broker's ack set, honoured by the
/// patched pulsar-rs), not the even ones it acknowledged. The same run without batch-index
/// acknowledgement hands the successor every id of the unfinished entries, as documented.
///
/// A third run turns the option on against a broker without the setting (Apache Pulsar's
/// default, the suite's broker): the index-level acknowledgements are ignored there, nothing
/// is lost, and the successor gets every id again.
fn batch_index_acks_survive_a_restart(
    default_broker: &ApacheStandalone,
    _: &str,
) -> Result<(), Failed> {
    let enabled = ApacheStandalone::start_with(&["acknowledgmentAtBatchIndexLevelEnabled=true"])
        .map_err(|e| Failed::from(e.to_string()))?;
    let mut seen_after = Vec::new();
    for (run, broker, index_acks) in [
        (0, &enabled, true),
        (1, &enabled, false),
        (2, default_broker, true),
    ] {
        let url = &broker.url();
        let ns = format!("public/batch-index-{run}");
        broker
            .create_namespace(&ns)
            .map_err(|e| Failed::from(e.to_string()))?;
        let mut first = Instance::start_with(url, &ns, "shared", "odd-never", 0, index_acks);
        first.wait_ready()?;
        let producer = Producer::connect(url, &ns);
        const N: u64 = 40;
        producer.publish("jobs", 0..N, 10, 0);
        // Every even id acknowledged (at index level when on), odd ids waiting to be retried.
        let evens_done = first.wait_for(Duration::from_secs(30), |l| {
            l.iter().filter(|x| x.ends_with(" ack")).count() >= (N / 2) as usize
        });
        if !evens_done {
            return Err("the first instance did not acknowledge the even ids".into());
        }
        std::thread::sleep(Duration::from_millis(500));
        first.kill();
        let second = Instance::start_with(url, &ns, "shared", "ack", 0, index_acks);
        second.wait_ready()?;
        second.wait_for(Duration::from_secs(30), |l| {
            l.iter().filter(|x| x.starts_with("call ")).count() >= (N / 2) as usize
        });
        std::thread::sleep(Duration::from_secs(4));
        let ids: BTreeSet<u64> = second.calls().into_iter().map(|(id, _)| id).collect();
        let f = figures(N, &[&first, &second]);
        report(
            &format!("batch_index_acks_survive_a_restart (index acks {index_acks})"),
            &f,
        )?;
        seen_after.push(ids);
    }
    let odd: BTreeSet<u64> = (0..40).filter(|id| id % 2 == 1).collect();
    eprintln!(
        "live_instances batch_index_acks_survive_a_restart: after the kill the successor handled \
         {} ids with batch-index acks, {} without, {} with them on a broker without the setting",
        seen_after[0].len(),
        seen_after[1].len(),
        seen_after[2].len()
    );
    if seen_after[0] != odd {
        return Err(format!(
            "with batch-index acks the successor should get exactly the odd ids, got {:?}",
            seen_after[0]
        )
        .into());
    }
    for run in [1, 2] {
        if seen_after[run].len() != 40 {
            return Err(format!(
                "run {run}: the successor should get every id of the unfinished entries, got {}",
                seen_after[run].len()
            )
            .into());
        }
    }
    Ok(())
}

type CaseFn = fn(&ApacheStandalone, &str) -> Result<(), Failed>;

/// What the Python client reads back after a kill: the ids on the forwarded, dead-letter and
/// retry topics, and those the service's subscription has not acknowledged, by topic.
struct Snapshot {
    forwarded: Vec<u64>,
    dead: BTreeSet<u64>,
    retried: BTreeSet<u64>,
    unacked_in: BTreeSet<u64>,
    unacked_retry: BTreeSet<u64>,
}

/// Read the forwarding topics of namespace `ns` back with the Python client.
fn snapshot(url: &str, ns: &str) -> Result<Snapshot, Failed> {
    let topic = |name: &str| format!("persistent://{ns}/{name}");
    let spec = serde_json::json!({
        "read": {
            "forwarded": topic("jobs-forwarded"),
            "dead": topic("jobs-fwd-dlq"),
            "retried": topic("jobs-fwd-retry"),
        },
        "peek": {
            "topics": [topic("jobs-fwd-in"), topic("jobs-fwd-retry")],
            "subscription": "forwarder",
        },
    });
    let answer = ruststream_test_brokers::python_snapshot(url, Duration::from_secs(2), &spec)
        .map_err(|e| Failed::from(e.to_string()))?;
    let ids = |value: &serde_json::Value| -> Vec<u64> {
        value
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect())
            .unwrap_or_default()
    };
    Ok(Snapshot {
        forwarded: ids(&answer["read"]["forwarded"]),
        dead: ids(&answer["read"]["dead"]).into_iter().collect(),
        retried: ids(&answer["read"]["retried"]).into_iter().collect(),
        unacked_in: ids(&answer["unacked"][topic("jobs-fwd-in")])
            .into_iter()
            .collect(),
        unacked_retry: ids(&answer["unacked"][topic("jobs-fwd-retry")])
            .into_iter()
            .collect(),
    })
}

/// No order the service acknowledged lacks its copy: an order acknowledged on the input topic
/// is forwarded, dead-lettered or on the retry topic; a retry copy acknowledged is forwarded
/// or dead-lettered. The number of orders acknowledged so far.
fn nothing_acknowledged_without_its_copy(
    snapshot: &Snapshot,
    published: u64,
    after: &str,
) -> Result<usize, Failed> {
    let forwarded: BTreeSet<u64> = snapshot.forwarded.iter().copied().collect();
    let copied = |id: &u64| forwarded.contains(id) || snapshot.dead.contains(id);
    let acked_in: Vec<u64> = (0..published)
        .filter(|id| !snapshot.unacked_in.contains(id))
        .collect();
    let missing: Vec<u64> = acked_in
        .iter()
        .filter(|id| !copied(id) && !snapshot.retried.contains(id))
        .copied()
        .collect();
    let missing_retried: Vec<u64> = snapshot
        .retried
        .iter()
        .filter(|id| !snapshot.unacked_retry.contains(id) && !copied(id))
        .copied()
        .collect();
    if !missing.is_empty() || !missing_retried.is_empty() {
        return Err(format!(
            "{after}: acknowledged without its copy: {} orders {:?}, {} retry copies {:?}",
            missing.len(),
            &missing[..missing.len().min(20)],
            missing_retried.len(),
            &missing_retried[..missing_retried.len().min(20)]
        )
        .into());
    }
    Ok(acked_in.len())
}

/// A forwarding service (`forward_jobs`: each order sent on without waiting, acknowledged once
/// the copy is confirmed) on 10,000 orders the Python client published batched, SIGKILLed three
/// times mid-stream and restarted. After each kill the Python client reads back the copies and
/// what the subscription has not acknowledged: nothing acknowledged lacks its copy. At the end
/// every order is acknowledged and forwarded at least once (with `rule`
/// `dead-letter-and-retry`, orders ending in 3 are on the dead-letter topic instead, and those
/// ending in 7 went through the retry topic first).
fn forwarding_survives_sigkills(
    broker: &ApacheStandalone,
    ns: &str,
    rule: &str,
) -> Result<(), Failed> {
    let url = &broker.url();
    const N: u64 = 10_000;
    let start_one = || Instance::start(url, ns, "forward", rule, 1);
    let mut instances = vec![start_one()];
    instances[0].wait_ready()?;
    let entries = ruststream_test_brokers::python_orders(
        url,
        &format!("persistent://{ns}/jobs-fwd-in"),
        N as usize,
    )
    .map_err(|e| Failed::from(e.to_string()))?;
    if entries as u64 >= N {
        return Err(
            format!("the Python client put {N} orders in {entries} entries: not batched").into(),
        );
    }
    let handled =
        |instances: &[Instance]| -> usize { instances.iter().map(|i| i.calls().len()).sum() };
    let mut checked = Vec::new();
    for kill in 1..=3 {
        let so_far = handled(&instances);
        let deadline = Instant::now() + Duration::from_secs(120);
        while handled(&instances) < so_far + 2_000 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        instances.last_mut().expect("one").kill();
        let after = format!("after kill {kill}");
        let acked = nothing_acknowledged_without_its_copy(&snapshot(url, ns)?, N, &after)?;
        checked.push(acked);
        instances.push(start_one());
        instances.last().expect("one").wait_ready()?;
    }
    // The last instance finishes: every order acknowledged (retry copies included).
    let deadline = Instant::now() + Duration::from_secs(240);
    let finished = loop {
        let s = snapshot(url, ns)?;
        if s.unacked_in.is_empty() && s.unacked_retry.is_empty() || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    instances.last_mut().expect("one").terminate()?;
    let acked = nothing_acknowledged_without_its_copy(&finished, N, "at the end")?;
    let forwarded: BTreeSet<u64> = finished.forwarded.iter().copied().collect();
    let expected_dead: BTreeSet<u64> = match rule {
        "dead-letter-and-retry" => (0..N).filter(|id| id % 10 == 3).collect(),
        _ => BTreeSet::new(),
    };
    let not_forwarded: Vec<u64> = (0..N)
        .filter(|id| !forwarded.contains(id) && !expected_dead.contains(id))
        .collect();
    eprintln!(
        "live_instances forwarding ({rule}): {N} orders in {entries} entries; acknowledged with          their copies after each kill: {checked:?}; at the end {acked}; forwarded {} distinct          ({} copies, {} duplicates), dead-lettered {}, through the retry topic {}",
        forwarded.len(),
        finished.forwarded.len(),
        finished.forwarded.len() - forwarded.len(),
        finished.dead.len(),
        finished.retried.len()
    );
    if acked as u64 != N {
        return Err(format!("only {acked} of {N} orders acknowledged at the end").into());
    }
    if !not_forwarded.is_empty() {
        return Err(format!(
            "{} orders never forwarded: {:?}",
            not_forwarded.len(),
            &not_forwarded[..not_forwarded.len().min(20)]
        )
        .into());
    }
    if finished.dead != expected_dead {
        return Err(format!(
            "the dead-letter topic holds {} orders, {} expected",
            finished.dead.len(),
            expected_dead.len()
        )
        .into());
    }
    if rule == "dead-letter-and-retry" && finished.retried.is_empty() {
        return Err("no order went through the retry topic: the case tested nothing".into());
    }
    Ok(())
}

fn forwarding_survives_three_sigkills(broker: &ApacheStandalone, ns: &str) -> Result<(), Failed> {
    forwarding_survives_sigkills(broker, ns, "ack")
}

fn forwarding_with_dead_letters_and_retries_survives_three_sigkills(
    broker: &ApacheStandalone,
    ns: &str,
) -> Result<(), Failed> {
    forwarding_survives_sigkills(broker, ns, "dead-letter-and-retry")
}

const CASES: &[(&str, CaseFn)] = &[
    ("shared_sigkill_mid_stream", shared_sigkill_mid_stream),
    (
        "durable_retries_survive_a_sigkill",
        durable_retries_survive_a_sigkill,
    ),
    (
        "failover_sigkill_standby_takes_over",
        failover_sigkill_standby_takes_over,
    ),
    (
        "exclusive_refuses_a_second_instance",
        exclusive_refuses_a_second_instance,
    ),
    (
        "key_shared_each_key_on_one_instance",
        key_shared_each_key_on_one_instance,
    ),
    (
        "shared_restart_after_sigkill_during_waits",
        shared_restart_after_sigkill_during_waits,
    ),
    ("fault_suite", fault_suite),
    (
        "forwarding_survives_three_sigkills",
        forwarding_survives_three_sigkills,
    ),
    (
        "forwarding_with_dead_letters_and_retries_survives_three_sigkills",
        forwarding_with_dead_letters_and_retries_survives_three_sigkills,
    ),
    (
        "batch_index_acks_survive_a_restart",
        batch_index_acks_survive_a_restart,
    ),
];

fn main() -> ExitCode {
    apache_suite::run_one_at_a_time("instances", CASES, |case, apache, ns| case(apache, &ns))
}
