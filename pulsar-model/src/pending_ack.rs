//! A subscription's acknowledgements made in transactions and not ended yet: the broker's
//! pending-ack handle (`PendingAckHandleImpl`, one per `PersistentSubscription`).
//!
//! It keeps two maps, as the broker does:
//!
//! - by transaction, the entries (and, for a message of a batch, the batch indexes) each one
//!   acknowledged (`individualAckOfTransaction`): what its commit acknowledges on the cursor
//!   and what its abort gives back;
//! - by entry, what is pending in any transaction (`individualAckPositions`): what a second
//!   acknowledgement of the same message in a transaction conflicts with. An entry leaves it
//!   when the cursor deletes it (`clearIndividualPosition`, called from
//!   `PersistentSubscription.acknowledgeMessage`), or when every transaction that acknowledged
//!   in it aborted; not when a transaction commits. So a batch index acknowledged in a
//!   committed transaction that the cursor did not delete (a broker without batch-index
//!   acknowledgement) stays pending for good, and a later transactional acknowledgement of it
//!   conflicts.
//!
//! Cumulative acknowledgements in a transaction (`cumulativeAckOfTransaction`) are not
//! modelled: the model's consumers acknowledge individually.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Conflict, TxnId};

/// What one transaction acknowledged in one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Acked {
    /// The whole entry: a message published alone (an acknowledgement without an ack set).
    Whole,
    /// These batch indexes of a batched entry (an acknowledgement with an ack set, as the
    /// Java client sends for a message of a batch in a transaction).
    Indexes(BTreeSet<u32>),
}

/// What is pending on one entry, in whichever transactions.
#[derive(Debug)]
enum Pending {
    Whole,
    Indexes {
        batch_size: u32,
        /// The indexes acknowledged in transactions (open, or committed without the cursor
        /// deleting them): the cleared bits of the broker's ack set.
        acked: BTreeSet<u32>,
    },
}

/// One subscription's pending acknowledgements (see the module).
#[derive(Debug, Default)]
pub(crate) struct PendingAckHandle {
    by_txn: BTreeMap<TxnId, BTreeMap<u64, Acked>>,
    by_entry: BTreeMap<u64, Pending>,
}

