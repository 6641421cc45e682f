//! The process's log: one place where the service's tracing events and its libraries' `log`
//! records (pulsar-rs's reconnects and connection errors) are filtered and written.

use std::io::IsTerminal;

use ruststream::{ManualClock, Timer};
use tracing::level_filters::LevelFilter;
use tracing_log::AsLog;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use crate::log_bridge::LogBridge;

/// Log to stderr, filtered by `RUST_LOG` (default `info`); with `clock`, timestamps are the
/// virtual time of an embedded run.
pub(crate) fn init(clock: Option<ManualClock>) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::stderr().is_terminal();
    install(filter, clock, ansi, std::io::stderr);
}

/// [`init`] with the filter and the writer given, so that a test can read what is logged.
///
/// A service that installed its own tracing subscriber keeps it, and one that installed its
/// own `log` logger keeps that: both are process-wide and can be installed only once.
fn install<W>(filter: EnvFilter, clock: Option<ManualClock>, ansi: bool, writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer);
    // `finish` + `set_global_default` rather than `try_init`, which would install a plain
    // `LogTracer` of its own in place of the bridge.
    let _ = match clock {
        Some(clock) => {
            tracing::subscriber::set_global_default(builder.with_timer(VirtualTime(clock)).finish())
        }
        None => tracing::subscriber::set_global_default(builder.finish()),
    };
    if log::set_boxed_logger(Box::new(LogBridge::new())).is_ok() {
        // The subscriber's most verbose level, now that it is installed: `log` then skips
        // whatever the filter would drop (pulsar-rs's debug records at `info`) at the call.
        log::set_max_level(LevelFilter::current().as_log());
    }
}

/// Log timestamps on the virtual clock, as time since start.
struct VirtualTime(ManualClock);

impl tracing_subscriber::fmt::time::FormatTime for VirtualTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        let t = self.0.now().elapsed_since_origin();
        write!(w, "t=+{:>7.3}s", t.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Log lines kept in memory.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Captured;

        fn make_writer(&'w self) -> Captured {
            self.clone()
        }
    }

    // The only test of this binary that installs the process-wide subscriber and logger.
    #[test]
    fn pulsar_rs_records_reach_the_log_at_their_level_through_the_same_filter() {
        let log = Captured::default();
        install(
            EnvFilter::new("info,pulsar::connection=trace"),
            None,
            false,
            log.clone(),
        );
        log::warn!(
            target: "pulsar::connection_manager",
            "connection error, retrying connection to pulsar://127.0.0.1:6650/ after 20ms"
        );
        log::error!(target: "pulsar::consumer::engine", "could not ask for redelivery");
        log::debug!(target: "pulsar::consumer::engine", "consumer engine: received message");
        log::debug!(target: "pulsar::connection", "Connecting to pulsar://127.0.0.1:6650/");
        log::trace!(target: "pulsar::connection", "connection message: CONNECT with the token");
        let text = log.text();
        let line = |needle: &str| text.lines().find(|l| l.contains(needle)).unwrap_or("");
        let warn = line("retrying connection");
        assert!(
            warn.contains(" WARN ") && warn.contains("pulsar::connection_manager"),
            "the warning is logged at WARN under its target:\n{text}"
        );
        assert!(
            line("could not ask for redelivery").contains("ERROR"),
            "{text}"
        );
        assert!(
            !text.contains("received message"),
            "debug records stay hidden at `info`:\n{text}"
        );
        assert!(
            text.contains("Connecting to"),
            "a target the filter opens shows its debug records:\n{text}"
        );
        assert!(
            !text.contains("CONNECT with the token"),
            "pulsar-rs's trace records are withheld even where the filter opens them:\n{text}"
        );
    }
}
