//! A delivery's publishes: its acknowledgement waits until every message its handler published,
//! and the copy the machine ordered for it, is answered.
//!
//! A handler need not wait for what it publishes. Its publishes are answered later, on the
//! producer's side, and reach the machine one by one (`SubscriptionMachine::answered`), before
//! or after the handler ends; the handler's end says how many it made. A delivery whose
//! settlement is an acknowledgement is held here until all of them are answered:
//!
//! | answered | the delivery |
//! |---|---|
//! | every publish confirmed (and the copy, if one was ordered) | acknowledged |
//! | a publish of the handler failed | negatively acknowledged, as `retry()`: it comes back, and its handler publishes again |
//! | the copy failed (its handler's publishes confirmed) | left unsettled: it comes back after the ack timeout, as before the copy |
//!
//! A publish that failed before the handler ended turns its acknowledgement into the negative
//! one at once, and no copy is ordered. Nothing is acknowledged before it is answered, so a
//! crash between a publish and its answer leaves the delivery unacknowledged: it comes back,
//! and its copies may be published twice, never lost.

use alloc::string::String;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::Delivered;
use crate::broker::{Origin, Token};
use crate::completion::{Republish, Settlement};

/// A delivery held for its publishes' answers.
#[derive(Debug)]
pub(super) struct Held<Id> {
    pub(super) delivered: Delivered<Id>,
    /// Its key, where it keeps the key until it is settled (ordered retries).
    pub(super) key: Option<String>,
}

/// What one answer settled: the delivery, if it was the last it waited for, and the copy it
/// answered, with what the driver kept of the delivery, if it was the copy's.
pub(super) struct Settled<Id, K> {
    /// How it settles: acknowledged (everything confirmed; a copy, if one was ordered, is
    /// where it went), asked for again (a publish of its handler failed), or left to come
    /// back (its copy failed).
    pub(super) delivery: Option<(Held<Id>, Settlement)>,
    pub(super) copied: Option<(Republish, K, Id)>,
}

/// What a delivery still waits for.
#[derive(Debug)]
struct Entry<Id, K> {
    /// How many publishes its handler made, once it ended.
    issued: Option<u32>,
    /// How many of them were answered.
    answered: u32,
    /// Whether one of them failed.
    failed: bool,
    /// The copy ordered for it, and its answer once it came.
    copy: Option<(Republish, Option<bool>)>,
    /// What the driver kept of the delivery, for the copy's completion.
    kept: Option<K>,
    /// The delivery, once its handler ended and it waits.
    held: Option<Held<Id>>,
}

impl<Id, K> Entry<Id, K> {
    fn new() -> Self {
        Entry {
            issued: None,
            answered: 0,
            failed: false,
            copy: None,
            kept: None,
            held: None,
        }
    }

    /// How it settles, if nothing it waits for is unanswered.
    fn settles(&self) -> Option<Settlement> {
        if self.issued != Some(self.answered) {
            return None;
        }
        match self.copy {
            Some((_, None)) => None,
            _ if self.failed => Some(Settlement::Nack),
            Some((_, Some(false))) => Some(Settlement::Leave),
            Some((_, Some(true))) => Some(Settlement::Ack),
            None => Some(Settlement::Ack),
        }
    }
}

/// The deliveries whose publishes are not all answered (see the [module documentation](self)).
#[derive(Debug)]
pub(super) struct Ledger<Id, K> {
    /// By token, with a fixed seed: tokens are the machine's own numbers, nothing to defend
    /// against, and a run repeats.
    entries: HashMap<Token, Entry<Id, K>, FixedState>,
    /// How many entries hold their delivery.
    held: usize,
}

/// A delivery's publishes as its handler ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AtEnd {
    /// One failed already.
    pub(super) failed: bool,
    /// Some are not answered yet.
    pub(super) unanswered: bool,
}

impl AtEnd {
    /// A delivery that published nothing: nothing failed, nothing to wait for.
    pub(super) const NOTHING: AtEnd = AtEnd {
        failed: false,
        unanswered: false,
    };
}

impl<Id: Clone, K> Ledger<Id, K> {
    pub(super) fn new() -> Self {
        Ledger {
            entries: HashMap::with_hasher(FixedState::default()),
            held: 0,
        }
    }

    /// Deliveries held for answers.
    #[inline]
    pub(super) fn held(&self) -> usize {
        self.held
    }

    /// Delivery `token`'s handler ended, having made `publishes`. What they are now; a
    /// delivery with nothing unanswered is forgotten.
    #[inline]
    pub(super) fn ended(&mut self, token: Token, publishes: u32) -> AtEnd {
        // No publish, no answer to wait for (a copy is ordered only after this).
        if publishes == 0 {
            return AtEnd::NOTHING;
        }
        let entry = self.entries.entry(token).or_insert_with(Entry::new);
        entry.issued = Some(publishes);
        let at_end = AtEnd {
            failed: entry.failed,
            unanswered: entry.answered < publishes,
        };
        if !at_end.unanswered {
            self.entries.remove(&token);
        }
        at_end
    }

