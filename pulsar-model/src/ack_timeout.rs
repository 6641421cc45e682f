//! pulsar-rs's client-side ack timeout ("unacked message resend delay").
//!
//! How the pulsar-rs 6.9.1 ruststream carries does it (`patches/README.md`, section 15):
//!
//! - When the consumer hands a message to the application (its stream yields it), the consumer
//!   engine records `deadline = now + delay` for the message id (`src/consumer/engine.rs`,
//!   `EngineMessage::Received`; a `HashMap` insert, so a redelivered copy replaces the old
//!   deadline). A message still waiting in the receiver queue has no deadline yet, as with the
//!   Java client. (pulsar-rs 6.9.1 itself records it when the engine puts the message into the
//!   receiver queue.)
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

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::Duration;

use foldhash::fast::FixedState;
use ruststream::Instant;

use crate::MessageId;

/// The period of pulsar-rs's unacked-message ticker (`src/consumer/topic.rs`).
pub const UNACKED_REDELIVERY_TICK: Duration = Duration::from_millis(500);

/// One consumer's ack-timeout records.
///
/// A record only matters by the tick that will fire it, and every record of a consumer has
/// the same delay from a clock that never goes back, so records are received in the order of
/// their ticks. They are kept twice, 16 bytes each time (what a delivery waiting in
/// `retry_after` costs is mostly these):
///
/// - `records`, by message, to find one when it is acknowledged or received again;
/// - `order`, in the order received, which is tick order, to find the next tick and the
///   expired records in `O(1)` each. An acknowledged or replaced record stays in `order` until
///   it reaches the front or the queue is rebuilt, which happens once stale entries
///   outnumber live ones (so each operation costs `O(1)` amortised, plus a rebuild's
///   `O(log n)` share).
///
/// A consumer receives from one topic, whose messages share a ledger and a partition, so a
/// record keys its message by entry and batch index only.
#[derive(Debug, Clone)]
pub(crate) struct UnackedTracker {
    delay: Duration,
    /// When the consumer (and its ticker) started.
    origin: Instant,
    /// The ledger and partition of the messages received, known from the first.
    topic: Option<(u64, i32)>,
    records: HashSet<Record, FixedState>,
    order: VecDeque<Record>,
}

/// A message's ack-timeout record: its entry and batch index (`-1` for a message published
/// alone, as Pulsar's `MessageIdData` writes it) and the tick that fires it, counted from the
/// consumer's start. Equal and hashed by message only, so that the set finds a record by its
/// message whatever its tick.
#[derive(Debug, Clone, Copy)]
struct Record {
    entry: u64,
    batch: i32,
    /// Ticks since the consumer started; a deadline more than about 68 years away saturates.
    tick: u32,
}

impl Record {
    fn of(id: &MessageId, tick: u32) -> Self {
        Record {
            entry: id.entry_id,
            batch: id.batch_index.unwrap_or(-1),
            tick,
        }
    }

    fn batch_index(self) -> Option<i32> {
        (self.batch >= 0).then_some(self.batch)
    }
}

impl PartialEq for Record {
    fn eq(&self, other: &Self) -> bool {
        (self.entry, self.batch) == (other.entry, other.batch)
    }
}

impl Eq for Record {}

impl Hash for Record {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.entry, self.batch).hash(state);
    }
}

/// Stale entries `order` may hold beyond as many as live ones before it is rebuilt.
const STALE_SLACK: usize = 64;

