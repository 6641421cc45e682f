//! Starting, running and stopping an app in a process.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use futures::channel::mpsc;
use futures::future::{select, Either};
use futures::StreamExt;
use ruststream::app::{App, RunningApp, StartContext, VirtualTime};
use ruststream::runtime::{Runtime, Spawn, WithClock};
use ruststream::ManualClock;

use crate::cli::{Cli, USAGE};

/// Run `app` as a process: parse the command line, set up logging, start, wait for a stop
/// signal (or, with `--embedded`, for nothing left to do), stop gracefully.
///
/// Called by the `main` functions of [`on_runtime`](crate::on_runtime); call it directly to run
/// on a runtime of your own.
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
    let parts = app.into_parts();
    let name = parts.info.name().to_owned();
    let context = match &clock {
        Some(clock) => StartContext::new(Arc::new(WithClock::new(SpawnOf(runtime), clock.clone())))
            .in_process(),
        None => StartContext::new(runtime),
    };
    let mut stop = shutdown_signal();
    tracing::info!(service = %name, version = parts.info.version(), "starting");
    let app = match parts.start(context, None).await {
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
    let mut failed = false;
    match clock {
        Some(clock) => {
            let time = VirtualTime::new(clock);
            let done = Box::pin(time.run_until_quiet(&app));
            let outcome = select(done, stop.next()).await;
            match outcome {
                Either::Left((Ok(at), _)) => tracing::info!(
                    at = ?at.elapsed_since_origin(),
                    "nothing left to do: every message is settled and no timer is pending"
                ),
                Either::Left((Err(stalled), _)) => {
                    tracing::error!("{stalled}");
                    eprintln!("{name}: {stalled}");
                    failed = true;
                }
                Either::Right(_) => tracing::info!("stop signal received"),
            }
        }
        None => {
            let _ = stop.next().await;
            tracing::info!("stop signal received");
        }
    }
    tracing::info!("stopping; a second stop signal ends the service at once");
    let stopping = Box::pin(app.stop());
    match select(stopping, stop.next()).await {
        Either::Left(_) => tracing::info!("stopped"),
        Either::Right((_, stopping)) => {
            // The graceful stop is dropped mid-way: nothing more is flushed, and what was not
            // acknowledged comes back, as after a crash.
            drop(stopping);
            tracing::warn!("second stop signal: ended without waiting for handlers");
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
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

/// Yields on every SIGINT or SIGTERM.
fn shutdown_signal() -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded();
    if let Err(e) = ctrlc::set_handler(move || {
        let _ = tx.unbounded_send(());
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

    fn flavor(&self) -> ruststream::runtime::Flavor {
        self.0.flavor()
    }
}
