use std::sync::Arc;

use futures::channel::{mpsc, oneshot};

use super::{batched_message_iterator::BatchedMessageIterator, engine::acknowledged_in};
use crate::{
    connection::Connection,
    message::{proto::MessageIdData, Message as RawMessage},
    Error, Executor, Payload,
};

/// What the engine hands to the consumer: one received entry at a time, whose messages the
/// consumer takes in turn.
pub type MessageIdDataReceiver = mpsc::Receiver<Result<EntryDelivery, Error>>;

/// The messages of one received entry, handed from the engine to the consumer as one item: the
/// consumer splits a batch as it takes its messages, so a batch of a thousand messages crosses
/// the channel (and wakes either side) once, not a thousand times.
pub struct EntryDelivery {
    messages: EntryMessages,
    /// The redelivery count the broker sent with the entry (0 when the broker left it out).
    pub(crate) redelivery_count: u32,
    /// Why the entry could not be decoded, if it could not (its one message is then the entry
    /// as stored).
    pub(crate) decode_failure: Option<String>,
}

enum EntryMessages {
    One(Option<(MessageIdData, Payload)>),
    /// A batch, without the indexes the broker's ack set says were acknowledged already.
    Batch {
        messages: BatchedMessageIterator,
        ack_set: Vec<i64>,
    },
}

impl EntryDelivery {
    /// An entry that is one message.
    pub(crate) fn one(
        id: MessageIdData,
        payload: Payload,
        redelivery_count: u32,
        decode_failure: Option<String>,
    ) -> Self {
        EntryDelivery {
            messages: EntryMessages::One(Some((id, payload))),
            redelivery_count,
            decode_failure,
        }
    }

    /// A batched entry; `ack_set` is the broker's, from the `CommandMessage`.
    pub(crate) fn batch(
        messages: BatchedMessageIterator,
        ack_set: Vec<i64>,
        redelivery_count: u32,
    ) -> Self {
        EntryDelivery {
            messages: EntryMessages::Batch { messages, ack_set },
            redelivery_count,
            decode_failure: None,
        }
    }

    /// The entry's next message to hand over, if any is left.
    pub(crate) fn next_message(&mut self) -> Option<(MessageIdData, Payload)> {
        match &mut self.messages {
            EntryMessages::One(one) => one.take(),
            EntryMessages::Batch { messages, ack_set } => {
                messages.find(|(id, _)| !acknowledged_in(ack_set, id.batch_index))
            }
        }
    }
}

pub enum EngineEvent<Exe: Executor> {
    Message(Option<RawMessage>),
    EngineMessage(Option<EngineMessage<Exe>>),
}

pub enum EngineMessage<Exe: Executor> {
    Ack(MessageIdData, bool),
    Nack(MessageIdData),
    /// Individual acknowledgements of several messages, sent as one `CommandAck`.
    AckMany(Vec<MessageIdData>),
    /// Negative acknowledgements of several messages, sent as one
    /// `CommandRedeliverUnacknowledgedMessages`.
    NackMany(Vec<MessageIdData>),
    UnackedRedelivery,
    /// The consumer handed this message to the application: its ack timeout starts now.
    Received(MessageIdData),
    /// The application handed these messages, received earlier, on to its own code only now
    /// (it gathered them into a batch first): their ack timeouts start again now. A message
    /// no longer tracked (acknowledged, or already asked for again) is left untracked.
    Restart(Vec<MessageIdData>),
    GetConnection(oneshot::Sender<Arc<Connection<Exe>>>),
    /// The broker took these acknowledgements in a transaction: their ack timeouts end.
    AckedInTxn(Vec<MessageIdData>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageData {
    pub id: MessageIdData,
    pub batch_size: Option<i32>,
}

#[derive(Debug, Clone)]
pub struct DeadLetterPolicy {
    /// Maximum number of times that a message will be redelivered before being sent to the dead
    /// letter queue.
    pub max_redeliver_count: usize,
    /// Name of the dead topic where the failing messages will be sent.
    pub dead_letter_topic: String,
}
