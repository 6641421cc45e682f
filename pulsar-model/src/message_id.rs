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
/// `Display` writes `ledger:entry:partition`, the form pulsar-rs puts in the `ORIGIN_MESSAGE_ID`
/// property of a dead-lettered message (`src/consumer/engine.rs`, `process_payload`, for a
/// message that is not part of a batch; the model publishes no batches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId {
    /// The BookKeeper ledger holding the entry.
    pub ledger_id: u64,
    /// The entry within the ledger.
    pub entry_id: u64,
    /// The partition index, or `-1` for a non-partitioned topic.
    pub partition: i32,
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.ledger_id, self.entry_id, self.partition)
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
        };
        assert_eq!(id.to_string(), "7:42:-1");
    }

    #[test]
    fn orders_by_ledger_then_entry() {
        let a = MessageId {
            ledger_id: 1,
            entry_id: 9,
            partition: -1,
        };
        let b = MessageId {
            ledger_id: 2,
            entry_id: 0,
            partition: -1,
        };
        assert!(a < b);
    }
}