impl PendingAckHandle {
    /// Whether nothing is pending and no transaction has anything here: the common case,
    /// asked on every acknowledgement.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.by_entry.is_empty() && self.by_txn.is_empty()
    }

    /// `txn` acknowledges `entry`, or batch index `index.0` of it when it is a batch of
    /// `index.1` messages (`internalIndividualAcknowledgeMessage`). `settled`: the cursor
    /// deleted the entry already; `deleted`: the batch indexes the cursor deleted of it.
    ///
    /// Refused with the conflict the broker reports (`TransactionConflictException`): the
    /// message was acknowledged ("already acked before"), or it is pending in a transaction,
    /// this one included ("in pending ack status"). Accepted, it answers whether every message
    /// of the entry is now pending, when the broker drops the entry from its consumer's
    /// pending acks (`checkIsCanDeleteConsumerPendingAck`; for a whole entry, always).
    pub(crate) fn acknowledge(
        &mut self,
        txn: TxnId,
        entry: u64,
        index: Option<(u32, u32)>,
        settled: bool,
        deleted: Option<&BTreeSet<u32>>,
    ) -> Result<bool, Conflict> {
        if settled {
            return Err(Conflict::Acknowledged);
        }
        match index {
            None => {
                if self.by_entry.contains_key(&entry) {
                    return Err(self.owner(entry, None));
                }
                self.by_entry.insert(entry, Pending::Whole);
                self.by_txn
                    .entry(txn)
                    .or_default()
                    .insert(entry, Acked::Whole);
                Ok(true)
            }
            Some((index, batch_size)) => {
                if deleted.is_some_and(|d| d.contains(&index)) {
                    return Err(Conflict::Acknowledged);
                }
                match self.by_entry.get(&entry) {
                    // The broker compares ack sets here, and a whole-entry position has none:
                    // the model calls it a conflict rather than mixing the two.
                    Some(Pending::Whole) => return Err(self.owner(entry, None)),
                    Some(Pending::Indexes { acked, .. }) if acked.contains(&index) => {
                        return Err(self.owner(entry, Some(index)));
                    }
                    _ => {}
                }
                let pending = self.by_entry.entry(entry).or_insert(Pending::Indexes {
                    batch_size,
                    acked: BTreeSet::new(),
                });
                let all = match pending {
                    Pending::Indexes { batch_size, acked } => {
                        acked.insert(index);
                        acked.len() as u32 >= *batch_size
                    }
                    Pending::Whole => true,
                };
                let mine = self.by_txn.entry(txn).or_default();
                match mine
                    .entry(entry)
                    .or_insert_with(|| Acked::Indexes(BTreeSet::new()))
                {
                    Acked::Indexes(indexes) => {
                        indexes.insert(index);
                    }
                    Acked::Whole => {}
                }
                Ok(all)
            }
        }
    }

    /// Who holds what a refused acknowledgement asked for.
    fn owner(&self, entry: u64, index: Option<u32>) -> Conflict {
        let holder = self.by_txn.iter().find(|(_, entries)| {
            entries
                .get(&entry)
                .is_some_and(|acked| match (acked, index) {
                    (Acked::Whole, _) | (Acked::Indexes(_), None) => true,
                    (Acked::Indexes(indexes), Some(index)) => indexes.contains(&index),
                })
        });
        match holder {
            Some((txn, _)) => Conflict::Pending { holder: *txn },
            None => Conflict::CommittedBatchIndex,
        }
    }

    /// `txn` commits: what it acknowledged, for the cursor (`individualAckCommitCommon`). The
    /// entries stay pending until the cursor deletes them ([`PendingAckHandle::cleared`]).
    pub(crate) fn commit(&mut self, txn: TxnId) -> BTreeMap<u64, Acked> {
        self.by_txn.remove(&txn).unwrap_or_default()
    }

    /// `txn` aborts: its acknowledgements are forgotten (`individualAckAbortCommon`) and the
    /// entries it had acknowledged are answered, for redelivery; `None` if it acknowledged
    /// nothing here (the broker then redelivers nothing).
    pub(crate) fn abort(&mut self, txn: TxnId) -> Option<Vec<u64>> {
        let mine = self.by_txn.remove(&txn)?;
        for (entry, acked) in &mine {
            match (acked, self.by_entry.get_mut(entry)) {
                (Acked::Indexes(indexes), Some(Pending::Indexes { acked, .. })) => {
                    for index in indexes {
                        acked.remove(index);
                    }
                    if acked.is_empty() {
                        self.by_entry.remove(entry);
                    }
                }
                _ => {
                    self.by_entry.remove(entry);
                }
            }
        }
        Some(mine.into_keys().collect())
    }

    /// The cursor deleted `entry` (by a plain acknowledgement, a commit, or the dispatcher):
    /// nothing of it, nor of any entry before `mark_delete`, is pending any more
    /// (`clearIndividualPosition`).
    pub(crate) fn cleared(&mut self, entry: u64, mark_delete: u64) {
        self.by_entry.remove(&entry);
        if self
            .by_entry
            .first_key_value()
            .is_some_and(|(&first, _)| first < mark_delete)
        {
            self.by_entry = self.by_entry.split_off(&mark_delete);
        }
    }

    /// Whether `entry` is pending, wholly or at some batch index, in any transaction.
    #[cfg(test)]
    pub(crate) fn is_pending(&self, entry: u64) -> bool {
        self.by_entry.contains_key(&entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(n: u64) -> TxnId {
        TxnId::new(0, n)
    }

    #[test]
    fn a_whole_entry_is_pending_in_one_transaction_at_a_time() {
        let mut handle = PendingAckHandle::default();
        assert_eq!(handle.acknowledge(txn(1), 4, None, false, None), Ok(true));
        assert_eq!(
            handle.acknowledge(txn(2), 4, None, false, None),
            Err(Conflict::Pending { holder: txn(1) })
        );
        assert_eq!(
            handle.acknowledge(txn(1), 4, None, false, None),
            Err(Conflict::Pending { holder: txn(1) }),
            "twice in the same transaction is refused too"
        );
        assert_eq!(
            handle.acknowledge(txn(2), 5, None, true, None),
            Err(Conflict::Acknowledged)
        );
        assert_eq!(handle.abort(txn(1)), Some(vec![4]));
        assert!(!handle.is_pending(4));
        assert_eq!(handle.abort(txn(1)), None, "nothing left of it");
    }

    #[test]
    fn batch_indexes_are_pending_one_by_one() {
        let mut handle = PendingAckHandle::default();
        assert_eq!(
            handle.acknowledge(txn(1), 0, Some((0, 3)), false, None),
            Ok(false)
        );
        assert_eq!(
            handle.acknowledge(txn(2), 0, Some((1, 3)), false, None),
            Ok(false)
        );
        assert_eq!(
            handle.acknowledge(txn(2), 0, Some((0, 3)), false, None),
            Err(Conflict::Pending { holder: txn(1) })
        );
        assert_eq!(
            handle.acknowledge(txn(1), 0, Some((2, 3)), false, None),
            Ok(true),
            "every index pending: the consumer's pending ack can go"
        );
        assert_eq!(handle.abort(txn(2)), Some(vec![0]));
        assert_eq!(
            handle.acknowledge(txn(3), 0, Some((1, 3)), false, None),
            Ok(true),
            "index 1 came back with the abort"
        );
        let committed = handle.commit(txn(1));
        assert_eq!(
            committed.get(&0),
            Some(&Acked::Indexes(BTreeSet::from([0, 2])))
        );
        assert_eq!(
            handle.acknowledge(txn(4), 0, Some((0, 3)), false, None),
            Err(Conflict::CommittedBatchIndex),
            "committed but not deleted by the cursor: still pending"
        );
        handle.cleared(0, 1);
        assert!(!handle.is_pending(0));
    }

    #[test]
    fn an_index_the_cursor_deleted_is_acknowledged_already() {
        let mut handle = PendingAckHandle::default();
        let deleted = BTreeSet::from([1]);
        assert_eq!(
            handle.acknowledge(txn(1), 7, Some((1, 2)), false, Some(&deleted)),
            Err(Conflict::Acknowledged)
        );
    }

    #[test]
    fn a_cleared_mark_delete_drops_every_entry_before_it() {
        let mut handle = PendingAckHandle::default();
        for entry in [2, 5, 9] {
            handle
                .acknowledge(txn(1), entry, Some((0, 2)), false, None)
                .unwrap();
        }
        handle.cleared(5, 6);
        assert!(!handle.is_pending(2) && !handle.is_pending(5));
        assert!(handle.is_pending(9));
    }
}
