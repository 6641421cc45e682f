//! Where a message sits in a topic.

use std::fmt;

/// A message's position, as Pulsar reports it in `MessageIdData`.
///
/// The model gives each topic one ledger (ids handed out from 1 in the order topics are
/// created) and numbers its entries from 0, so ids grow in publish order within a topic.
/// `partition` is the topic's partition index, `-1` for a non-partitioned topic: the broker
/// always sets it (`Commands.newMessageCommand` writes `partitionIdx`, which is `-1` outside
/// partitioned topics), so a pulsar-rs message id carries `Some(-1)`.
///
/// A message published in a batch shares its entry with the other messages of the batch and
/// carries its place in it, `batch_index` (0 to n − 1), as pulsar-rs's
/// `BatchedMessageIterator` sets it; a message published alone has none.
///
/// `Display` writes `ledger:entry:partition`, or `ledger:entry:partition:index` for a message of
/// a batch: the forms pulsar-rs puts in the `ORIGIN_MESSAGE_ID` property of a dead-lettered
/// message (`src/consumer/engine.rs`, `process_payload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MessageId {
    /// The BookKeeper ledger holding the entry.
    pub ledger_id: u64,
    /// The entry within the ledger.
    pub entry_id: u64,
    /// The partition index, or `-1` for a non-partitioned topic.
    pub partition: i32,
    /// The message's index in its batched entry; `None` for a message published alone.
    pub batch_index: Option<i32>,
}

impl MessageId {
    /// The same entry, without a batch index: what the broker acknowledges and redelivers.
    pub fn entry(self) -> MessageId {
        MessageId {
            batch_index: None,
            ..self
        }
    }
}

/// Two words rather than the derived five: ids are hashed several times per delivery (the
/// consumer's held ids, pending acknowledgements). Equal ids write equal words; distinct ids
/// rarely collide, as ledgers and entries stay far below 2^32 in practice.
impl std::hash::Hash for MessageId {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.ledger_id.rotate_left(32) ^ self.entry_id);
        // `None` as 0, index i as i + 1 (wrapping: -1 is not an index Pulsar gives).
        let index = self.batch_index.map_or(0, |i| (i as u32).wrapping_add(1));
        state.write_u64((u64::from(self.partition as u32) << 32) | u64::from(index));
    }
}

impl MessageId {
    /// Append the id as [`Display`](fmt::Display) writes it, without `core::fmt`: an
    /// in-process publish returns its id printed, and formatting it with `write!` is a large
    /// share of a publish's cost.
    pub fn push_to(&self, out: &mut String) {
        self.pieces(|piece| {
            out.push_str(piece);
            Ok(())
        })
        .unwrap_or(());
    }

    fn pieces(&self, mut write: impl FnMut(&str) -> fmt::Result) -> fmt::Result {
        let mut number = itoa::Buffer::new();
        write(number.format(self.ledger_id))?;
        write(":")?;
        write(number.format(self.entry_id))?;
        write(":")?;
        write(number.format(self.partition))?;
        if let Some(index) = self.batch_index {
            write(":")?;
            write(number.format(index))?;
        }
        Ok(())
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pieces(|piece| f.write_str(piece))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_pulsar_rs_writes_origin_message_id() {
        let id = MessageId {
            ledger_id: 7,
            entry_id: 42,
            partition: -1,
            batch_index: None,
        };
        assert_eq!(id.to_string(), "7:42:-1");
        let batched = MessageId {
            batch_index: Some(3),
            ..id
        };
        assert_eq!(batched.to_string(), "7:42:-1:3");
        let mut pushed = String::from("id ");
        batched.push_to(&mut pushed);
        assert_eq!(pushed, "id 7:42:-1:3");
        assert_eq!(batched.entry(), id);
    }

    #[test]
    fn equal_ids_hash_equal_and_close_ids_apart() {
        use std::hash::BuildHasher;
        let hasher = foldhash::fast::FixedState::default();
        let id = |ledger_id, entry_id, batch_index| MessageId {
            ledger_id,
            entry_id,
            partition: -1,
            batch_index,
        };
        assert_eq!(
            hasher.hash_one(id(3, 9, Some(2))),
            hasher.hash_one(id(3, 9, Some(2)))
        );
        let distinct: std::collections::HashSet<u64> = [
            id(3, 9, None),
            id(3, 9, Some(0)),
            id(3, 9, Some(1)),
            id(3, 10, None),
            id(4, 9, None),
            id(9, 3, None),
        ]
        .iter()
        .map(|m| hasher.hash_one(m))
        .collect();
        assert_eq!(distinct.len(), 6);
    }

    #[test]
    fn orders_by_ledger_then_entry() {
        let a = MessageId {
            ledger_id: 1,
            entry_id: 9,
            partition: -1,
            batch_index: None,
        };
        let b = MessageId {
            ledger_id: 2,
            entry_id: 0,
            partition: -1,
            batch_index: None,
        };
        assert!(a < b);
    }
}
