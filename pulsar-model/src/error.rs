//! What can go wrong: a malformed topic name, and a call the broker would refuse.

use std::fmt;

use std::time::Duration;

use ruststream::{Instant, SubscriptionType};

use crate::{Conflict, ConsumerId, MessageId, TopicName, TransactionState, TxnId};

/// The forms a topic name may take, quoted by every [`TopicNameError`] so the reader knows what
/// to write instead.
const ACCEPTED_FORMS: &str = "write `<topic>` (read as persistent://public/default/<topic>), \
     `<tenant>/<namespace>/<topic>` (read as persistent://<tenant>/<namespace>/<topic>), or \
     `persistent://<tenant>/<namespace>/<topic>` / `non-persistent://<tenant>/<namespace>/<topic>`";

/// A topic name that Apache Pulsar would not resolve (or, for the deprecated four-part form,
/// that ruststream does not accept).
///
/// Returned by [`TopicName::parse`]. It keeps the input as written, so a message built from it
/// can quote exactly what the user typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid topic name `{input}`: {kind}; {ACCEPTED_FORMS}")]
pub struct TopicNameError {
    input: String,
    kind: TopicNameErrorKind,
}

impl TopicNameError {
    pub(crate) fn new(input: &str, kind: TopicNameErrorKind) -> Self {
        TopicNameError {
            input: input.to_owned(),
            kind,
        }
    }

    /// The name as it was given.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Which rule the name breaks.
    pub fn kind(&self) -> &TopicNameErrorKind {
        &self.kind
    }
}

/// Which part of a topic name an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicNamePart {
    /// The tenant (`public` in `persistent://public/default/refunds`).
    Tenant,
    /// The cluster of Pulsar's deprecated four-part names.
    Cluster,
    /// The namespace (`default` in `persistent://public/default/refunds`).
    Namespace,
    /// The topic's own name (`refunds` in `persistent://public/default/refunds`).
    LocalName,
}

impl fmt::Display for TopicNamePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TopicNamePart::Tenant => "tenant",
            TopicNamePart::Cluster => "cluster",
            TopicNamePart::Namespace => "namespace",
            TopicNamePart::LocalName => "topic name",
        })
    }
}

/// The rule a topic name breaks. The rules are those of Pulsar's `TopicName`, `NamespaceName`,
/// `TopicDomain` and `NamedEntity` (apache/pulsar, `pulsar-common/.../common/naming/`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicNameErrorKind {
    /// Nothing to resolve: the name is empty (or only slashes).
    Empty,
    /// A name without `://` must have one part (`refunds`) or three (`tenant/ns/refunds`).
    /// Empty parts are skipped first, as Pulsar's `StringUtils.split` does.
    ShortNameParts {
        /// How many non-empty parts the name has.
        parts: usize,
    },
    /// The text before `://` is neither `persistent` nor `non-persistent` (compared without
    /// regard to case, as Pulsar's `TopicDomain.getEnum` does).
    UnknownDomain {
        /// The text before `://`.
        domain: String,
    },
    /// After `domain://` there must be `<tenant>/<namespace>/<topic>`.
    FullNameParts {
        /// How many `/`-separated parts follow the domain.
        parts: usize,
    },
    /// Four parts after the domain: Pulsar reads this as the deprecated
    /// `<tenant>/<cluster>/<namespace>/<topic>` form, which ruststream does not accept.
    LegacyClusterForm,
    /// A part of the name is empty.
    EmptyPart {
        /// Which one.
        part: TopicNamePart,
    },
    /// A tenant or namespace contains a character outside `[-=:.a-zA-Z0-9_]` (Pulsar's
    /// `NamedEntity` pattern).
    IllegalCharacter {
        /// Which part.
        part: TopicNamePart,
        /// The part as written.
        value: String,
        /// The first character that is not allowed.
        character: char,
    },
}

