//! The messages of one batched entry, settled one by one on a broker that acknowledges entries.
//!
//! A batching producer (the default of the Java, Python and Go Pulsar clients) writes several
//! messages as one broker entry. A broker that tracks acknowledgements by entry (Apache Pulsar
//! unless `acknowledgmentAtBatchIndexLevelEnabled`, off by default in 4.0.7) acknowledges and
//! redelivers such an entry as a whole: acknowledging one message of it acknowledges its
//! siblings too (and one that was meant to come back is lost), and a negative acknowledgement
//! brings every message of it back, siblings already handled included.
//!
//! `EntryLedger` makes each message of an entry settle as the completion table says, as the
//! Java client's batch acker does:
//!
//! - an acknowledgement is held until every message of its entry is settled (acknowledged,
//!   dropped or dead-lettered); then every message id of the entry is acknowledged;
//! - a message whose index was settled already, or is still in hand (running, or in a
//!   `retry_after` wait), is not handed to the handler again when the entry comes back for a
//!   sibling's redelivery;
//! - a `retry`, an expired wait or no outcome puts the index back out, so its next delivery is
//!   handled;
//! - a `retry` of a message whose entry is already on its way back (a sibling's negative
//!   acknowledgement was sent, and no message of the entry arrived since) makes no call: that
//!   redelivery brings it too, so siblings retried together cost the entry one redelivery and
//!   one count (the broker counts by entry);
//! - a message of an entry finished here that arrives again (a copy sent before the
//!   acknowledgement reached the broker, or an Exclusive/Failover rewind) is acknowledged again
//!   at once, not handled. The last `REMEMBERED` finished entries are remembered.
//!
//! The memory lives in one consumer only. A restart, or the entry moving to another consumer,
//! hands every message of an unfinished entry to a handler again, acknowledged siblings
//! included: at least once, as `docs/delivery-guarantees.md` says.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::num::NonZeroU32;

/// How many finished entries a consumer remembers, to acknowledge late copies of them without
/// handling them again. A copy can only be late by what the client had queued when the entry
/// finished, which the receiver queue bounds (the concurrency, 32 by default).
pub(crate) const REMEMBERED: usize = 1024;

/// Where an entry sits: what the broker stores, acknowledges and redelivers as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryPosition {
    /// The ledger that holds it.
    pub ledger: u64,
    /// Its number in the ledger.
    pub entry: u64,
    /// The partition of its topic, `-1` for a topic that is not a partition.
    pub partition: i32,
}

/// A message's place in a batched entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSlot {
    /// The entry.
    pub entry: EntryPosition,
    /// The message's index in it.
    pub index: u32,
    /// How many messages the entry holds; never zero, which lets `Option<BatchSlot>` take no
    /// more room than a slot (a delivery waiting in `retry_after` carries one).
    pub size: NonZeroU32,
}

impl BatchSlot {
    /// The slot without its entry, which the message's id tells again.
    pub fn place(self) -> BatchPlace {
        BatchPlace {
            index: self.index,
            size: self.size,
        }
    }

    /// The `ack_set` that acknowledges this index alone: every bit of the entry set but this
    /// one's (64 a word), as a transactional acknowledgement of one message of a batched
    /// entry carries it. Transactions acknowledging other indexes of the entry then do not
    /// overlap it.
    pub fn only_this(self) -> Vec<i64> {
        let size = self.size.get() as usize;
        let mut words = vec![0i64; size.div_ceil(64)];
        for i in 0..size {
            if i != self.index as usize {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        words
    }
}

/// A message's place in a batched entry, without the entry: what a delivery carries while it
/// is handled or waits in `retry_after` (8 bytes instead of 32; the entry is in its id, see
/// the machine's `entry_of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPlace {
    index: u32,
    size: NonZeroU32,
}

impl BatchPlace {
    /// The slot of this place in `entry`.
    pub(crate) fn in_entry(self, entry: EntryPosition) -> BatchSlot {
        BatchSlot {
            entry,
            index: self.index,
            size: self.size,
        }
    }
}

/// What to do with a message of a batched entry that just arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Hand it to the handler.
    Handle,
    /// Its index was settled already: a redelivery of the entry caused by a sibling.
    Settled,
    /// Its index is still being handled (running, or waiting to be retried).
    InHand,
    /// Its whole entry was finished here: acknowledge this late copy again, do not handle it.
    Finished,
}

#[derive(Debug)]
enum Slot<Id> {
    /// Not with this consumer's handlers: it will be (re)delivered.
    Out,
    /// Handed to the handler, not settled yet.
    InHand,
    /// Settled; its acknowledgement is held until the whole entry is.
    Settled(Id),
}

