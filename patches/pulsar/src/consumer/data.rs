use std::sync::Arc;

use futures::channel::{mpsc, oneshot};

use crate::{
    connection::Connection,
    message::{proto::MessageIdData, Message as RawMessage},
    Error, Executor, Payload,
};

/// What the engine hands to the consumer: a message's id, its payload, the redelivery count
/// the broker sent with it (0 when the broker left it out), and why the entry could not be
/// decoded, if it could not (the payload is then the entry's as stored).
pub type MessageIdDataReceiver =
    mpsc::Receiver<Result<(MessageIdData, Payload, u32, Option<String>), Error>>;

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
    GetConnection(oneshot::Sender<Arc<Connection<Exe>>>),
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