impl fmt::Display for TopicNameErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopicNameErrorKind::Empty => f.write_str("the name is empty"),
            TopicNameErrorKind::ShortNameParts { parts } => write!(
                f,
                "a name without `://` must have 1 or 3 non-empty `/`-separated parts, this one \
                 has {parts}"
            ),
            TopicNameErrorKind::UnknownDomain { domain } => write!(
                f,
                "the domain `{domain}` before `://` is neither `persistent` nor `non-persistent`"
            ),
            TopicNameErrorKind::FullNameParts { parts } => write!(
                f,
                "after `<domain>://` there must be exactly <tenant>/<namespace>/<topic>, found \
                 {parts} part(s)"
            ),
            TopicNameErrorKind::LegacyClusterForm => f.write_str(
                "it has four parts after the domain, Pulsar's deprecated \
                 <tenant>/<cluster>/<namespace>/<topic> form, which ruststream does not accept",
            ),
            TopicNameErrorKind::EmptyPart { part } => write!(f, "the {part} is empty"),
            TopicNameErrorKind::IllegalCharacter {
                part,
                value,
                character,
            } => write!(
                f,
                "the {part} `{value}` contains `{character}`, but a tenant or namespace may only \
                 use letters, digits and `_`, `-`, `=`, `:`, `.`"
            ),
        }
    }
}