#[derive(Debug)]
struct Entry<Id> {
    slots: Vec<Slot<Id>>,
    /// How many slots are `Settled`: the entry is finished when all are, known without a scan
    /// (a scan per settlement is quadratic in the entry's size, and entries hold up to 1,000).
    settled: usize,
    /// A negative acknowledgement was sent and the entry's redelivery has not begun yet.
    redelivery_pending: bool,
}

/// The batched entries of one consumer that have messages handed out or settled.
#[derive(Debug)]
pub(crate) struct EntryLedger<Id> {
    entries: BTreeMap<EntryPosition, Entry<Id>>,
    finished: BTreeSet<EntryPosition>,
    finished_order: VecDeque<EntryPosition>,
}

impl<Id> Default for EntryLedger<Id> {
    fn default() -> Self {
        EntryLedger {
            entries: BTreeMap::new(),
            finished: BTreeSet::new(),
            finished_order: VecDeque::new(),
        }
    }
}

impl<Id> EntryLedger<Id> {
    /// A message of a batched entry arrived.
    pub(crate) fn arrive(&mut self, slot: BatchSlot) -> Arrival {
        if self.finished.contains(&slot.entry) {
            return Arrival::Finished;
        }
        let entry = self.entries.entry(slot.entry).or_insert_with(|| Entry {
            slots: core::iter::repeat_with(|| Slot::Out)
                .take(slot.size.get() as usize)
                .collect(),
            redelivery_pending: false,
            settled: 0,
        });
        // A redelivery of the entry has begun. (Not only on index 0: with batch-index
        // acknowledgement the broker leaves out the indexes already acknowledged.)
        entry.redelivery_pending = false;
        let Some(state) = entry.slots.get_mut(slot.index as usize) else {
            // An index past the size the entry first arrived with: the broker's view changed
            // under us. Handling it again is the safe side (at-least-once).
            return Arrival::Handle;
        };
        match state {
            Slot::Out => {
                *state = Slot::InHand;
                Arrival::Handle
            }
            Slot::InHand => Arrival::InHand,
            Slot::Settled(_) => Arrival::Settled,
        }
    }

    /// The message was acknowledged, dropped or dead-lettered. Returns every id of the entry
    /// once all of its messages are settled (the entry is then forgotten); `None` while some
    /// are not.
    pub(crate) fn settle(&mut self, slot: BatchSlot, id: Id) -> Option<Vec<Id>> {
        let entry = self.entries.get_mut(&slot.entry)?;
        if let Some(state) = entry.slots.get_mut(slot.index as usize) {
            if !matches!(state, Slot::Settled(_)) {
                entry.settled += 1;
            }
            *state = Slot::Settled(id);
        }
        if entry.settled < entry.slots.len() {
            return None;
        }
        let entry = self.entries.remove(&slot.entry)?;
        if self.finished_order.len() == REMEMBERED {
            if let Some(oldest) = self.finished_order.pop_front() {
                self.finished.remove(&oldest);
            }
        }
        self.finished.insert(slot.entry);
        self.finished_order.push_back(slot.entry);
        Some(
            entry
                .slots
                .into_iter()
                .filter_map(|s| match s {
                    Slot::Settled(id) => Some(id),
                    _ => None,
                })
                .collect(),
        )
    }

    /// The indexes of `slot`'s entry not settled yet, as a batch-index acknowledgement's
    /// `ack_set`: bit `i` of word `i / 64` set while index `i` is not settled.
    pub(crate) fn unsettled(&self, slot: BatchSlot) -> Vec<i64> {
        let mut words = vec![0i64; (slot.size.get() as usize).div_ceil(64)];
        if let Some(entry) = self.entries.get(&slot.entry) {
            for (i, state) in entry.slots.iter().enumerate() {
                if !matches!(state, Slot::Settled(_)) {
                    words[i / 64] |= 1 << (i % 64);
                }
            }
        }
        words
    }

    /// The message is left to the broker (no outcome, a refused outcome): its next delivery
    /// is handled.
    pub(crate) fn put_back(&mut self, slot: BatchSlot) {
        if let Some(state) = self
            .entries
            .get_mut(&slot.entry)
            .and_then(|entry| entry.slots.get_mut(slot.index as usize))
        {
            if matches!(state, Slot::InHand) {
                *state = Slot::Out;
            }
        }
    }

    /// The message is to be retried now. Whether the negative acknowledgement must be sent:
    /// not when a redelivery of its entry is already on its way (it brings this one too).
    pub(crate) fn retry(&mut self, slot: BatchSlot) -> bool {
        self.put_back(slot);
        match self.entries.get_mut(&slot.entry) {
            Some(entry) if entry.redelivery_pending => false,
            Some(entry) => {
                entry.redelivery_pending = true;
                true
            }
            None => true,
        }
    }