    /// Hold `held` until its handler's publishes are answered, and `copy`, ordered now, too
    /// (with what the driver kept of the delivery, told back once the copy is answered).
    pub(super) fn hold(
        &mut self,
        token: Token,
        held: Held<Id>,
        copy: Option<(Republish, Option<K>)>,
    ) {
        let entry = self.entries.entry(token).or_insert_with(Entry::new);
        // A handler that published nothing left no entry: it waits for the copy alone.
        entry.issued.get_or_insert(0);
        if let Some((copy, kept)) = copy {
            entry.copy = Some((copy, None));
            entry.kept = kept;
        }
        if entry.held.replace(held).is_none() {
            self.held += 1;
        }
    }

    /// A publish of delivery `token` was answered: confirmed (`ok`) or not. The delivery it
    /// settles, if it was the last it waited for, with how; and, for the copy's answer, the
    /// copy with what was kept of the delivery.
    pub(super) fn answered(&mut self, token: Token, origin: Origin, ok: bool) -> Settled<Id, K> {
        let entry = self.entries.entry(token).or_insert_with(Entry::new);
        let mut copied = None;
        match (origin, &mut entry.copy) {
            (Origin::Republish, Some((copy, answer @ None))) => {
                *answer = Some(ok);
                let id = entry.held.as_ref().map(|held| held.delivered.id.clone());
                copied = (entry.kept.take()).and_then(|kept| Some((*copy, kept, id?)));
            }
            // A copy's answer for a delivery that ordered none (it cannot be): ignored.
            (Origin::Republish, _) => {}
            _ => {
                entry.answered += 1;
                entry.failed |= !ok;
            }
        }
        let Some(settlement) = entry.settles() else {
            return Settled {
                delivery: None,
                copied,
            };
        };
        if entry.held.is_none() {
            // Its handler runs still, or ended with nothing to hold.
            if entry.issued.is_some() {
                self.entries.remove(&token);
            }
            return Settled {
                delivery: None,
                copied,
            };
        }
        let delivery = self.entries.remove(&token).and_then(|entry| entry.held);
        if delivery.is_some() {
            self.held -= 1;
        }
        Settled {
            delivery: delivery.map(|held| (held, settlement)),
            copied,
        }
    }

    /// The service is stopping: give up waiting. The deliveries held are returned (they stay
    /// unacknowledged, and come back).
    pub(super) fn abandon(&mut self) -> impl Iterator<Item = Held<Id>> + '_ {
        self.held = 0;
        core::mem::take(&mut self.entries)
            .into_values()
            .filter_map(|entry| entry.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn held(id: u32) -> Held<u32> {
        Held {
            delivered: Delivered { id, batch: None },
            key: None,
        }
    }

    #[test]
    fn answers_before_the_end_need_no_hold_and_a_failure_is_remembered() {
        let mut ledger: Ledger<u32, ()> = Ledger::new();
        assert!(ledger
            .answered(Token(1), Origin::Handler, true)
            .delivery
            .is_none());
        let at_end = ledger.ended(Token(1), 1);
        assert_eq!(
            at_end,
            AtEnd {
                failed: false,
                unanswered: false
            }
        );
        assert!(ledger
            .answered(Token(2), Origin::Handler, false)
            .delivery
            .is_none());
        assert!(ledger.ended(Token(2), 2).failed);
        assert_eq!(ledger.held(), 0);
    }

    #[test]
    fn a_held_delivery_is_settled_by_its_last_answer() {
        let mut ledger: Ledger<u32, ()> = Ledger::new();
        assert!(ledger.ended(Token(3), 2).unanswered);
        ledger.hold(Token(3), held(3), None);
        assert_eq!(ledger.held(), 1);
        assert!(ledger
            .answered(Token(3), Origin::Handler, true)
            .delivery
            .is_none());
        let (settled, settlement) = ledger
            .answered(Token(3), Origin::Handler, true)
            .delivery
            .expect("the last answer");
        assert_eq!((settled.delivered.id, settlement), (3, Settlement::Ack));
        assert_eq!(ledger.held(), 0);
    }

    #[test]
    fn a_copy_is_waited_for_and_a_handler_failure_wins_over_it() {
        let copy = Republish::RetryTopic {
            delay: Duration::from_secs(1),
            count: 1,
        };
        let mut ledger: Ledger<u32, ()> = Ledger::new();
        ledger.ended(Token(4), 0);
        ledger.hold(Token(4), held(4), Some((copy, Some(()))));
        let answered = ledger.answered(Token(4), Origin::Republish, true);
        assert_eq!(
            answered.copied,
            Some((copy, (), 4)),
            "what was kept comes back"
        );
        let (_, settlement) = answered.delivery.expect("settled");
        assert_eq!(settlement, Settlement::Ack);

        ledger.ended(Token(5), 0);
        ledger.hold(Token(5), held(5), Some((copy, None)));
        let (_, settlement) = ledger
            .answered(Token(5), Origin::Republish, false)
            .delivery
            .unwrap();
        assert_eq!(settlement, Settlement::Leave);

        assert!(ledger.ended(Token(6), 1).unanswered);
        ledger.hold(Token(6), held(6), Some((copy, None)));
        assert!(ledger
            .answered(Token(6), Origin::Republish, true)
            .delivery
            .is_none());
        let (_, settlement) = ledger
            .answered(Token(6), Origin::Handler, false)
            .delivery
            .unwrap();
        assert_eq!(settlement, Settlement::Nack);
    }
}
