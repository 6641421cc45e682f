//! The deliveries the bridge saw on the wire.

use std::sync::{Arc, Mutex, PoisonError};

/// One `CommandMessage` the broker sent to a consumer, as the bridge saw it.
///
/// pulsar-rs reads the redelivery count of a delivery but does not hand it to the application
/// (its `consumer::Message` has no such field), so a live test that must check how often a
/// message came back reads it here instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObservedDelivery {
    /// The consumer id the client chose when it subscribed (per connection).
    pub consumer_id: u64,
    /// The ledger of the delivered message's id.
    pub ledger_id: u64,
    /// The entry of the delivered message's id.
    pub entry_id: u64,
    /// The broker's redelivery count: 0 on the first delivery (absent on the wire means 0).
    pub redelivery_count: u32,
}

/// Every delivery the bridge forwarded, in order, shared between the bridge and the test.
///
/// Cloning gives another handle on the same log.
#[derive(Debug, Clone, Default)]
pub struct DeliveryLog {
    deliveries: Arc<Mutex<Vec<ObservedDelivery>>>,
}

impl DeliveryLog {
    /// An empty log, for a [`crate::FrameFixer`] made by hand.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything recorded so far, oldest first.
    pub fn snapshot(&self) -> Vec<ObservedDelivery> {
        self.lock().clone()
    }

    /// The redelivery counts of every delivery of the message with this ledger and entry id, in
    /// the order they were sent.
    pub fn redelivery_counts(&self, ledger_id: u64, entry_id: u64) -> Vec<u32> {
        self.lock()
            .iter()
            .filter(|d| d.ledger_id == ledger_id && d.entry_id == entry_id)
            .map(|d| d.redelivery_count)
            .collect()
    }

    pub(crate) fn record(&self, delivery: ObservedDelivery) {
        self.lock().push(delivery);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ObservedDelivery>> {
        // A panic while pushing cannot leave the Vec half-written; keep using it.
        self.deliveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
