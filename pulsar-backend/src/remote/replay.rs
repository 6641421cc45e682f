//! The dead-letter replay over pulsar-rs: a consumer of its own on the dead-letter topic
//! (Shared, from the earliest message, so that a replay stopped or killed continues where it
//! left off) and the broker's publisher.
//!
//! When it ends: the subscription's backlog, asked when it starts, says whether there is
//! anything at all; the topic's last message id then says which message was the last one there
//! at the start, and the replay ends once it has read it (messages published to the dead-letter
//! topic after the start wait for the next replay). A dead-letter topic read as several topics
//! (a partitioned one) has no single last id: the replay ends once no message came for
//! [`ReplayOptions::quiet`](ruststream::replay::ReplayOptions::quiet), as it does when the
//! last message was acknowledged already.
//!
//! An acknowledgement in pulsar-rs is a command sent without an answer. To know the broker
//! has it before the next message is copied, the replay asks for the consumer's statistics
//! right after it: that request takes the same queue to the same connection (through the
//! consumer's engine, then the connection's control channel), and the broker answers commands
//! of a connection in order, so the answer comes after the acknowledgement was handled.
//!
//! pulsar-rs's consumer engine takes commands (the acknowledgement, the request) only between
//! two messages, and asks the broker for more as it receives them: with more messages waiting
//! than its queue holds, it waits for room in the queue, and the acknowledgement waits behind
//! it. So before the request, the replay takes what the queue holds into memory of its own
//! (read from there first); should the answer not come within [`ACK_ROUND`], it does so
//! again. A replay of a dead-letter topic much larger than the queue may thus hold a good part
//! of it in memory; one of up to [`RECEIVER_QUEUE`] messages holds no more than that.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{select, Either};
use futures::{FutureExt, StreamExt};
use pulsar::consumer::{ConsumerOptions, InitialPosition};
use pulsar::message::proto::MessageIdData;
use pulsar::{Consumer, Executor, SubType};
use ruststream::app::BoxError;
use ruststream::message::Message;
use ruststream::replay::{Replay, ReplayEnd, ReplayError, ReplaySummary};
use ruststream::runtime::{Flavor, Runtime};
use ruststream::{MessageId, PublishError};

use super::publish::Publisher;
use super::{connect, RemoteSettings};
use crate::replay_loop::{Dead, DeadLetters, EntryKey, Next};
use crate::url::BrokerUrl;
use ruststream::publish::Receipt;

/// How many messages the replay's consumer asks the broker for ahead, and its queue holds:
/// pulsar-rs's default.
const RECEIVER_QUEUE: u32 = 1000;

/// How long the answer that confirms an acknowledgement is waited for before the consumer's
/// queue is emptied again (see the module's documentation).
const ACK_ROUND: Duration = Duration::from_secs(2);

/// How long closing a consumer may take before it is dropped instead.
const CLOSE_BOUND: Duration = Duration::from_secs(5);

/// Run `replay` on the broker at `url`, connecting with `settings`, on `runtime`.
pub(crate) async fn replay(
    settings: RemoteSettings,
    url: BrokerUrl,
    replay: Replay,
    runtime: Arc<dyn Runtime>,
) -> Result<ReplaySummary, ReplayError> {
    let flavor = runtime.flavor();
    if flavor == Flavor::Tokio {
        #[cfg(feature = "tokio")]
        return replay_with(settings, url, replay, runtime, pulsar::TokioExecutor).await;
    }
    #[cfg(feature = "async-std")]
    {
        let exe = super::executor::AppExecutor::new(runtime.clone());
        replay_with(settings, url, replay, runtime, exe).await
    }
    #[cfg(not(feature = "async-std"))]
    {
        let _ = (settings, url, replay);
        Err(ReplayError::Connect {
            broker: "pulsar",
            source: format!(
                "the replay runs on {flavor:?}, but `rstream-pulsar` was built with \
                 pulsar-rs's tokio transport only: enable its `smol` or `async-std` feature, \
                 or run on tokio"
            )
            .into(),
        })
    }
}

fn connect_failed(source: impl Into<BoxError>) -> ReplayError {
    ReplayError::Connect {
        broker: "pulsar",
        source: source.into(),
    }
}

