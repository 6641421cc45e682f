//! # rstream-pulsar-model
//!
//! A deterministic, synchronous, sans-IO model of an Apache Pulsar broker together with the
//! behaviour of its Rust client, pulsar-rs (crate `pulsar` 6.x), that a consumer can observe.
//! It is the engine of ruststream's in-process Pulsar: tests run a service against it on a
//! virtual clock and see what a real broker and pulsar-rs would do, from round-robin dispatch
//! to redelivery counts, ack timeouts and dead-lettering.
//!
//! It never reads a clock, spawns nothing and performs no I/O. Every call that depends on time
//! takes `now` ([`ruststream::Instant`]); [`Cluster::next_deadline`] says when the next client
//! timer fires and [`Cluster::handle_timeouts`] runs what is due. An async wrapper drives it.
//!
//! ```
//! use std::time::Duration;
//! use ruststream::{Instant, SubscriptionType};
//! use ruststream_pulsar_model::{
//!     Cluster, ConsumerOptions, DeadLetterPolicy, InitialPosition, OutgoingMessage, TopicName,
//!     ORIGIN_MESSAGE_ID, REAL_TOPIC,
//! };
//!
//! let mut cluster = Cluster::new();
//! let now = Instant::ZERO;
//! let topic: TopicName = "refunds".parse()?;
//! let dlq: TopicName = "refunds-dlq".parse()?;
//! let options = ConsumerOptions {
//!     ack_timeout: Some(Duration::from_secs(120)),
//!     dead_letter: Some(DeadLetterPolicy { max_redeliver_count: 2, dead_letter_topic: dlq.clone() }),
//!     initial_position: InitialPosition::Earliest,
//!     ..ConsumerOptions::default()
//! };
//! let c = cluster.subscribe(&topic, "refunds", SubscriptionType::Shared, options, now)?;
//! cluster.flow(c, 10, now)?;
//! let id = cluster.publish(&topic, OutgoingMessage::new("refund #1"), now)?;
//!
//! // A retry is a negative acknowledgement: the broker redelivers at once and counts it.
//! let first = cluster.receive(c, now).expect("delivered");
//! assert_eq!((first.message_id, first.redelivery_count), (id, 0));
//! cluster.nack(c, &id, now)?;
//! let second = cluster.receive(c, now).expect("redelivered");
//! assert_eq!(second.redelivery_count, 1);
//!
//! // At the limit the client moves it to the dead-letter topic instead of handing it over.
//! cluster.nack(c, &id, now)?;
//! assert_eq!(cluster.receive(c, now), None);
//! let dead = &cluster.topic_messages(&dlq)[0];
//! assert_eq!(dead.properties()[REAL_TOPIC], "persistent://public/default/refunds");
//! assert_eq!(dead.properties()[ORIGIN_MESSAGE_ID], id.to_string());
//! assert_eq!(cluster.backlog(&topic, "refunds"), Some(0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Where each behaviour comes from, and how closely it is followed, is written beside the code:
//!
//! | concept | module |
//! |---|---|
//! | topic names as Pulsar resolves them | [`topic_name`] |
//! | message ids, and their `ORIGIN_MESSAGE_ID` form | [`message_id`] |
//! | published, stored and delivered messages, and the [`Content`] they share | [`message`] |
//! | consumer settings (ack timeout, dead-letter policy, initial position) | [`consumer_options`] |
//! | pulsar-rs's ack timeout and its 500 ms ticker | [`ack_timeout`] |
//! | pulsar-rs's dead-letter policy | [`dead_letter`] |
//! | the Java client's retry-topic properties (`RECONSUMETIMES`, `DELAY_TIME`) | [`retry_letter`] |
//! | what a replayed copy of a dead-lettered message carries (`dead-letter replay`) | [`replay`] |
//! | dispatch per subscription type, permits, redelivery counts | [`dispatch`] |
//! | Failover's active consumer, KeyShared's key ownership | [`active_consumer`], [`sticky_key`] |
//! | partitioned topics: which partition a producer picks | [`routing`] |
//! | a pattern over a namespace's topics | [`topic_pattern`] |
//! | a consumer of several topics, partitions or a pattern (pulsar-rs's `MultiTopicConsumer`) | [`topics_consumer`] |
//! | what a topic keeps: everything (tests), or until every subscription acknowledged it | [`retention`] |
//! | transactions: the coordinator and its timeouts, each topic's transaction buffer, each subscription's pending acknowledgements | [`transaction`] |
//! | the cluster and its calls | [`cluster`] |

pub mod ack_timeout;
pub mod active_consumer;
pub mod chunk;
pub mod cluster;
pub mod consumer;
pub mod consumer_options;
mod content;
pub mod dead_letter;
mod deadline_cache;
mod deadlines;
pub mod dispatch;
pub mod error;
mod hash;
pub mod message;
pub mod message_id;
pub mod outcome;
mod pending_ack;
mod persistent;
pub mod properties;
pub mod replay;
pub mod retention;
pub mod retry_letter;
mod roster;
pub mod routing;
pub mod sticky_key;
mod subscription;
mod topic;
pub mod topic_name;
pub mod topic_pattern;
pub mod topics_consumer;
pub mod transaction;
mod transaction_buffer;
mod txn;

pub use ack_timeout::UNACKED_REDELIVERY_TICK;
pub use chunk::{split_into_chunks, Chunk};
pub use cluster::Cluster;
pub use consumer::ConsumerId;
pub use consumer_options::{ConsumerOptions, InitialPosition};
pub use content::Content;
pub use dead_letter::{
    DeadLetterPolicy, DEAD_LETTER_ERROR, DEAD_LETTER_REASON, ORIGIN_MESSAGE_ID, REAL_TOPIC,
    REDRIVEN_FROM, REPLAYED_FROM,
};
pub use error::{ModelError, TopicNameError, TopicNameErrorKind, TopicNamePart, TopicPatternError};
pub use message::{Dispatched, OutgoingMessage, StoredMessage};
pub use message_id::MessageId;
pub use outcome::{Acknowledgement, Redelivery};
pub use properties::Properties;
pub use replay::{replayed_from, replayed_properties, DEAD_LETTER_PROPERTIES};
pub use retention::{Retention, DEFAULT_KEPT_WITHOUT_SUBSCRIPTION};
pub use retry_letter::{reconsume_times, DELAY_TIME, RECONSUMETIMES};
pub use routing::{choose_partition, partition_for_key, HashingScheme, RoundRobin};
pub use topic_name::{TopicDomain, TopicName};
pub use topic_pattern::TopicPattern;
pub use topics_consumer::{TopicSelection, TopicsConsumer};
pub use transaction::{Conflict, TransactionState, TxnId, TRANSACTION_TIMER_TICK};
