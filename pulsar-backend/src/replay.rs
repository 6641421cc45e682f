//! Moving dead-lettered messages back to the topic they came from: the library call behind
//! `<service> dead-letter replay`, for a service that offers it its own way (an admin
//! endpoint, a job) and for tests on the in-process Pulsar.
//!
//! [`run`] reads the dead-letter topic with a subscription of its own
//! ([`DEFAULT_REPLAY_SUBSCRIPTION`], Shared, from the earliest message), one message at a
//! time: it publishes a copy to the message's `REAL_TOPIC` (or [`ReplayOptions::to`]) with the
//! payload, key, event time and properties, less the dead-letter ones and plus
//! [`REPLAYED_FROM`] ([`replayed_properties`]); waits for the broker's receipt; acknowledges
//! the original and waits until the broker has the acknowledgement; then takes the next. A
//! replay killed at any point leaves at most the message in flight copied and still on the
//! dead-letter topic, which the next replay moves again: a duplicate is possible, a loss is
//! not. Messages it skips (filter, no `REAL_TOPIC`, a failed copy) stay unacknowledged on its
//! subscription, for a later replay.
//!
//! Two older names stay readable, as messages and brokers carry them: a copy replayed before
//! the command had its name may carry [`REDRIVEN_FROM`], which a replay drops and writes
//! anew as [`REPLAYED_FROM`]; the default subscription keeps its name (`ruststream-redrive`),
//! so that one created under it keeps its position.
//!
//! A message of a batched entry is acknowledged on its own only where the broker acknowledges
//! at batch-index level (Pulsar's `acknowledgmentAtBatchIndexLevelEnabled=true`, with
//! [`PulsarBroker::batch_index_acknowledgement`](crate::PulsarBroker::batch_index_acknowledgement)
//! or [`ReplayOptions::batch_index_acks`]); elsewhere its entry is acknowledged once all of it
//! was moved, and the moved messages of an entry left in part are counted in
//! [`ReplaySummary::duplicates_possible`].
//!
//! ```
//! use std::sync::Arc;
//! use ruststream::app::StartContext;
//! use ruststream_pulsar::replay::{self, Replay, ReplayOptions, REPLAYED_FROM};
//! use ruststream_pulsar::{InProcessPulsar, PulsarBroker};
//! use ruststream::message::Message;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pulsar = InProcessPulsar::new();
//! let dead = Message::new("refunds-dlq", b"{\"id\":7}".to_vec())
//!     .property("REAL_TOPIC", "persistent://public/default/refunds");
//! pulsar.publish(dead)?;
//!
//! let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
//! let context = StartContext::new(runtime).in_process().with(pulsar.clone());
//! let broker = PulsarBroker::<()>::new("pulsar://localhost:6650");
//! let summary = replay::run(broker, Replay::new(ReplayOptions::new("refunds-dlq")), context)
//!     .await?;
//! assert_eq!(summary.moved, 1);
//! let back = &pulsar.topic_messages("refunds")?[0];
//! assert!(back.property(REPLAYED_FROM).is_some());
//! assert_eq!(back.property("REAL_TOPIC"), None);
//! # Ok(())
//! # }
//! ```

use ruststream::app::StartContext;

use crate::PulsarBroker;

pub use ruststream::replay::{
    EventSink, FilterError, PropertyFilter, Rate, RateError, Replay, ReplayEnd, ReplayError,
    ReplayEvent, ReplayOptions, ReplaySummary, DEFAULT_QUIET, DEFAULT_REPLAY_SUBSCRIPTION,
};
pub use ruststream_pulsar_model::replay::{ORIGIN_MESSAGE_IDY_TIME, REAL_SUBSCRIPTION};
pub use ruststream_pulsar_model::{
    replayed_from, replayed_properties, DEAD_LETTER_ERROR, DEAD_LETTER_PROPERTIES,
    DEAD_LETTER_REASON, DELAY_TIME, ORIGIN_MESSAGE_ID, REAL_TOPIC, RECONSUMETIMES, REDRIVEN_FROM,
    REPLAYED_FROM,
};

/// Run `replay` on the Pulsar broker `broker` describes: its URL, token, TLS, namespace and
/// connect timeout, as `context`'s settings and [`PulsarOverrides`](crate::PulsarOverrides)
/// override them; or, when `context` asks for in-process stand-ins
/// ([`StartContext::in_process`]), on the [`InProcessPulsar`](crate::InProcessPulsar) it
/// carries (`StartContext::with(pulsar)`), on its runtime's clock. No handler of `broker` is
/// started. See the [module](self) for what is moved and when it is acknowledged.
///
/// # Errors
///
/// The broker cannot be reached or the dead-letter topic subscribed ([`ReplayError::Connect`]),
/// a topic name is invalid, or reading failed midway ([`ReplayError::Read`], with what was done
/// until then). A copy that fails is not an error: it is counted in
/// [`ReplaySummary::failed`] and its message stays.
pub async fn run<S: Send + Sync + 'static>(
    broker: PulsarBroker<S>,
    replay: Replay,
    context: StartContext,
) -> Result<ReplaySummary, ReplayError> {
    crate::broker::replay(broker, replay, context).await
}