async fn replay_with<Exe: Executor>(
    settings: RemoteSettings,
    url: BrokerUrl,
    replay: Replay,
    runtime: Arc<dyn Runtime>,
    exe: Exe,
) -> Result<ReplaySummary, ReplayError> {
    let options = &replay.options;
    let from = crate::topic::resolve(&options.from, settings.namespace.as_deref())
        .map_err(|e| ReplayError::InvalidTopic {
            topic: options.from.clone(),
            what: "the dead-letter topic",
            reason: e.to_string(),
        })?
        .to_string();
    let pulsar = connect::connect(&url, &settings.connection, settings.connect_timeout, exe)
        .await
        .map_err(connect_failed)?;
    let subscribing = pulsar
        .consumer()
        .with_topic(from.clone())
        .with_subscription(options.subscription.clone())
        .with_subscription_type(SubType::Shared)
        .with_consumer_name(format!("ruststream-replay-{}", std::process::id()))
        // The permits pulsar-rs gives the broker; the receiver queue is the room between its
        // engine and the replay.
        .with_batch_size(RECEIVER_QUEUE)
        .with_options(
            ConsumerOptions::default()
                .with_receiver_queue_size(RECEIVER_QUEUE)
                .with_initial_position(InitialPosition::Earliest),
        )
        .build::<Vec<u8>>();
    let bound = settings.connect_timeout;
    let timer = std::pin::pin!(runtime.sleep(bound));
    let mut consumer = match select(std::pin::pin!(subscribing), timer).await {
        Either::Left((Ok(consumer), _)) => consumer,
        Either::Left((Err(e), _)) => {
            return Err(connect_failed(format!(
                "cannot subscribe `{}` to {from}: {e}",
                options.subscription
            )))
        }
        Either::Right(_) => {
            return Err(connect_failed(format!(
                "cannot subscribe `{}` to {from} within {bound:?} \
                 (`PulsarBroker::connect_timeout`)",
                options.subscription
            )))
        }
    };
    let mut ahead = VecDeque::new();
    let end = end_of(&mut consumer, &mut ahead, &runtime)
        .await
        .map_err(connect_failed)?;
    let source = RemoteDeadLetters {
        publisher: Publisher::new(
            pulsar,
            runtime.clone(),
            settings.namespace.clone(),
            settings.key_hashing,
        )
        .chunking(settings.chunk_over)
        .batching(settings.batching)
        .pending(settings.pending.0, settings.pending.1),
        consumer,
        ahead,
        from,
        end,
        quiet: options.quiet,
        runtime: runtime.clone(),
        batch_index_acks: options
            .batch_index_acks
            .unwrap_or(settings.batch_index_acks),
    };
    crate::replay_loop::run(source, replay, runtime).await
}

/// Where reading stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The subscription had nothing when the replay started.
    Nothing,
    /// At this message, the topic's last at the start.
    At(Last),
    /// Not known: when no message came for a while.
    Unknown,
}

/// A topic's last message id when the replay started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Last {
    ledger: u64,
    entry: u64,
    /// Its index in its batch, when the broker says.
    index: Option<i32>,
}

impl Last {
    /// Whether the message `id`, of a batch of `batch_size` if batched, is the last message or
    /// after it.
    fn reached_by(&self, id: &MessageIdData, batch_size: Option<i32>) -> bool {
        let here = (id.ledger_id, id.entry_id);
        if here != (self.ledger, self.entry) {
            return here > (self.ledger, self.entry);
        }
        match (id.batch_index, self.index) {
            (None, _) => true,
            (Some(index), Some(last)) if last >= 0 => index >= last,
            // The broker did not say which message of the entry is the last: its last one.
            (Some(index), _) => batch_size.is_none_or(|size| index + 1 >= size),
        }
    }
}

/// Take what `consumer`'s queue holds into `ahead`, so that its engine can take a command.
fn make_room<Exe: Executor>(
    consumer: &mut Consumer<Vec<u8>, Exe>,
    ahead: &mut VecDeque<pulsar::consumer::Message<Vec<u8>>>,
) {
    while let Some(Some(Ok(message))) = consumer.next().now_or_never() {
        ahead.push_back(message);
    }
}

