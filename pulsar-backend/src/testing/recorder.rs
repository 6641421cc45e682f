//! Collects the drivers' call records for a test harness.

use std::sync::Mutex;

use crate::observe::{Call, Observer};

/// Every handler call, in the order the drivers reported them.
#[derive(Default)]
pub(crate) struct Recorder {
    records: Mutex<Vec<Call>>,
}

impl Recorder {
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.lock().clone()
    }

    /// The calls of handler `name`, in order.
    pub(crate) fn calls_of(&self, name: &str) -> Vec<Call> {
        self.lock()
            .iter()
            .filter(|c| c.handler() == name)
            .cloned()
            .collect()
    }

    /// The latest call, if any.
    pub(crate) fn last(&self) -> Option<Call> {
        self.lock().last().cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Call>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Observer for Recorder {
    fn called(&self, call: Call) {
        self.lock().push(call);
    }
}
