//! One instance of the scripted service, as its own process, for the live tests that need
//! several instances, crashes and restarts (`tests/tests/live_instances.rs`,
//! `tests/tests/live_exactly_once.rs`).
//!
//! Configured by environment variables (all required but `INSTANCE_HOLD_MS`,
//! `INSTANCE_BATCH_INDEX_ACK` and `INSTANCE_TXN_TIMEOUT_MS`):
//! - `INSTANCE_URL`, `INSTANCE_NAMESPACE`: the broker and the namespace of short topic names;
//! - `INSTANCE_HANDLER`: `shared`, `failover`, `exclusive`, `key_shared`, `later` or `forward`
//!   (which scripted subscription it mounts; `later` with the retry topic `jobs-later-retry`;
//!   `forward` sends each job it acknowledges on to `jobs-forwarded`, with the dead-letter topic
//!   `jobs-fwd-dlq` and the retry topic `jobs-fwd-retry`; `tx-forward` and `forward-plain`
//!   mount the exactly-once service, `exactly_once_forward`, which sends each job on to
//!   `eo-out`: `tx-forward` registered `.transactional_with(..)`, `forward-plain` not);
//! - `INSTANCE_RULE`: `ack` (every delivery), `odd-retry-after-once` (odd ids return
//!   `retry_after(1 s)` on their first delivery, then `ack`), `odd-retry-later-once` (odd ids
//!   return the durable `retry_later(3 s)` on their first delivery, then `ack`),
//!   `odd-never` (odd ids always return `retry_after(2 s)`, even ids `ack`), or
//!   `dead-letter-and-retry` (ids ending in 3 return `dead_letter("poison")`, ids ending in 7
//!   `retry_later(1 s)` on their first delivery to the process, the rest `ack`);
//! - `INSTANCE_HOLD_MS`: how long each handler call takes (a blocking pause), default 0;
//! - `INSTANCE_BATCH_INDEX_ACK=1`: acknowledge at batch-index level too;
//! - `INSTANCE_TXN_TIMEOUT_MS`: the transaction timeout of `tx-forward`, default 10,000 (short,
//!   so that the broker soon aborts what a killed instance left open).
//!
//! It prints `ready` once subscribed, then one line per handler call, *before* the outcome is
//! returned to the framework, so that a process killed at any point has printed every outcome
//! it produced: `call <id> <outcome>`. SIGTERM or SIGINT stop
//! it gracefully (handlers finish, acknowledgements are flushed); it then prints `stopped`.
//! Startup errors are printed as `error <text>` with exit code 2.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use ruststream::transaction::TransactionPolicy;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::LiveApp;
use ruststream_tests::scenario::{
    app, exactly_once_forward, exclusive, failover, forward_jobs, key_shared, later, shared, Plan,
    Script,
};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        println!("error {name} is not set");
        std::process::exit(2)
    })
}

fn main() {
    let url = var("INSTANCE_URL");
    let namespace = var("INSTANCE_NAMESPACE");
    let handler = var("INSTANCE_HANDLER");
    let rule = var("INSTANCE_RULE");
    let hold = Duration::from_millis(
        std::env::var("INSTANCE_HOLD_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    let txn_timeout = Duration::from_millis(
        std::env::var("INSTANCE_TXN_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10_000),
    );
    let poison = rule == "dead-letter-and-retry";
    let (odd_once, odd_never) = match rule.as_str() {
        "ack" | "dead-letter-and-retry" => (None, false),
        "odd-retry-after-once" => (
            Some(HandlerOutcome::retry_after(Duration::from_secs(1))),
            false,
        ),
        "odd-retry-later-once" => (
            Some(HandlerOutcome::retry_later(Duration::from_secs(3))),
            false,
        ),
        "odd-never" => (None, true),
        other => {
            println!("error unknown INSTANCE_RULE {other}");
            std::process::exit(2)
        }
    };
    let script = Script::by_job(move |id, attempt| {
        if !hold.is_zero() {
            std::thread::sleep(hold);
        }
        let outcome = if poison && id % 10 == 3 {
            HandlerOutcome::dead_letter("poison")
        } else if poison && id % 10 == 7 && attempt == 0 {
            HandlerOutcome::retry_later(Duration::from_secs(1))
        } else if let (Some(first), 1, 0) = (odd_once, id % 2, attempt) {
            first
        } else if odd_never && id % 2 == 1 {
            HandlerOutcome::retry_after(Duration::from_secs(2))
        } else {
            HandlerOutcome::ack()
        };
        // Printed before the framework sees the outcome.
        println!("call {id} {}", outcome.name());
        outcome
    });
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    ctrlc::set_handler(move || {
        let _ = stop_tx.send(());
    })
    .expect("signal handler");
    let runtime: Arc<dyn ruststream::runtime::Runtime> =
        Arc::new(ruststream_smol::SmolRuntime::global());
    smol::block_on(async move {
        let mount = |b: &mut ruststream_pulsar::PulsarBroker<Plan>| match handler.as_str() {
            "shared" => {
                b.include(shared);
            }
            "failover" => {
                b.include(failover);
            }
            "exclusive" => {
                b.include(exclusive);
            }
            "key_shared" => {
                b.include(key_shared);
            }
            "later" => {
                b.include(later).retry_topic("jobs-later-retry");
            }
            "forward" => {
                b.include(forward_jobs)
                    .dead_letter("jobs-fwd-dlq")
                    .retry_topic("jobs-fwd-retry");
            }
            "tx-forward" => {
                b.include(exactly_once_forward)
                    .transactional_with(TransactionPolicy::new().timeout(txn_timeout));
            }
            "forward-plain" => {
                b.include(exactly_once_forward);
            }
            other => {
                println!("error unknown INSTANCE_HANDLER {other}");
                std::process::exit(2)
            }
        };
        // A second Exclusive instance is refused for as long as the first lives: it gets the
        // production bound, so that the refusal comes when a user would see it.
        let bound = if handler == "exclusive" {
            ruststream_pulsar::DEFAULT_CONNECT_TIMEOUT
        } else {
            ruststream_pulsar::testing::LIVE_CONNECT_TIMEOUT
        };
        let started = LiveApp::with_state(app(mount), Plan::new(script), runtime.clone())
            .url(url)
            .namespace(namespace)
            .connect_timeout(bound)
            .batch_index_acknowledgement(
                std::env::var("INSTANCE_BATCH_INDEX_ACK").is_ok_and(|v| v == "1"),
            )
            .await;
        let live = match started {
            Ok(live) => live,
            Err(e) => {
                println!("error {e}");
                std::process::exit(2)
            }
        };
        println!("ready");
        let _ = std::io::stdout().flush();
        // Wait for a signal without blocking the executor.
        while stop_rx.try_recv().is_err() {
            runtime.sleep(Duration::from_millis(20)).await;
        }
        live.stop().await;
        println!("stopped");
    });
}
