//! A topic's transaction buffer: which of its entries belong to transactions still open, and
//! so how far its subscriptions may read (Apache Pulsar's `TopicTransactionBuffer`, one per
//! persistent topic, so one per partition of a partitioned topic).
//!
//! - A message published in a transaction is written to the topic's ledger at once, at the
//!   next position, like any other (`appendBufferToTxn` → `asyncAddEntry`). The first one of a
//!   transaction on the topic enters the ongoing transactions, a map kept in insertion order
//!   (`ongoingTxns`, a `LinkedMap`), which is the order of their first positions.
//! - The max read position is the position before the first message of the oldest ongoing
//!   transaction, or the last entry when none is ongoing (`handleTransactionMessage`,
//!   `removeTxnAndUpdateMaxReadPosition`, `syncMaxReadPositionForNormalPublish`). Dispatchers
//!   read up to it (`topic.getMaxReadPosition()`), so a plain message published after an open
//!   transaction's first message waits behind it too, and so does a message of another
//!   transaction already committed.
//! - Commit and abort each append a marker entry to the topic (`Markers.newTxnCommitMarker`,
//!   `newTxnAbortMarker`) and take the transaction out of the ongoing ones. The markers take
//!   entry ids, as on a broker: the next message's entry id is one further.

use std::collections::BTreeMap;

use crate::TxnId;

/// One topic's transaction buffer (see the module).
#[derive(Debug, Default)]
pub(crate) struct TransactionBuffer {
    /// Ongoing transactions and the first entry of each on this topic, oldest first.
    ongoing: Vec<(TxnId, u64)>,
    /// Every entry each ongoing transaction wrote here, for its abort.
    entries: BTreeMap<TxnId, Vec<u64>>,
}

impl TransactionBuffer {
    /// The first entry a subscription may not read yet, on a topic of `len` entries: the max
    /// read position plus one.
    #[inline]
    pub(crate) fn readable(&self, len: u64) -> u64 {
        match self.ongoing.first() {
            None => len,
            Some(&(_, first)) => first,
        }
    }

    /// `txn` wrote `entry` (`handleTransactionMessage`).
    pub(crate) fn stored(&mut self, txn: TxnId, entry: u64) {
        let entries = self.entries.entry(txn).or_default();
        if entries.is_empty() {
            self.ongoing.push((txn, entry));
        }
        entries.push(entry);
    }

    /// `txn` ended (committed or aborted): it is no longer ongoing. Answers the entries it
    /// wrote here.
    pub(crate) fn ended(&mut self, txn: TxnId) -> Vec<u64> {
        self.ongoing.retain(|(ongoing, _)| *ongoing != txn);
        self.entries.remove(&txn).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_ongoing_transaction_bounds_what_is_readable() {
        let mut buffer = TransactionBuffer::default();
        assert_eq!(buffer.readable(5), 5);
        buffer.stored(TxnId::new(0, 1), 2);
        buffer.stored(TxnId::new(0, 2), 3);
        buffer.stored(TxnId::new(0, 1), 4);
        assert_eq!(buffer.readable(6), 2);
        assert_eq!(buffer.ended(TxnId::new(0, 1)), vec![2, 4]);
        assert_eq!(buffer.readable(7), 3, "the second is the oldest now");
        assert_eq!(buffer.ended(TxnId::new(0, 2)), vec![3]);
        assert_eq!(buffer.readable(8), 8);
    }
}