    /// How many entries have messages handed out or settled.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: EntryPosition = EntryPosition {
        ledger: 1,
        entry: 7,
        partition: -1,
    };

    fn slot(index: u32) -> BatchSlot {
        BatchSlot {
            entry: E,
            index,
            size: NonZeroU32::new(3).unwrap(),
        }
    }

    #[test]
    fn the_entry_is_acknowledged_once_every_message_is_settled() {
        let mut ledger = EntryLedger::default();
        for i in 0..3 {
            assert_eq!(ledger.arrive(slot(i)), Arrival::Handle);
        }
        assert_eq!(ledger.settle(slot(2), "c"), None);
        assert_eq!(ledger.settle(slot(0), "a"), None);
        assert_eq!(ledger.settle(slot(1), "b"), Some(vec!["a", "b", "c"]));
        assert_eq!(ledger.len(), 0, "a finished entry leaves the ledger");
        assert_eq!(
            ledger.arrive(slot(1)),
            Arrival::Finished,
            "a late copy is only acknowledged again"
        );
    }

    #[test]
    fn siblings_retried_before_the_redelivery_begins_share_it() {
        let mut ledger: EntryLedger<&str> = EntryLedger::default();
        for i in 0..3 {
            ledger.arrive(slot(i));
        }
        assert!(ledger.retry(slot(0)), "the first retry asks for the entry");
        assert!(
            !ledger.retry(slot(2)),
            "the entry is on its way back already"
        );
        // The redelivery begins; both come back.
        assert_eq!(ledger.arrive(slot(0)), Arrival::Handle);
        assert_eq!(ledger.arrive(slot(1)), Arrival::InHand);
        assert_eq!(ledger.arrive(slot(2)), Arrival::Handle);
        // A retry after the redelivery began needs a new request.
        assert!(ledger.retry(slot(1)));
    }

    #[test]
    fn the_ack_set_has_a_bit_for_each_index_not_settled() {
        let mut ledger = EntryLedger::default();
        for i in 0..3 {
            ledger.arrive(slot(i));
        }
        assert_eq!(ledger.unsettled(slot(0)), vec![0b111]);
        ledger.settle(slot(1), "b");
        assert_eq!(ledger.unsettled(slot(0)), vec![0b101]);
        let wide = BatchSlot {
            entry: EntryPosition { entry: 9, ..E },
            index: 70,
            size: NonZeroU32::new(71).unwrap(),
        };
        ledger.arrive(wide);
        ledger.settle(wide, "z");
        let words = ledger.unsettled(wide);
        assert_eq!(words.len(), 2);
        assert_eq!(words[0], -1, "indexes 0..64 not settled");
        assert_eq!(words[1], 0b11_1111, "64..70 not settled, 70 settled");
    }

    #[test]
    fn only_the_last_finished_entries_are_remembered() {
        let mut ledger = EntryLedger::default();
        let one = |n: u64| BatchSlot {
            entry: EntryPosition { entry: n, ..E },
            index: 0,
            size: NonZeroU32::new(1).unwrap(),
        };
        for n in 0..=REMEMBERED as u64 {
            ledger.arrive(one(n));
            assert_eq!(ledger.settle(one(n), n), Some(vec![n]));
        }
        assert_eq!(ledger.arrive(one(0)), Arrival::Handle, "forgotten");
        assert_eq!(ledger.arrive(one(1)), Arrival::Finished, "remembered");
    }

    #[test]
    fn a_redelivered_entry_hands_over_only_what_is_not_settled_or_in_hand() {
        let mut ledger = EntryLedger::default();
        for i in 0..3 {
            ledger.arrive(slot(i));
        }
        ledger.settle(slot(0), "a"); // acked
        ledger.put_back(slot(1)); // retried: the broker sends the whole entry again
                                  // index 2 is still running
        assert_eq!(ledger.arrive(slot(0)), Arrival::Settled);
        assert_eq!(ledger.arrive(slot(1)), Arrival::Handle);
        assert_eq!(ledger.arrive(slot(2)), Arrival::InHand);
        assert_eq!(ledger.settle(slot(1), "b"), None);
        assert_eq!(ledger.settle(slot(2), "c"), Some(vec!["a", "b", "c"]));
    }

    #[test]
    fn putting_back_a_settled_index_changes_nothing() {
        let mut ledger = EntryLedger::default();
        ledger.arrive(slot(0));
        ledger.settle(slot(0), "a");
        ledger.put_back(slot(0));
        assert_eq!(ledger.arrive(slot(0)), Arrival::Settled);
    }

    #[test]
    fn an_unknown_entry_settles_nothing() {
        let mut ledger: EntryLedger<&str> = EntryLedger::default();
        assert_eq!(ledger.settle(slot(0), "a"), None);
        ledger.put_back(slot(0));
        assert_eq!(ledger.len(), 0);
    }
}
