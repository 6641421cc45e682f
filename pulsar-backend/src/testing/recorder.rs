//! Collects the drivers' call records for a test harness.

use std::sync::Mutex;
use std::task::Waker;

use super::Call;
use crate::observe::{CallRecord, Observer};

/// Every handler call, in the order the drivers reported them, and the tasks waiting for the
/// next one.
#[derive(Default)]
pub(crate) struct Recorder {
    records: Mutex<Vec<CallRecord>>,
    waiting: Mutex<Vec<Waker>>,
}

impl Recorder {
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.lock().iter().cloned().map(Call::new).collect()
    }

    /// How many calls were recorded.
    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    /// The latest call, if any.
    pub(crate) fn last(&self) -> Option<Call> {
        self.lock().last().cloned().map(Call::new)
    }

    /// Wake `waker` at the next call.
    pub(crate) fn wake_on_next(&self, waker: &Waker) {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(waker.clone());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CallRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Observer for Recorder {
    fn called(&self, record: CallRecord) {
        self.lock().push(record);
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        for waker in waiting {
            waker.wake();
        }
    }
}
