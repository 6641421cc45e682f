//! The loop itself.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;

use futures::future::{select, Either};
use ruststream::message::Message;
use ruststream::replay::{Replay, ReplayEnd, ReplayError, ReplayEvent, ReplaySummary};
use ruststream::runtime::Runtime;
use ruststream::{Instant, MessageId};
use ruststream_pulsar_model::{replayed_from, replayed_properties, REAL_TOPIC};

use super::entries::Entries;
use super::{Dead, DeadLetters, Next};

/// `future`'s output, or `None` if `stop` completes first. `stop` is asked first, so that a
/// stop already asked for is taken even when the next message is ready at once.
async fn unless_stopped<T>(
    future: impl Future<Output = T>,
    stop: &mut Pin<Box<dyn Future<Output = ()> + Send>>,
) -> Option<T> {
    match select(stop.as_mut(), pin!(future)).await {
        Either::Left(_) => None,
        Either::Right((output, _)) => Some(output),
    }
}

/// Run `replay` over `source` on `runtime` (whose timer spaces the moves at the asked rate).
pub(crate) async fn run<D: DeadLetters>(
    mut source: D,
    replay: Replay,
    runtime: Arc<dyn Runtime>,
) -> Result<ReplaySummary, ReplayError> {
    let Replay {
        options,
        mut events,
        mut stop,
        ..
    } = replay;
    let mut summary = ReplaySummary::new(options.dry_run);
    events(&ReplayEvent::Started {
        from: source.topic().to_owned(),
        subscription: options.subscription.clone(),
        dry_run: options.dry_run,
    });
    let index_acks = source.acks_batch_index();
    let mut entries: Entries<D::Id> = Entries::new();
    let mut next_move: Option<Instant> = None;
    let end = loop {
        if options.limit.is_some_and(|limit| summary.moved >= limit) {
            break ReplayEnd::Limit;
        }
        let dead = match unless_stopped(source.next(), &mut stop).await {
            None => break ReplayEnd::Stopped,
            Some(Ok(Next::End(end))) => break end,
            Some(Ok(Next::Message(dead))) => dead,
            Some(Err(source_error)) => {
                leave_unacknowledged(entries, &mut summary, &mut events);
                source.close().await;
                return Err(ReplayError::Read {
                    source: source_error,
                    summary,
                });
            }
        };
        if entries.moved_already(&dead.entry, &dead.message_id) {
            continue;
        }
        if !options.selects(&dead.properties) {
            summary.skipped_by_filter += 1;
            keep(&mut entries, &dead, index_acks);
            events(&ReplayEvent::Filtered {
                id: dead.message_id,
            });
            continue;
        }
        let to = match options.to.as_deref().or_else(|| real_topic(&dead)) {
            Some(to) => to.to_owned(),
            None => {
                summary.skipped_without_topic += 1;
                keep(&mut entries, &dead, index_acks);
                events(&ReplayEvent::NoTarget {
                    id: dead.message_id,
                });
                continue;
            }
        };
        if options.dry_run {
            summary.moved += 1;
            events(&ReplayEvent::WouldMove {
                id: dead.message_id,
                to,
            });
            continue;
        }
        if let Some(rate) = options.rate {
            if let Some(at) = next_move {
                if unless_stopped(runtime.sleep_until(at), &mut stop)
                    .await
                    .is_none()
                {
                    // Not copied: it goes back to the subscription as it is.
                    break ReplayEnd::Stopped;
                }
            }
            next_move = Some(runtime.now().saturating_add(rate.interval()));
        }
        // From here on the message is in flight: no stop is taken until it is settled.
        let copy = copy_of(&dead, source.topic(), to.clone());
        let copy_id = match source.publish(copy).await {
            Ok(id) => id,
            Err(error) => {
                summary.failed += 1;
                keep(&mut entries, &dead, index_acks);
                events(&ReplayEvent::Failed {
                    id: dead.message_id,
                    to,
                    error: error.to_string(),
                });
                continue;
            }
        };
        summary.moved += 1;
        let acked = acknowledge(&mut source, &mut entries, &dead, index_acks).await;
        events(&ReplayEvent::Moved {
            id: dead.message_id,
            to,
            copy: copy_id,
        });
        if let Err((ids, error)) = acked {
            summary.duplicates_possible += ids.len() as u64;
            events(&ReplayEvent::Unacknowledged {
                ids,
                reason: format!("acknowledging failed: {error}"),
            });
        }
    };
    summary.end = end;
    leave_unacknowledged(entries, &mut summary, &mut events);
    source.close().await;
    Ok(summary)
}

