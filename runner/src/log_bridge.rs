//! `log` records forwarded into tracing.
//!
//! pulsar-rs logs through the `log` crate, not tracing: without this bridge its reconnects
//! and connection errors reach no log at all, and a broker outage passes in silence. The
//! records become tracing events, filtered by the same `RUST_LOG` as the service's own.
//!
//! pulsar-rs's trace records are never forwarded, whatever the filter says: they dump whole
//! wire commands, and the CONNECT command carries the authentication token.

use log::{Level, Log, Metadata, Record};
use tracing_log::LogTracer;

/// The `log` logger of the process: [`LogTracer`], less pulsar-rs's trace records.
pub(crate) struct LogBridge(LogTracer);

impl LogBridge {
    /// A bridge into whichever tracing subscriber is the default when a record is logged.
    pub(crate) fn new() -> Self {
        LogBridge(LogTracer::new())
    }

    /// Whether a record may carry a secret and so is never forwarded: pulsar-rs's trace
    /// records print the commands it sends, the token among them.
    fn withheld(metadata: &Metadata<'_>) -> bool {
        let target = metadata.target();
        metadata.level() == Level::Trace && (target == "pulsar" || target.starts_with("pulsar::"))
    }
}

impl Log for LogBridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        !Self::withheld(metadata) && self.0.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if !Self::withheld(record.metadata()) {
            self.0.log(record);
        }
    }

    fn flush(&self) {
        self.0.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(level: Level, target: &str) -> Metadata<'_> {
        Metadata::builder().level(level).target(target).build()
    }

    #[test]
    fn only_pulsar_rs_trace_records_are_withheld() {
        assert!(LogBridge::withheld(&metadata(
            Level::Trace,
            "pulsar::connection"
        )));
        assert!(LogBridge::withheld(&metadata(Level::Trace, "pulsar")));
        for level in [Level::Debug, Level::Info, Level::Warn, Level::Error] {
            assert!(!LogBridge::withheld(&metadata(
                level,
                "pulsar::connection_manager"
            )));
        }
        assert!(!LogBridge::withheld(&metadata(Level::Trace, "pulsar_lite")));
        assert!(!LogBridge::withheld(&metadata(
            Level::Trace,
            "hyper::proto"
        )));
    }
}
