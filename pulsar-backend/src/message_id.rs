//! Message ids as ruststream hands them out: `ledger:entry:partition`, plus `:index` for a
//! message of a batch, as the Java client prints them, from either transport's id.

use pulsar::message::proto::MessageIdData;
use ruststream::MessageId;

/// The id of a message of the in-process Pulsar.
#[inline]
pub(crate) fn of_model(id: &ruststream_pulsar_model::MessageId) -> MessageId {
    match id.batch_index {
        Some(index) => MessageId::new(&[
            id.ledger_id as i64,
            id.entry_id as i64,
            i64::from(id.partition),
            i64::from(index),
        ]),
        None => MessageId::new(&[
            id.ledger_id as i64,
            id.entry_id as i64,
            i64::from(id.partition),
        ]),
    }
}

/// The id of a message pulsar-rs received or published; `partition` when the caller knows it
/// better than the id (a send receipt leaves it out: only the producer knows the partition it
/// chose).
pub(crate) fn of_proto(id: &MessageIdData, partition: Option<i32>) -> MessageId {
    let partition = i64::from(partition.or(id.partition).unwrap_or(-1));
    match id.batch_index {
        Some(index) => MessageId::new(&[
            id.ledger_id as i64,
            id.entry_id as i64,
            partition,
            i64::from(index),
        ]),
        None => MessageId::new(&[id.ledger_id as i64, id.entry_id as i64, partition]),
    }
}