/// A call the in-process broker refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A producer or consumer declares a schema of another kind than the one registered on
    /// the topic; Apache Pulsar 4.0.7 answers `IncompatibleSchema: Incompatible schema: exists
    /// schema type AVRO, new schema type PROTOBUF_NATIVE`. Within one kind the model accepts
    /// any definition: the broker's compatibility check (Avro schema resolution, Protobuf
    /// descriptor rules) is not modelled.
    #[error(
        "IncompatibleSchema: Incompatible schema: exists schema type {existing}, new schema \
         type {requested} (on {topic}); declare a {existing} schema of the topic's type, or \
         use another topic"
    )]
    IncompatibleSchema {
        /// The topic.
        topic: TopicName,
        /// The kind of the registered schema.
        existing: ruststream::SchemaKind,
        /// The kind declared.
        requested: ruststream::SchemaKind,
    },
    /// The consumer never subscribed, or has been closed.
    #[error(
        "consumer {consumer} is not connected: it never subscribed or it was closed; \
         use the id returned by `subscribe` and do not use it after `close`"
    )]
    UnknownConsumer {
        /// The consumer named in the call.
        consumer: ConsumerId,
    },
    /// A second consumer on an Exclusive subscription that already has one; Pulsar answers
    /// `ConsumerBusy: Exclusive consumer is already connected`
    /// (`AbstractDispatcherSingleActiveConsumer.addConsumer`).
    #[error(
        "Exclusive consumer is already connected to subscription `{subscription}` on \
         {topic}: an Exclusive subscription takes one consumer; close it first, or use \
         Failover (one active, others standing by) or Shared"
    )]
    ExclusiveConsumerBusy {
        /// The topic.
        topic: TopicName,
        /// The subscription.
        subscription: String,
    },
    /// A consumer asks for a type other than that of the consumers already connected to the
    /// subscription; Pulsar answers `SubscriptionBusy: Subscription is of different type`
    /// (`PersistentSubscription.addConsumer`). With no consumer connected, the type may change.
    #[error(
        "subscription `{subscription}` on {topic} is of a different type: its connected \
         consumers are {existing} and this one asks for {requested}; subscribe as \
         {existing}, use another subscription name, or close the {existing} consumers \
         first"
    )]
    SubscriptionTypeMismatch {
        /// The topic.
        topic: TopicName,
        /// The subscription.
        subscription: String,
        /// The type of the connected consumers.
        existing: SubscriptionType,
        /// The type asked for.
        requested: SubscriptionType,
    },
    /// The model stores messages and keeps durable cursors, which non-persistent topics do not
    /// have; it refuses them rather than behaving unlike Pulsar.
    #[error(
        "{topic} is a non-persistent topic, which the in-process Pulsar does not model \
         (it keeps durable subscriptions only); use persistent://{}/{}/{}",
        .topic.tenant(),
        .topic.namespace(),
        .topic.local_name()
    )]
    NonPersistentTopic {
        /// The topic.
        topic: TopicName,
    },
    /// A message published to, or a consumer subscribed to, the name of a partitioned topic
    /// itself: its messages live in its partitions, and a client routes each message to one of
    /// them and subscribes to every one.
    #[error(
        "{topic} is a partitioned topic of {partitions} partitions: publish each message to          one of them (`{topic}-partition-<n>`, chosen by `routing::choose_partition`) and          subscribe to each (`TopicsConsumer` does)"
    )]
    PartitionedTopic {
        /// The partitioned topic.
        topic: TopicName,
        /// How many partitions it has.
        partitions: u32,
    },
    /// A partitioned topic created where a topic of that name exists already; Pulsar answers
    /// `409 Conflict`.
    #[error(
        "cannot create {topic} with {partitions} partitions: a topic of that name exists          already ({existing}); create partitioned topics before anything publishes to or          subscribes to the name, or use another name"
    )]
    TopicExists {
        /// The topic.
        topic: TopicName,
        /// The partitions asked for.
        partitions: u32,
        /// What exists: "a topic" or "a partitioned topic of N partitions".
        existing: String,
    },
    /// A transaction the coordinator does not know; Pulsar answers `TransactionNotFound`.
    #[error(
        "TransactionNotFound: transaction {txn} is unknown to the coordinator: this cluster \
         never opened it, or it ended and was forgotten (a cluster that frees acknowledged \
         messages forgets ended transactions, as the broker does); use the id \
         `new_transaction` returned, and a new transaction for new work"
    )]
    UnknownTransaction {
        /// The transaction named in the call.
        txn: TxnId,
    },
    /// A transaction that is no longer open: committed, aborted, or aborted by the coordinator
    /// when its timeout passed. Pulsar's coordinator forgets a transaction as it ends and
    /// answers `TransactionNotFound` (`InvalidTxnStatus` while it is ending).
    #[error(
        "TransactionNotFound: cannot {operation} transaction {txn}: {}",
        crate::txn::not_open(.state, .ended_at, .timeout)
    )]
    TransactionNotOpen {
        /// The transaction named in the call.
        txn: TxnId,
        /// What the call asked for: `commit`, `abort`, `publish in`, `acknowledge in`.
        operation: &'static str,
        /// What became of it.
        state: TransactionState,
        /// When it ended.
        ended_at: Instant,
        /// The timeout it was opened with.
        timeout: Duration,
    },
    /// A transactional acknowledgement of a message pending in a transaction (this one
    /// included) or already acknowledged; Pulsar answers `TransactionConflict`
    /// (`PendingAckHandleImpl`).
    #[error(
        "TransactionConflict: transaction {txn} cannot acknowledge message {message} on \
         subscription `{subscription}` of {topic}: {}",
        crate::txn::conflict(.cause, .txn)
    )]
    TransactionConflict {
        /// The transaction that asked.
        txn: TxnId,
        /// The consumer's topic.
        topic: TopicName,
        /// The consumer's subscription.
        subscription: String,
        /// The message.
        message: MessageId,
        /// What it ran into.
        cause: Conflict,
    },
    /// A partitioned topic asked for with no partitions, or on a name that is itself a
    /// partition's.
    #[error("cannot create {topic} with {partitions} partitions: {why}")]
    InvalidPartitioning {
        /// The topic.
        topic: TopicName,
        /// The partitions asked for.
        partitions: u32,
        /// What is wrong.
        why: &'static str,
    },
}

/// A topic pattern that cannot be used: what was written and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid topic pattern `{pattern}`: {reason}")]
pub struct TopicPatternError {
    pub(crate) pattern: String,
    pub(crate) reason: String,
}

impl TopicPatternError {
    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}