/// Where reading `consumer`'s topic stops (see [`End`]).
async fn end_of<Exe: Executor>(
    consumer: &mut Consumer<Vec<u8>, Exe>,
    ahead: &mut VecDeque<pulsar::consumer::Message<Vec<u8>>>,
    runtime: &Arc<dyn Runtime>,
) -> Result<End, String> {
    let stats = loop {
        make_room(consumer, ahead);
        let asking = std::pin::pin!(consumer.get_stats());
        let round = std::pin::pin!(runtime.sleep(ACK_ROUND));
        if let Either::Left((answer, _)) = select(asking, round).await {
            break answer
                .map_err(|e| format!("asking the dead-letter subscription's backlog: {e}"))?;
        }
    };
    if !stats.is_empty() && stats.iter().all(|s| s.msg_backlog == Some(0)) {
        return Ok(End::Nothing);
    }
    if consumer.topics().len() != 1 {
        return Ok(End::Unknown);
    }
    let last = loop {
        make_room(consumer, ahead);
        let asking = std::pin::pin!(consumer.get_last_message_id());
        let round = std::pin::pin!(runtime.sleep(ACK_ROUND));
        if let Either::Left((answer, _)) = select(asking, round).await {
            break answer
                .map_err(|e| format!("asking the dead-letter topic's last message id: {e}"))?;
        }
    };
    Ok(match last.first() {
        // -1:-1, no message ever.
        Some(id) if id.ledger_id as i64 == -1 || id.entry_id as i64 == -1 => End::Nothing,
        Some(id) => End::At(Last {
            ledger: id.ledger_id,
            entry: id.entry_id,
            index: id.batch_index,
        }),
        None => End::Unknown,
    })
}

/// The replay's side of pulsar-rs.
struct RemoteDeadLetters<Exe: Executor> {
    consumer: Consumer<Vec<u8>, Exe>,
    /// Messages taken from the consumer's queue to let an acknowledgement through, in order.
    ahead: VecDeque<pulsar::consumer::Message<Vec<u8>>>,
    publisher: Publisher<Exe>,
    from: String,
    end: End,
    quiet: Duration,
    runtime: Arc<dyn Runtime>,
    batch_index_acks: bool,
}

/// What the replay acknowledges a message with: its topic (a partition's) and id.
#[derive(Debug, Clone)]
struct AckId {
    topic: Arc<str>,
    id: MessageIdData,
}

impl<Exe: Executor> DeadLetters for RemoteDeadLetters<Exe> {
    type Id = AckId;

    fn topic(&self) -> &str {
        &self.from
    }

    fn acks_batch_index(&self) -> bool {
        self.batch_index_acks
    }

