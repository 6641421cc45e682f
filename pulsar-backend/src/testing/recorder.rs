//! Collects the drivers' call records for a test harness.

use std::sync::Mutex;

use super::Call;
use crate::observe::{CallRecord, Observer};

/// Every handler call, in the order the drivers reported them.
#[derive(Default)]
pub(crate) struct Recorder {
    records: Mutex<Vec<CallRecord>>,
}

impl Recorder {
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.lock().iter().cloned().map(Call::new).collect()
    }

    /// The latest call, if any.
    pub(crate) fn last(&self) -> Option<Call> {
        self.lock().last().cloned().map(Call::new)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CallRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Observer for Recorder {
    fn called(&self, record: CallRecord) {
        self.lock().push(record);
    }
}
