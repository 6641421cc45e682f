//! Collects the handler calls for a test harness, as a layer.

use std::sync::Mutex;

use ruststream::middleware::{Delivery, End, Hooks, Layer};

use super::Call;

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

/// Records every handler call once it is known how it ended (a copy confirmed, a backoff
/// resolved). Deliveries whose handler was not called (a layer answered, out of attempts)
/// are not calls, and are not recorded.
impl Layer for Recorder {
    fn hooks(&self) -> Hooks {
        Hooks::COMPLETED
    }

    fn completed(&self, delivery: &Delivery<'_>, end: &End<'_>) {
        if !end.by_handler() {
            return;
        }
        let message = delivery.message();
        let call = Call {
            handler: delivery.handler(),
            subscription: delivery.subscription().into(),
            topic: message.topic.to_owned(),
            message_id: message
                .message_id
                .unwrap_or_else(|| ruststream::MessageId::new(&[])),
            payload: message.payload.to_vec(),
            properties: message.properties.to_vec(),
            redelivery_count: message.redelivery_count,
            at: delivery.started(),
            completion: end.completion(),
            error: end.error().map(|error| error.to_string()),
        };
        self.lock().push(call);
    }
}
