//! What a consumer is configured with: the parts of pulsar-rs's `ConsumerBuilder` and
//! `ConsumerOptions` that change what the application sees.

use std::time::Duration;

use crate::DeadLetterPolicy;

/// Where a new subscription starts reading: pulsar-rs's `InitialPosition`
/// (`src/consumer/initial_position.rs`). It matters only when the subscription is created; an
/// existing subscription keeps its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum InitialPosition {
    /// From the oldest message still in the topic.
    Earliest,
    /// From the next message published: pulsar-rs's default.
    #[default]
    Latest,
}

/// A consumer's settings.
///
/// The defaults are pulsar-rs's: no ack timeout (`with_unacked_message_resend_delay` is `None`
/// unless set), no dead-letter policy, priority 0, subscriptions created at
/// [`InitialPosition::Latest`]. pulsar-rs names an unnamed consumer `consumer_` plus eight
/// random characters; the model, which must be deterministic, names it `consumer_<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerOptions {
    /// The consumer name. Pulsar uses it to choose the active consumer of a Failover
    /// subscription and to place the consumer on a KeyShared hash ring.
    pub name: Option<String>,
    /// Pulsar's priority level (`ConsumerOptions::priority_level`): lower is preferred. Shared
    /// dispatch serves the lowest level that has permits first; Failover picks the active
    /// consumer among the lowest level.
    pub priority_level: i32,
    /// Where the subscription starts if this consumer creates it.
    pub initial_position: InitialPosition,
    /// pulsar-rs's `with_unacked_message_resend_delay`: a delivery neither acknowledged nor
    /// negatively acknowledged this long after the client received it is asked for again. See
    /// [`UNACKED_REDELIVERY_TICK`](crate::UNACKED_REDELIVERY_TICK) for when exactly.
    pub ack_timeout: Option<Duration>,
    /// pulsar-rs's `with_dead_letter_policy`.
    pub dead_letter: Option<DeadLetterPolicy>,
    /// pulsar-rs's `ConsumerOptions::schema`: checked against the topic's registered schema
    /// when subscribing ([`Cluster::subscribe`](crate::Cluster::subscribe)).
    pub schema: Option<ruststream::Schema>,
}
