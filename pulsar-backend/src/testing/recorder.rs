//! Collects the drivers' call records for a test harness.

use std::sync::Mutex;

use super::Call;
use crate::observe::{CallRecord, Observer};

/// Every handler call, in the order the drivers reported them.
#[derive(Default)]
pub(crate) struct Recorder(Mutex<Vec<CallRecord>>);

impl Recorder {
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .map(Call::new)
            .collect()
    }
}

impl Observer for Recorder {
    fn called(&self, record: CallRecord) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
    }
}