impl UnackedTracker {
    pub(crate) fn new(delay: Duration, origin: Instant) -> Self {
        UnackedTracker {
            delay,
            origin,
            topic: None,
            records: HashSet::default(),
            order: VecDeque::new(),
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
        let record = Record::of(&id, self.tick_after(now + self.delay));
        debug_assert!(
            self.order
                .back()
                .is_none_or(|last| last.tick <= record.tick),
            "records arrive in tick order"
        );
        match self.records.replace(record) {
            None => self.order.push_back(record),
            // Received again within the same tick: its place in `order` still holds.
            Some(old) if old.tick == record.tick => {}
            // Received again: its entry in `order` is stale now.
            Some(_) => {
                self.order.push_back(record);
                self.compact();
            }
        }
    }

    /// The application handed the message on at `now`, after it was received (a batch it
    /// gathered): its deadline starts again, if it still has one (the patched pulsar-rs's
    /// `Consumer::restart_ack_timeout`). A message acknowledged, or already asked for again,
    /// stays without one.
    pub(crate) fn restarted(&mut self, id: &MessageId, now: Instant) {
        if self.topic == Some((id.ledger_id, id.partition))
            && self.records.contains(&Record::of(id, 0))
        {
            self.received(*id, now);
        }
    }

    /// The application acknowledged the message (an id of another topic has no record here).
    pub(crate) fn acknowledged(&mut self, id: &MessageId) {
        if self.topic == Some((id.ledger_id, id.partition))
            && self.records.remove(&Record::of(id, 0))
        {
            self.compact();
        }
    }

    /// The first tick at which some record has expired, if any.
    pub(crate) fn next_tick(&self) -> Option<Instant> {
        self.order.front().map(|first| self.instant_of(first.tick))
    }

    /// The instant of tick `tick`.
    fn instant_of(&self, tick: u32) -> Instant {
        let period = UNACKED_REDELIVERY_TICK.as_nanos() as u64;
        Instant::from_nanos(
            self.origin
                .as_nanos()
                .saturating_add(u64::from(tick).saturating_mul(period)),
        )
    }

    /// The tick strictly after `t`: pulsar-rs fires a record when `deadline < now`.
    fn tick_after(&self, t: Instant) -> u32 {
        let period = UNACKED_REDELIVERY_TICK.as_nanos() as u64;
        let since = t.as_nanos().saturating_sub(self.origin.as_nanos());
        u32::try_from(since / period + 1).unwrap_or(u32::MAX)
    }

    /// The tick at `tick`: the ids whose deadline is before it, now forgotten.
    pub(crate) fn expire(&mut self, tick: Instant) -> Vec<MessageId> {
        let Some((ledger_id, partition)) = self.topic else {
            return Vec::new();
        };
        let mut expired = Vec::new();
        while let Some(&first) = self.order.front() {
            if self.instant_of(first.tick) > tick {
                break;
            }
            self.order.pop_front();
            if self.is_live(first) {
                self.records.remove(&first);
                expired.push(MessageId {
                    ledger_id,
                    entry_id: first.entry,
                    partition,
                    batch_index: first.batch_index(),
                });
            }
        }
        self.drop_stale_front();
        // pulsar-rs sends them in its map's order; the broker replays by entry either way.
        expired.sort_unstable();
        expired
    }

    /// Whether `entry` of `order` is its message's current record.
    fn is_live(&self, entry: Record) -> bool {
        self.records
            .get(&entry)
            .is_some_and(|r| r.tick == entry.tick)
    }

    /// Keep the front of `order` live, so that it tells the next tick; rebuild `order` from
    /// the records once stale entries outnumber live ones.
    fn compact(&mut self) {
        self.drop_stale_front();
        if self.order.len() > 2 * self.records.len() + STALE_SLACK {
            let mut live: Vec<Record> = self.records.iter().copied().collect();
            live.sort_unstable_by_key(|r| (r.tick, r.entry, r.batch));
            self.order.clear();
            self.order.extend(live);
        }
    }

    fn drop_stale_front(&mut self) {
        while let Some(&first) = self.order.front() {
            if self.is_live(first) {
                break;
            }
            self.order.pop_front();
        }
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

    #[test]
    fn a_restart_moves_a_live_deadline_and_leaves_the_others() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        t.received(id(0), at(0));
        t.received(id(1), at(0));
        t.received(id(2), at(0));
        t.acknowledged(&id(1));
        assert_eq!(t.expire(at(1500)), vec![id(0), id(2)]);
        t.received(id(3), at(1600));
        t.restarted(&id(0), at(2000));
        t.restarted(&id(1), at(2000));
        t.restarted(&id(3), at(2000));
        assert_eq!(t.next_tick(), Some(at(3500)), "3's first deadline is gone");
        assert!(t.expire(at(3000)).is_empty());
        assert_eq!(
            t.expire(at(3500)),
            vec![id(3)],
            "0 (already asked for) and 1 (acknowledged) were not tracked again"
        );
    }

    #[test]
    fn the_next_tick_skips_acknowledged_records() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        t.received(id(0), at(0));
        t.received(id(1), at(2000));
        t.acknowledged(&id(0));
        assert_eq!(t.next_tick(), Some(at(3500)));
        assert!(t.expire(at(1500)).is_empty());
        assert_eq!(t.expire(at(3500)), vec![id(1)]);
    }

    #[test]
    fn acknowledged_records_do_not_pile_up() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        for entry in 0..10_000 {
            t.received(id(entry), at(entry));
        }
        for entry in 1..10_000 {
            t.acknowledged(&id(entry));
        }
        assert_eq!(t.records.len(), 1);
        assert!(t.order.len() <= 2 + STALE_SLACK, "{} queued", t.order.len());
        assert_eq!(t.expire(at(1500)), vec![id(0)]);
        assert_eq!(t.next_tick(), None);
        assert!(t.order.is_empty());
    }

    #[test]
    fn a_record_received_again_in_its_tick_after_an_ack_expires_once() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        t.received(id(0), at(100));
        t.received(id(1), at(100));
        t.acknowledged(&id(1));
        t.received(id(1), at(200));
        assert_eq!(t.expire(at(1500)), vec![id(0), id(1)]);
        assert_eq!(t.next_tick(), None);
    }

    #[test]
    fn batch_indexes_are_records_of_their_own() {
        let mut t = UnackedTracker::new(Duration::from_secs(1), at(0));
        let of = |index| MessageId {
            batch_index: Some(index),
            ..id(3)
        };
        t.received(of(0), at(0));
        t.received(of(1), at(0));
        t.acknowledged(&of(0));
        assert_eq!(t.expire(at(1500)), vec![of(1)]);
    }
}