    async fn next(&mut self) -> Result<Next<AckId>, BoxError> {
        if self.end == End::Nothing {
            return Ok(Next::End(ReplayEnd::Drained));
        }
        loop {
            let quiet = std::pin::pin!(self.runtime.sleep(self.quiet));
            let next = match self.ahead.pop_front() {
                Some(message) => {
                    futures::future::Either::Left(std::future::ready(Some(Ok(message))))
                }
                None => futures::future::Either::Right(self.consumer.next()),
            };
            let message = match select(next, quiet).await {
                Either::Left((Some(Ok(message)), _)) => message,
                Either::Left((Some(Err(error)), _)) => {
                    // pulsar-rs reconnects by itself; what was not acknowledged comes back.
                    tracing::warn!(%error, "the dead-letter consumer reported an error; continuing");
                    continue;
                }
                Either::Left((None, _)) => {
                    return Err("the dead-letter topic's consumer closed".into());
                }
                Either::Right(_) => return Ok(Next::End(ReplayEnd::Quiet(self.quiet))),
            };
            let id = message.message_id().clone();
            let batch_size = message.message_id.batch_size;
            if let End::At(last) = self.end {
                if last.reached_by(&id, batch_size) {
                    self.end = End::Nothing;
                }
            }
            let topic: Arc<str> = message.topic.as_str().into();
            let batch = match (id.batch_index, batch_size) {
                (Some(index), Some(size)) => Some((
                    u32::try_from(index).unwrap_or(0),
                    u32::try_from(size).unwrap_or(1),
                )),
                _ => None,
            };
            let key = message.key();
            let metadata = message.metadata();
            if let Some(chunks) = metadata.num_chunks_from_msg.filter(|n| *n > 1) {
                return Err(crate::chunked::replay_refused(
                    &super::consumer::printable(&id),
                    metadata.uuid.as_deref().unwrap_or("?"),
                    u32::try_from(chunks).unwrap_or(0),
                )
                .into());
            }
            let properties = metadata
                .properties
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect();
            // 0 is how the Java client writes "no event time".
            let event_time = metadata
                .event_time
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis);
            return Ok(Next::Message(Dead {
                message_id: crate::message_id::of_proto(&id, None),
                entry: EntryKey {
                    topic: topic.clone(),
                    ledger: id.ledger_id,
                    entry: id.entry_id,
                },
                batch,
                key,
                properties,
                event_time,
                payload: message.payload.data,
                id: AckId { topic, id },
            }));
        }
    }

    async fn publish(&mut self, copy: Message) -> Result<MessageId, PublishError> {
        ruststream::publish::Publish::publish(&self.publisher, copy, Receipt::none()).await
    }

    async fn ack(&mut self, id: &AckId, index: Option<(u32, u32)>) -> Result<(), BoxError> {
        let ack = match index {
            Some((index, size)) => MessageIdData {
                ack_set: crate::replay_loop::ack_set(index, size),
                batch_size: i32::try_from(size).ok(),
                ..id.id.clone()
            },
            // The entry as a whole: pulsar-rs sends the id as it is, and the broker reads an
            // id without an ack set as its whole entry.
            None => MessageIdData {
                ack_set: Vec::new(),
                ..id.id.clone()
            },
        };
        self.consumer.ack_with_id(&id.topic, ack).await?;
        // Behind the acknowledgement on the same connection: answered once it was handled.
        loop {
            make_room(&mut self.consumer, &mut self.ahead);
            let asking = std::pin::pin!(self.consumer.get_stats());
            let round = std::pin::pin!(self.runtime.sleep(ACK_ROUND));
            match select(asking, round).await {
                Either::Left((answer, _)) => return answer.map(|_| ()).map_err(Into::into),
                Either::Right(_) => continue,
            }
        }
    }

    async fn close(mut self) {
        self.publisher.close().await;
        // The reading consumer's engine may be waiting for room in its queue, and answers a
        // close only between two messages: empty the queue (what is in it goes back to the
        // subscription), then close within a bound; past it, dropping it closes it too.
        while let Some(Some(_)) = self.consumer.next().now_or_never() {}
        let closing = std::pin::pin!(self.consumer.close());
        let bound = std::pin::pin!(self.runtime.sleep(CLOSE_BOUND));
        if let Either::Left((Err(error), _)) = select(closing, bound).await {
            tracing::warn!(
                %error,
                "closing the dead-letter consumer failed; the broker drops it with the \
                 connection"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ledger: u64, entry: u64, index: Option<i32>) -> MessageIdData {
        MessageIdData {
            ledger_id: ledger,
            entry_id: entry,
            batch_index: index,
            ..MessageIdData::default()
        }
    }

    #[test]
    fn the_last_message_is_reached_at_it_or_past_it() {
        let last = Last {
            ledger: 5,
            entry: 10,
            index: None,
        };
        assert!(!last.reached_by(&id(5, 9, None), None));
        assert!(!last.reached_by(&id(4, 99, None), None));
        assert!(last.reached_by(&id(5, 10, None), None));
        assert!(last.reached_by(&id(6, 0, None), None));
        // A batch whose last message the broker did not name: its last one.
        assert!(!last.reached_by(&id(5, 10, Some(3)), Some(5)));
        assert!(last.reached_by(&id(5, 10, Some(4)), Some(5)));
        let named = Last {
            index: Some(2),
            ..last
        };
        assert!(!named.reached_by(&id(5, 10, Some(1)), Some(5)));
        assert!(named.reached_by(&id(5, 10, Some(2)), Some(5)));
    }
}
