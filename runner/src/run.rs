//! Starting, running and stopping an app in a process.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use futures::channel::mpsc;
use futures::future::{select, Either};
use futures::StreamExt;
use ruststream::app::{
    App, AppParts, RunningApp, SettingSpec, Settings, StartContext, VirtualTime,
};
use ruststream::message::Message;
use ruststream::publish::{Pipeline, Receipt};
use ruststream::runtime::{Runtime, Spawn, WithClock};
use ruststream::ManualClock;

use crate::cli::{self, Cli, DeadLetterCommand, RunnerCommand};
use crate::flags::ServiceFlags;

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
    process(app(), runtime, block_on, None)
}

/// [`main`], with the service's own flags on the command line (read them with
/// [`args`](crate::args)).
pub fn main_with_flags<A, F>(
    app: F,
    runtime: Arc<dyn Runtime>,
    block_on: impl FnOnce(Pin<Box<dyn Future<Output = ExitCode>>>) -> ExitCode,
    flags: ServiceFlags,
) -> ExitCode
where
    A: App,
    F: FnOnce() -> A,
{
    process(app(), runtime, block_on, Some(flags))
}

fn process<A: App>(
    app: A,
    runtime: Arc<dyn Runtime>,
    block_on: impl FnOnce(Pin<Box<dyn Future<Output = ExitCode>>>) -> ExitCode,
    flags: Option<ServiceFlags>,
) -> ExitCode {
    // The app is described first (no I/O happens until it starts): its brokers declare the
    // settings the command line offers.
    let parts = app.into_parts();
    let mut specs: Vec<SettingSpec> = Vec::new();
    for broker in &parts.brokers {
        for spec in broker.settings() {
            if !specs.iter().any(|s| s.key == spec.key) {
                specs.push(*spec);
            }
        }
    }
    let command = cli::command(
        &parts.info,
        &specs,
        flags.as_ref().map(|f| f.command.clone()),
    );
    let parsed = match cli::parse(command, &specs, std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(e) => {
            // `--help` and `--version` print to stdout and succeed; mistakes go to stderr.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Some(flags) = &flags {
        if let Err(e) = (flags.store)(&parsed.matches) {
            let _ = e.print();
            return ExitCode::from(2);
        }
    }
    if let Some(RunnerCommand::Asyncapi(args)) = &parsed.cli.command {
        return crate::asyncapi::command::run(&parts, &parsed.settings, args);
    }
    if let Some(RunnerCommand::DeadLetter(DeadLetterCommand::Replay(args))) = &parsed.cli.command {
        crate::logging::init(None);
        let args = args.clone();
        let replay = crate::replay::replay(parts, parsed.cli, args, parsed.settings, runtime);
        return block_on(Box::pin(replay));
    }
    let clock = parsed.cli.embedded.then(ManualClock::new);
    crate::logging::init(clock.clone());
    block_on(Box::pin(run(
        parts,
        parsed.cli,
        parsed.settings,
        runtime,
        clock,
    )))
}

async fn run<S: Send + Sync + 'static>(
    parts: AppParts<S>,
    cli: Cli,
    settings: Settings,
    runtime: Arc<dyn Runtime>,
    clock: Option<ManualClock>,
) -> ExitCode {
    let name = parts.info.name().to_owned();
    // The document is built before the brokers start (starting consumes them).
    #[cfg(feature = "http")]
    let asyncapi = match cli.http_asyncapi {
        false => None,
        true => match crate::asyncapi::command::describe(&parts, &settings) {
            Ok(document) => Some(crate::http::Served::of(&document)),
            Err(e) => {
                eprintln!("{name}: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let context = match &clock {
        Some(clock) => StartContext::new(Arc::new(WithClock::new(SpawnOf(runtime), clock.clone())))
            .in_process(),
        None => StartContext::new(runtime),
    }
    .with(settings);
    let mut stop = shutdown_signal();
    #[cfg(feature = "http")]
    let endpoint = match cli
        .http
        .as_deref()
        .map(|addr| crate::http::Endpoint::start(addr, asyncapi))
    {
        Some(Ok(endpoint)) => {
            eprintln!("{name}: http endpoint on {}", endpoint.addr());
            Some(endpoint)
        }
        Some(Err(e)) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
        None => None,
    };
    tracing::info!(service = %name, version = parts.info.version(), "starting");
    let app = match parts.start(context, None).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(feature = "http")]
    if let Some(endpoint) = &endpoint {
        endpoint.set_readiness(Some(app.health()));
    }
    let time = clock.map(VirtualTime::new);
    for (topic, file) in &cli.publish {
        let publishing = Box::pin(publish_file(
            &app,
            topic,
            file,
            cli.publish_source,
            time.as_ref(),
        ));
        let failure = match select(publishing, stop.next()).await {
            Either::Left((Ok(()), _)) => None,
            Either::Left((Err(e), _)) => Some(e),
            Either::Right(_) => Some(format!(
                "stop signal received while publishing `{file}` to `{topic}`"
            )),
        };
        if let Some(e) = failure {
            tracing::error!("{e}");
            eprintln!("{name}: {e}");
            app.stop().await;
            return ExitCode::FAILURE;
        }
    }
    let mut failed = false;
    match time {
        Some(time) => {
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
    #[cfg(feature = "http")]
    if let Some(endpoint) = &endpoint {
        endpoint.set_readiness(None);
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

/// The property `--publish-source` sets on each message `--publish` sends: `FILE:LINE` of the
/// line it came from.
pub const SOURCE_PROPERTY: &str = "source";

/// `FILE:LINE`, in one allocation and without `core::fmt`, whose machinery is costly for a
/// string built once per published line.
fn source_of(file: &str, line: usize) -> String {
    let mut number = itoa::Buffer::new();
    let line = number.format(line);
    let mut source = String::with_capacity(file.len() + 1 + line.len());
    source.push_str(file);
    source.push(':');
    source.push_str(line);
    source
}

/// How many lines `--publish` sends to an embedded broker before it waits for the app to have
/// handled everything it can (a [`VirtualTime::settle`]): the most messages published and not
/// yet handled the in-process Pulsar holds, so that a file of any size runs in flat memory.
/// Large enough that the wait costs nothing per message, small enough that one window is far
/// below the deliveries a settle may hand out at one instant
/// ([`DEFAULT_MAX_HANDLED_PER_INSTANT`](ruststream::app::DEFAULT_MAX_HANDLED_PER_INSTANT)).
pub const PUBLISH_WINDOW: usize = 1_000;

/// Publish each line of `file` to `topic`, the line as it is; with `source`, with the property
/// [`SOURCE_PROPERTY`] too. Off by default: the property's list, name and value are allocated
/// for every message, more than the runner otherwise spends on a line, and a replayed line is published as it was.
///
/// The file is read as it is published, a line at a time. With `time` (`--embedded`), every
/// [`PUBLISH_WINDOW`] lines it waits until the app has handled what it can at this instant, so
/// handlers run while the file is published and the in-process Pulsar holds at most a window
/// of unhandled messages (plus those waiting for a deadline); each publish is stored at the
/// call. On a real broker the publishes are pipelined: each line is handed to the producer
/// (which batches) without waiting for the broker's receipt, as many in flight as the
/// producers hold, and the receipts are counted as they come (a [`Pipeline`]); the first
/// failure stops the file and is reported with its line, and the file ends once every line
/// is answered.
async fn publish_file(
    app: &RunningApp,
    topic: &str,
    file: &str,
    source: bool,
    time: Option<&VirtualTime>,
) -> Result<(), String> {
    let cannot_read =
        |e: std::io::Error| format!("cannot read `{file}` for --publish {topic}={file}: {e}");
    let mut reader = std::fs::File::open(file)
        .map(std::io::BufReader::new)
        .map_err(cannot_read)?;
    // Named by every message of the file without a copy each: a handful of command-line
    // topics, kept for the process's life.
    let topic: &'static str = Box::leak(topic.to_owned().into_boxed_str());
    let mut published = 0usize;
    // Bytes, not a `String`: a payload is bytes, and checking each line's UTF-8 (then trimming
    // Unicode whitespace) costs more than the rest of reading it.
    let mut line = Vec::new();
    let mut n = 0usize;
    // On a real broker, the receipts of the lines in flight.
    let pipeline = time.is_none().then(Pipeline::new);
    let started = std::time::Instant::now();
    loop {
        line.clear();
        let read = std::io::BufRead::read_until(&mut reader, b'\n', &mut line).map_err(|e| {
            format!(
                "{file}:{}: cannot read for --publish {topic}={file}: {e}",
                n + 1
            )
        })?;
        if read == 0 {
            break;
        }
        n += 1;
        let text = line.trim_ascii();
        if text.is_empty() || text.starts_with(b"#") {
            continue;
        }
        let properties = if source {
            // Where the message came from, for the handler to log or trace back.
            vec![(SOURCE_PROPERTY.to_owned(), source_of(file, n))]
        } else {
            Vec::new()
        };
        let mut message = Message::new(topic, text.to_vec());
        message.properties = properties;
        match &pipeline {
            // Stored at the call: nothing to pipeline.
            None => {
                app.publish(message)
                    .await
                    .map_err(|e| format!("{file}:{n}: cannot publish to `{topic}`: {e}"))?;
            }
            Some(pipeline) => {
                let receipt = Receipt::to(pipeline.confirm(n as u64));
                let sent = app.send(message, receipt).await;
                if sent.is_err() || pipeline.failure().is_some() {
                    break;
                }
            }
        }
        tracing::debug!(%topic, payload = %String::from_utf8_lossy(text), "published");
        published += 1;
        if let Some(time) = time {
            if published.is_multiple_of(PUBLISH_WINDOW) {
                time.settle(app).await.map_err(|stalled| {
                    format!("{stalled} (while publishing `{file}`, after line {n})")
                })?;
            }
        }
    }
    if let Some(pipeline) = &pipeline {
        pipeline.drained().await;
        if let Some((line, e)) = pipeline.failure() {
            return Err(format!("{file}:{line}: cannot publish to `{topic}`: {e}"));
        }
    }
    // One line per file, not per message: a file may hold thousands. The seconds are the
    // wall clock's, from the first line read to the last receipt.
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(%topic, file, messages = published, seconds, "published");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_file_colon_line_in_a_string_of_its_exact_size() {
        let source = source_of("orders.jsonl", 1234);
        assert_eq!(source, "orders.jsonl:1234");
        assert_eq!(source.capacity(), source.len());
    }
}
