//! pulsar-rs's client-side ack timeout ("unacked message resend delay").
//!
//! How pulsar-rs 6.9 does it:
//!
//! - When the consumer engine hands a message to the application's channel, it records
//!   `deadline = now + delay` for the message id, `now` being read just before the hand-over
//!   (`src/consumer/engine.rs`, `send_to_consumer`; a `HashMap` insert, so a redelivered copy
//!   replaces the old deadline).
//! - An acknowledgement removes the record (`ConsumerEngine::ack`); a negative acknowledgement
//!   does not (`EngineMessage::Nack` only sends the redelivery request).
//! - A ticker started with the consumer (`src/consumer/topic.rs`, `TopicConsumer::new`:
//!   `executor.interval(500 ms)`) makes the engine, on every tick, collect the ids whose
//!   `deadline < now` (strictly), send one `RedeliverUnacknowledgedMessages` with them, and
//!   forget them.
//!
//! So a message received at `r` with delay `d`, on a consumer created at `c`, is asked for again
//! at the first tick strictly after `r + d`: `c + 500 ms × (⌊(r + d − c) / 500 ms⌋ + 1)`. With
//! `c = r = 0` and `d = 2 s` that is 2.5 s, as measured with pulsar-rs 6.9.1 against
//! pulsar-lite 0.2.0 (redelivered about every 2.5 s).

use std::time::Duration;

use ruststream::Instant;

use crate::deadlines::Deadlines;
use crate::MessageId;

/// The period of pulsar-rs's unacked-message ticker (`src/consumer/topic.rs`).
pub const UNACKED_REDELIVERY_TICK: Duration = Duration::from_millis(500);

/// One consumer's ack-timeout records.
///
/// A consumer receives from one topic, whose messages share a ledger and a partition, so the
/// records key a message by its entry and batch index only: half the bytes of a whole id, in
/// both of the index's trees (what a delivery waiting in `retry_after` costs is mostly these).
#[derive(Debug, Clone)]
pub(crate) struct UnackedTracker {
    delay: Duration,
    /// When the consumer (and its ticker) started.
    origin: Instant,
    /// The ledger and partition of the messages received, known from the first.
    topic: Option<(u64, i32)>,
    deadlines: Deadlines<Short>,
}

/// A message id within its topic: entry and batch index.
type Short = (u64, Option<i32>);

impl UnackedTracker {
    pub(crate) fn new(delay: Duration, origin: Instant) -> Self {
        UnackedTracker {
            delay,
            origin,
            topic: None,
            deadlines: Deadlines::default(),
        }
    }

    /// The message was handed to the application at `now`.
    pub(crate) fn received(&mut self, id: MessageId, now: Instant) {
        let topic = *self.topic.get_or_insert((id.ledger_id, id.partition));
        debug_assert_eq!(
            topic,
            (id.ledger_id, id.partition),
            "a consumer receives from one topic"
        );
        self.deadlines
            .insert((id.entry_id, id.batch_index), now + self.delay);
    }

    /// The application acknowledged the message (an id of another topic has no record here).
    pub(crate) fn acknowledged(&mut self, id: &MessageId) {
        if self.topic == Some((id.ledger_id, id.partition)) {
            self.deadlines.remove(&(id.entry_id, id.batch_index));
        }
    }

    /// The first tick at which some record has expired, if any.
    pub(crate) fn next_tick(&self) -> Option<Instant> {
        let earliest = self.deadlines.earliest()?;
        Some(self.first_tick_after(earliest))
    }

    /// The first tick strictly after `t`.
    fn first_tick_after(&self, t: Instant) -> Instant {
        let period = UNACKED_REDELIVERY_TICK.as_nanos() as u64;
        let since = t.as_nanos().saturating_sub(self.origin.as_nanos());
        let ticks = since / period + 1;
        Instant::from_nanos(
            self.origin
                .as_nanos()
                .saturating_add(ticks.saturating_mul(period)),
        )
    }

    /// The tick at `tick`: the ids whose deadline is before it, now forgotten.
    pub(crate) fn expire(&mut self, tick: Instant) -> Vec<MessageId> {
        let Some((ledger_id, partition)) = self.topic else {
            return Vec::new();
        };
        let mut expired: Vec<MessageId> = self
            .deadlines
            .take_due(tick, false)
            .into_iter()
            .map(|(entry_id, batch_index)| MessageId {
                ledger_id,
                entry_id,
                partition,
                batch_index,
            })
            .collect();
        // pulsar-rs sends them in its map's order; the broker replays by entry either way.
        expired.sort_unstable();
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(entry: u64) -> MessageId {
        MessageId {
            ledger_id: 1,
            entry_id: entry,
            partition: -1,
            batch_index: None,
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_elapsed(Duration::from_millis(ms))
    }

    #[test]
    fn the_first_tick_strictly_after_the_deadline_fires() {
        let mut t = UnackedTracker::new(Duration::from_secs(2), at(0));
        t.received(id(0), at(0));
        // Deadline 2.0 s falls on a tick; `deadline < now` is false there, so 2.5 s.
        assert_eq!(t.next_tick(), Some(at(2500)));
        assert!(t.expire(at(2000)).is_empty());
        assert_eq!(t.expire(at(2500)), vec![id(0)]);
        assert_eq!(t.next_tick(), None);
    }

    #[test]
    fn ticks_count_from_the_consumer_start() {
        let mut t = UnackedTracker::new(Duration::from_millis(1000), at(100));
        t.received(id(0), at(1250));
        // Deadline 2.25 s; ticks at 0.1 + 0.5k s: 2.1, 2.6 → 2.6 s.
        assert_eq!(t.next_tick(), Some(at(2600)));
    }

    #[test]
    fn an_id_of_another_topic_is_not_acknowledged_here() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        t.received(id(0), at(0));
        t.acknowledged(&MessageId {
            ledger_id: 2,
            ..id(0)
        });
        assert_eq!(
            t.expire(at(1500)),
            vec![id(0)],
            "still recorded, and whole again"
        );
    }

    #[test]
    fn redelivery_replaces_the_deadline_and_ack_forgets_it() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        t.received(id(0), at(0));
        t.received(id(0), at(3000));
        assert_eq!(t.next_tick(), Some(at(4500)));
        t.acknowledged(&id(0));
        assert_eq!(t.next_tick(), None);
    }
}