/// Report the moved messages of entries left unacknowledged: moved again by a later replay.
fn leave_unacknowledged<Id: Clone>(
    entries: Entries<Id>,
    summary: &mut ReplaySummary,
    events: &mut ruststream::replay::EventSink,
) {
    let ids = entries.unacknowledged();
    if !ids.is_empty() {
        summary.duplicates_possible += ids.len() as u64;
        events(&ReplayEvent::Unacknowledged {
            ids,
            reason: "their batched entry was not moved whole, and the broker acknowledges \
                     whole entries (batch-index acknowledgement is off)"
                .to_owned(),
        });
    }
}

/// The message stays on the dead-letter topic: without batch-index acknowledgement, its
/// entry must not be acknowledged whole.
fn keep<Id: Clone>(entries: &mut Entries<Id>, dead: &Dead<Id>, index_acks: bool) {
    if let (Some((_, size)), false) = (dead.batch, index_acks) {
        entries.keep(&dead.entry, size, &dead.id);
    }
}

/// The topic the message came from, as the dead-letter step wrote it.
fn real_topic<Id>(dead: &Dead<Id>) -> Option<&str> {
    dead.properties
        .iter()
        .find(|(name, value)| name == REAL_TOPIC && !value.is_empty())
        .map(|(_, value)| value.as_str())
}

/// The copy of `dead` (read from `dlq`) to publish to `to`.
fn copy_of<Id>(dead: &Dead<Id>, dlq: &str, to: String) -> Message {
    let mut copy = Message::new(to, dead.payload.clone());
    copy.key = dead.key.clone();
    copy.event_time = dead.event_time;
    copy.properties = replayed_properties(
        &dead.properties,
        replayed_from(dlq, &dead.message_id.to_string()),
    );
    copy
}

/// Acknowledge `dead`, whose copy is confirmed: at once (a message of a batch at batch-index
/// level, when the broker takes that; the broker settles the entry once its last message is
/// acknowledged), or for a message of a batch without batch-index acknowledgement, with its
/// entry once all of it moved. On failure, the messages
/// whose copies are confirmed and that stay unacknowledged.
async fn acknowledge<D: DeadLetters>(
    source: &mut D,
    entries: &mut Entries<D::Id>,
    dead: &Dead<D::Id>,
    index_acks: bool,
) -> Result<(), (Vec<MessageId>, String)> {
    let Some((index, size)) = dead.batch else {
        return source
            .ack(&dead.id, None)
            .await
            .map_err(|e| (vec![dead.message_id], e.to_string()));
    };
    if index_acks {
        return source
            .ack(&dead.id, Some((index, size)))
            .await
            .map_err(|e| (vec![dead.message_id], e.to_string()));
    }
    match entries.moved(&dead.entry, size, &dead.id, dead.message_id) {
        // Messages of the entry are still to move.
        None => Ok(()),
        Some(entry_id) => source
            .ack(&entry_id, None)
            .await
            .map_err(|e| (entry_ids(dead, size), e.to_string())),
    }
}

/// The ids of every message of `dead`'s entry of `size`.
fn entry_ids<Id>(dead: &Dead<Id>, size: u32) -> Vec<MessageId> {
    let parts = dead.message_id.parts();
    (0..size)
        .map(|i| MessageId::new(&[parts[0], parts[1], parts[2], i64::from(i)]))
        .collect()
}
