//! Starting, running and stopping an app in a process.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use futures::channel::oneshot;
use futures::future::{select, Either};
use ruststream::app::{App, RunningApp};
use ruststream::runtime::{Hybrid, Runtime, Spawn};
use ruststream::{ManualClock, Timer};

use crate::cli::{Cli, USAGE};

/// Run `app` as a process: parse the command line, set up logging, start, wait for a stop
/// signal (or, with `--embedded`, for nothing left to do), stop gracefully.
///
/// `runtime` is the adapter's; `block_on` runs a future to completion on it.
pub fn main<A, F>(
    app: F,
    runtime: Arc<dyn Runtime>,
    block_on: impl FnOnce(Pin<Box<dyn Future<Output = ExitCode>>>) -> ExitCode,
) -> ExitCode
where
    A: App,
    F: FnOnce() -> A,
{
    let cli = match Cli::parse(std::env::args().skip(1)) {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if cli.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let clock = cli.embedded.then(ManualClock::new);
    crate::logging::init(clock.clone());
    let app = app();
    block_on(Box::pin(run(app, cli, runtime, clock)))
}

async fn run<A: App>(
    app: A,
    cli: Cli,
    runtime: Arc<dyn Runtime>,
    clock: Option<ManualClock>,
) -> ExitCode {
    let mut parts = app.into_parts();
    let name = parts.info.name().to_owned();
    let runtime: Arc<dyn Runtime> = match &clock {
        Some(clock) => {
            for broker in &mut parts.brokers {
                if !broker.embed() {
                    eprintln!(
                        "{name}: the {} broker has no in-process stand-in; run without \
                         --embedded",
                        broker.kind()
                    );
                    return ExitCode::FAILURE;
                }
            }
            Arc::new(Hybrid::new(SpawnOf(runtime), clock.clone()))
        }
        None => runtime,
    };
    let stop = shutdown_signal();
    tracing::info!(service = %name, version = parts.info.version(), "starting");
    let app = match parts.start(runtime, None).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (topic, file) in &cli.publish {
        if let Err(e) = publish_file(&app, topic, file).await {
            eprintln!("{name}: {e}");
            app.stop().await;
            return ExitCode::FAILURE;
        }
    }
    match clock {
        Some(clock) => {
            let done = Box::pin(run_until_quiet(&app, &clock));
            if let Either::Right(_) = select(done, stop).await {
                tracing::info!("stop signal received");
            }
        }
        None => {
            let _ = stop.await;
            tracing::info!("stop signal received");
        }
    }
    tracing::info!("stopping");
    app.stop().await;
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// With a virtual clock: settle, jump to the next deadline (the clock's sleeps and the
/// brokers' own timers alike), repeat until none is left.
async fn run_until_quiet(app: &RunningApp, clock: &ManualClock) {
    loop {
        app.idle().await;
        let busy = app.brokers().iter().any(|b| b.in_flight() > 0) || clock.unobserved() > 0;
        if busy {
            ruststream::runtime::yield_now().await;
            continue;
        }
        let next = app
            .brokers()
            .iter()
            .filter_map(|b| b.next_deadline())
            .chain(clock.next_deadline())
            .min();
        let Some(at) = next else {
            tracing::info!(
                at = ?clock.now().elapsed_since_origin(),
                "nothing left to do: every message is settled and no timer is pending"
            );
            return;
        };
        clock.advance_to(at);
        for broker in app.brokers() {
            broker.fire_due();
        }
    }
}

async fn publish_file(app: &RunningApp, topic: &str, file: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read `{file}` for --publish {topic}={file}: {e}"))?;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        app.publish(topic, line.as_bytes().to_vec(), Vec::new(), None)
            .await
            .map_err(|e| format!("{file}:{}: cannot publish to `{topic}`: {e}", n + 1))?;
        tracing::info!(%topic, payload = line, "published");
    }
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
fn shutdown_signal() -> oneshot::Receiver<()> {
    let (tx, rx) = oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    if let Err(e) = ctrlc::set_handler(move || {
        if let Some(tx) = tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send(());
        }
    }) {
        tracing::warn!("cannot watch SIGINT/SIGTERM ({e}); stop the service by killing it");
    }
    rx
}

/// The spawning half of a runtime.
struct SpawnOf(Arc<dyn Runtime>);

impl Spawn for SpawnOf {
    fn spawn(&self, task: ruststream::runtime::BoxTask) {
        self.0.spawn(task)
    }
}
