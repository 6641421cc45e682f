//! `<service> dead-letter replay`: a replay on the app's broker, its steps and summary printed.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use futures::channel::oneshot;
use futures::future::{BoxFuture, Shared};
use futures::FutureExt;
use ruststream::app::{AppParts, Settings, StartContext};
use ruststream::replay::{Replay, ReplayError};
use ruststream::runtime::Runtime;

use crate::cli::{Cli, ReplayArgs};

/// Completes at the first SIGINT or SIGTERM; clones complete together.
type StopSignal = Shared<BoxFuture<'static, ()>>;

/// Run the replay `args` ask for on the first of the app's brokers that has one, connected as
/// `run` would connect it (`settings`: `--pulsar-url` and the rest), or with `--embedded` on
/// its in-process stand-in. Each step goes to stdout as a line, then the summary; the exit
/// code is non-zero if a copy failed or the replay could not run.
pub(crate) async fn replay<S: Send + Sync + 'static>(
    parts: AppParts<S>,
    cli: Cli,
    args: ReplayArgs,
    settings: Settings,
    runtime: Arc<dyn Runtime>,
) -> ExitCode {
    let name = parts.info.name().to_owned();
    if let Some(flag) = run_only_flag(&cli) {
        eprintln!("{name}: {flag} applies to `run`, not to `dead-letter replay`");
        return ExitCode::from(2);
    }
    let mut context = StartContext::new(runtime).with(settings);
    if cli.embedded {
        context = context.in_process();
        println!(
            "--embedded: the in-process Pulsar starts empty, so there is nothing to replay from \
             this process; in tests, call ruststream_pulsar::replay::run with the TestApp's \
             in-process Pulsar"
        );
    }
    let stop = stop_signal(&name);
    let mut outcome = Err(ReplayError::NoBroker);
    for broker in parts.brokers {
        let replay = Replay::new(args.options())
            .on_event(|event| println!("{event}"))
            .stop_when(stop.clone());
        outcome = broker.replay_dead_letters(replay, context.clone()).await;
        if !matches!(outcome, Err(ReplayError::Unsupported { .. })) {
            break;
        }
    }
    match outcome {
        Ok(summary) => {
            println!("summary: {summary}");
            if summary.failed > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A flag of `run` given to the replay, which would ignore it.
fn run_only_flag(cli: &Cli) -> Option<&'static str> {
    if !cli.publish.is_empty() {
        return Some("--publish");
    }
    #[cfg(feature = "http")]
    if cli.http.is_some() {
        return Some("--http");
    }
    None
}

/// Completes at the first SIGINT or SIGTERM, after which the replay finishes the message in
/// flight and prints its summary; a second signal ends the process at once.
fn stop_signal(name: &str) -> StopSignal {
    let (tx, rx) = oneshot::channel::<()>();
    let first = Mutex::new(Some(tx));
    let name = name.to_owned();
    let watched =
        ctrlc::set_handler(
            move || match first.lock().unwrap_or_else(|e| e.into_inner()).take() {
                Some(tx) => {
                    eprintln!(
                        "{name}: stop signal received: stopping after the message in flight; a \
                     second signal ends at once (that message may then be moved again by the \
                     next replay)"
                    );
                    let _ = tx.send(());
                }
                None => {
                    eprintln!("{name}: second stop signal: ending at once");
                    std::process::exit(130);
                }
            },
        );
    if let Err(e) = watched {
        tracing::warn!("cannot watch SIGINT/SIGTERM ({e}); stop the replay by killing it");
    }
    // A sender dropped without a signal (no handler) must not stop the replay.
    async move {
        if rx.await.is_err() {
            futures::future::pending::<()>().await;
        }
    }
    .boxed()
    .shared()
}
