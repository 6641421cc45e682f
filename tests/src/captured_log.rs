//! What a test's tracing subscriber wrote, kept in memory to be read back.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

/// A log writer for `tracing_subscriber::fmt().with_writer(..)`: each clone writes to the
/// same buffer, which a test reads back with [`CapturedLog::take`].
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl CapturedLog {
    /// What was logged since the last call.
    pub fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Install the process-wide subscriber, writing here at `filter` (an `EnvFilter`
    /// directive) without colours. A test binary of its own calls it once.
    pub fn install(&self, filter: &str) {
        let sink = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .with_env_filter(filter)
            .init();
    }
}

impl Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (self.0.lock().unwrap_or_else(PoisonError::into_inner)).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
