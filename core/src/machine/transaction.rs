//! A transactional registration's deliveries (see [`crate::transaction`]): what an end
//! becomes when the acknowledgement and the handler's publishes commit together.
//!
//! | the delivery ends in | calls |
//! |---|---|
//! | an acknowledgement, its publishes (and copy) confirmed | [`Call::Commit`]; the delivery is released once the driver says how the commit went |
//! | an acknowledgement whose publishes are not all answered | held until they are, then as above |
//! | a copy (`dead_letter`, `retry_later`, out of attempts) | [`Call::Abort`] at once for what the handler published; the copy goes in a transaction of its own, committed with the acknowledgement once the copy is confirmed ([`Call::Commit`]) |
//! | anything else, or a publish or copy that failed | [`Call::Abort`] at once, then the completion table's call |
//! | a commit that failed | the completion table's `retry`: the message comes back |
//!
//! What a handler published is visible only where it acknowledged its message: an attempt that
//! ended in a copy did not succeed, and its publishes go as a retried attempt's do.
//!
//! Where deliveries of one key run in order, the key stays with its delivery until the
//! transaction ends: the next message of the key publishes in a transaction that commits
//! after this one.

use alloc::string::String;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::publishes::{AtEnd, Held, Verdict};
use super::{Call, Delivered, Ended, SubscriptionMachine};
use crate::completion::{Settlement, SettlementError};
use crate::publish::Token;
use crate::Instant;

/// The transactional deliveries whose commit is under way, by token.
#[derive(Debug)]
pub(super) struct Committing<Id> {
    /// With a fixed seed: tokens are the driver's own numbers, and a run repeats.
    entries: HashMap<Token, (Delivered<Id>, Option<String>), FixedState>,
}

impl<Id> Committing<Id> {
    pub(super) fn new() -> Self {
        Committing {
            entries: HashMap::with_hasher(FixedState::default()),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

impl<Id: Clone + PartialEq, D> SubscriptionMachine<Id, D> {
    /// [`SubscriptionMachine::finish`] for a transactional registration (see the
    /// [module documentation](self)).
    pub(super) fn finish_in_transaction(
        &mut self,
        ended: Ended<'_, Id>,
    ) -> Result<Settlement, SettlementError> {
        let Ended {
            delivered,
            completion,
            at,
            key,
            token,
            publishes,
            attempt,
        } = ended;
        self.running = self.running.saturating_sub(1);
        let completion = self.resolve(completion, attempt, &delivered.id);
        let at_end = match publishes {
            0 => AtEnd::NOTHING,
            _ => self.publishes.ended(token, publishes),
        };
        let (republish, settlement) = self.settlement_of(completion, at_end, at, attempt);
        let commits = matches!(settlement, Ok(Settlement::Ack | Settlement::Republish(_)));
        if republish.is_some() {
            // The attempt did not succeed: what it published goes; the copy goes in a
            // transaction of its own, with the acknowledgement.
            self.calls.push_back(Call::Abort(token));
        }
        if commits && (republish.is_some() || at_end.unanswered) {
            // Held for its copy or its publishes, keeping its key until its transaction ends.
            let held = Held {
                delivered,
                key: key.filter(|_| self.config.key_ordered).map(String::from),
            };
            self.publishes.hold(token, held, republish);
        } else if commits {
            self.commit(token, delivered, key.map(String::from));
        } else {
            self.calls.push_back(Call::Abort(token));
            self.apply_settlement(delivered, &settlement, at, key);
        }
        settlement
    }

    /// [`SubscriptionMachine::answered`] for a transactional registration, once everything
    /// delivery `token` waited for is answered.
    pub(super) fn answered_in_transaction(
        &mut self,
        token: Token,
        held: Held<Id>,
        verdict: Verdict,
        now: Instant,
    ) {
        let Held { delivered, key } = held;
        let settlement = match verdict {
            Verdict::Ack(_) => return self.commit(token, delivered, key),
            Verdict::Nack => Settlement::Nack,
            Verdict::Leave => Settlement::Leave,
        };
        self.calls.push_back(Call::Abort(token));
        self.apply_settlement(delivered, &Ok(settlement), now, key.as_deref());
    }

    /// Ask for delivery `token`'s transaction to be committed with its acknowledgement.
    fn commit(&mut self, token: Token, delivered: Delivered<Id>, key: Option<String>) {
        let batch = (delivered.batch).map(|place| place.in_entry((self.entry_of)(&delivered.id)));
        self.calls.push_back(Call::Commit {
            token,
            id: delivered.id.clone(),
            batch,
        });
        let key = key.filter(|_| self.config.key_ordered);
        self.committing.entries.insert(token, (delivered, key));
    }

    /// The commit of delivery `token`'s transaction ([`Call::Commit`]) succeeded (`ok`), or
    /// failed at `now`: the broker aborted the transaction (its timeout passed, a publish or
    /// the acknowledgement was refused) or its answer was lost. A failed one is settled as
    /// `retry()`: its message comes back, and nothing it published is visible.
    pub fn committed(&mut self, token: Token, ok: bool, now: Instant) {
        let Some((delivered, key)) = self.committing.entries.remove(&token) else {
            return;
        };
        if !ok {
            return self.apply_settlement(delivered, &Ok(Settlement::Nack), now, key.as_deref());
        }
        let id = delivered.id.clone();
        if let Some(place) = delivered.batch {
            // Acknowledged at its index in its transaction: the entry needs no call of its
            // own once all of it is settled.
            let _ = self
                .entries
                .settle(place.in_entry((self.entry_of)(&id)), id.clone());
        }
        self.releases.push(id);
        self.let_key_go(key.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;
    use core::num::NonZeroU32;
    use core::time::Duration;

    use super::super::{Admission, Arrival, BatchSlot, EntryPosition, MachineConfig};
    use super::*;
    use crate::completion::Completion;
    use crate::publish::Origin;
    use crate::{HandlerOutcome, SubscriptionRules, SubscriptionType};

    fn entry_of(id: &u64) -> EntryPosition {
        EntryPosition {
            ledger: 1,
            entry: *id / 10,
            partition: -1,
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_elapsed(Duration::from_millis(ms))
    }

    fn machine(key_ordered: bool) -> SubscriptionMachine<u64, u64> {
        let config = MachineConfig {
            transactional: true,
            key_ordered,
            ..MachineConfig::new(4)
        };
        let rules = SubscriptionRules::new("s", SubscriptionType::Shared, None);
        SubscriptionMachine::new(rules, config, entry_of)
    }

    /// Start `id` (index `id % 10` of an entry of `size`, when `size > 1`) and end it as
    /// `outcome` at `now`, with `publishes` publishes, as delivery `token`.
    fn run(
        m: &mut SubscriptionMachine<u64, u64>,
        id: u64,
        size: u32,
        outcome: HandlerOutcome,
        publishes: u32,
        token: u32,
        key: Option<&str>,
    ) -> Result<Settlement, SettlementError> {
        let slot = (size > 1).then(|| BatchSlot {
            entry: entry_of(&id),
            index: (id % 10) as u32,
            size: NonZeroU32::new(size).unwrap(),
        });
        let arrival = Arrival {
            id: &id,
            batch: slot,
            redelivery_count: Some(0),
        };
        assert_eq!(m.arrive(&arrival), Admission::Handle);
        m.finish(Ended {
            delivered: Delivered {
                id,
                batch: slot.map(BatchSlot::place),
            },
            completion: Completion::Returned(outcome),
            at: at(0),
            key,
            token: Token(token),
            publishes,
            attempt: 0,
        })
    }

    fn calls(m: &mut SubscriptionMachine<u64, u64>, now: Instant) -> Vec<Call<u64>> {
        core::iter::from_fn(|| m.poll_call(now)).collect()
    }

    fn releases(m: &mut SubscriptionMachine<u64, u64>) -> Vec<u64> {
        core::iter::from_fn(|| m.poll_release()).collect()
    }

    #[test]
    fn an_ack_commits_and_is_released_once_the_commit_is_answered() {
        let mut m = machine(false);
        let settled = run(&mut m, 7, 1, HandlerOutcome::Ack, 0, 3, None);
        assert_eq!(settled, Ok(Settlement::Ack));
        let commit = Call::Commit {
            token: Token(3),
            id: 7,
            batch: None,
        };
        assert_eq!(calls(&mut m, at(0)), vec![commit]);
        assert_eq!(releases(&mut m), Vec::<u64>::new(), "held while committing");
        assert_eq!(m.committing(), 1);
        m.committed(Token(3), true, at(5));
        assert_eq!(calls(&mut m, at(5)), vec![], "no plain acknowledgement");
        assert_eq!(releases(&mut m), vec![7]);
        assert_eq!(m.committing(), 0);
    }

    #[test]
    fn a_retry_aborts_at_once_then_asks_for_the_message_again() {
        let mut m = machine(false);
        run(&mut m, 7, 1, HandlerOutcome::Retry, 2, 1, None).unwrap();
        assert_eq!(
            calls(&mut m, at(0)),
            vec![Call::Abort(Token(1)), Call::Nack(7)]
        );
        assert_eq!(releases(&mut m), vec![7]);
    }

    #[test]
    fn a_retry_after_aborts_at_once_and_asks_again_when_its_wait_ends() {
        let mut m = machine(false);
        let wait = HandlerOutcome::retry_after(Duration::from_secs(2));
        run(&mut m, 7, 1, wait, 1, 1, None).unwrap();
        assert_eq!(calls(&mut m, at(0)), vec![Call::Abort(Token(1))]);
        assert_eq!(calls(&mut m, at(1_999)), vec![]);
        assert_eq!(calls(&mut m, at(2_000)), vec![Call::Nack(7)]);
    }

    #[test]
    fn an_ack_waits_for_its_publishes_then_commits_or_aborts_if_one_failed() {
        let mut m = machine(false);
        run(&mut m, 7, 1, HandlerOutcome::Ack, 2, 1, None).unwrap();
        run(&mut m, 8, 1, HandlerOutcome::Ack, 1, 2, None).unwrap();
        assert_eq!(
            calls(&mut m, at(0)),
            vec![],
            "both wait for their publishes"
        );
        m.answered(Token(1), Origin::Handler, true, at(1));
        m.answered(Token(2), Origin::Handler, false, at(1));
        assert_eq!(
            calls(&mut m, at(1)),
            vec![Call::Abort(Token(2)), Call::Nack(8)]
        );
        m.answered(Token(1), Origin::Handler, true, at(2));
        let commit = Call::Commit {
            token: Token(1),
            id: 7,
            batch: None,
        };
        assert_eq!(calls(&mut m, at(2)), vec![commit]);
    }

    #[test]
    fn a_copy_aborts_the_handler_s_transaction_and_commits_its_own_once_confirmed() {
        let config = MachineConfig {
            transactional: true,
            dead_letter_topic: true,
            ..MachineConfig::new(4)
        };
        let rules = SubscriptionRules::new("s", SubscriptionType::Shared, None);
        let mut m: SubscriptionMachine<u64, u64> =
            SubscriptionMachine::new(rules, config, entry_of);
        let dead = HandlerOutcome::dead_letter("poison");
        run(&mut m, 7, 1, dead, 1, 1, None).unwrap();
        run(&mut m, 8, 1, dead, 0, 2, None).unwrap();
        assert_eq!(
            calls(&mut m, at(0)),
            vec![Call::Abort(Token(1)), Call::Abort(Token(2))],
            "what the handlers published goes at once"
        );
        m.answered(Token(1), Origin::Handler, true, at(1));
        m.answered(Token(1), Origin::Copy, true, at(1));
        m.answered(Token(2), Origin::Copy, false, at(1));
        let commit = Call::Commit {
            token: Token(1),
            id: 7,
            batch: None,
        };
        assert_eq!(
            calls(&mut m, at(1)),
            vec![commit, Call::Abort(Token(2))],
            "a confirmed copy commits; a failed one aborts, its message left to come back"
        );
    }

    #[test]
    fn a_failed_commit_asks_for_the_message_again() {
        let mut m = machine(false);
        run(&mut m, 7, 1, HandlerOutcome::Ack, 0, 1, None).unwrap();
        calls(&mut m, at(0));
        m.committed(Token(1), false, at(10));
        assert_eq!(calls(&mut m, at(10)), vec![Call::Nack(7)]);
        assert_eq!(releases(&mut m), vec![7]);
    }

    #[test]
    fn a_message_of_a_batched_entry_commits_at_its_index_and_the_entry_needs_no_call() {
        let mut m = machine(false);
        run(&mut m, 10, 2, HandlerOutcome::Ack, 0, 1, None).unwrap();
        run(&mut m, 11, 2, HandlerOutcome::Ack, 0, 2, None).unwrap();
        let made = calls(&mut m, at(0));
        let slot = |index| BatchSlot {
            entry: entry_of(&10),
            index,
            size: NonZeroU32::new(2).unwrap(),
        };
        assert_eq!(
            made,
            vec![
                Call::Commit {
                    token: Token(1),
                    id: 10,
                    batch: Some(slot(0)),
                },
                Call::Commit {
                    token: Token(2),
                    id: 11,
                    batch: Some(slot(1)),
                },
            ]
        );
        assert_eq!(slot(0).only_this(), vec![0b10]);
        assert_eq!(slot(1).only_this(), vec![0b01]);
        m.committed(Token(1), true, at(1));
        m.committed(Token(2), true, at(1));
        assert_eq!(calls(&mut m, at(1)), vec![]);
        let mut released = releases(&mut m);
        released.sort_unstable();
        assert_eq!(released, vec![10, 11]);
    }

    #[test]
    fn a_key_stays_with_its_delivery_until_its_transaction_ends() {
        let mut m = machine(true);
        let (first, second) = (7u64, 8u64);
        for id in [first, second] {
            let arrival = Arrival {
                id: &id,
                batch: None,
                redelivery_count: Some(0),
            };
            assert_eq!(m.arrive(&arrival), Admission::Handle);
        }
        assert!(m.start(Admission::Handle, Some("k"), &first));
        assert!(!m.start(Admission::Handle, Some("k"), &second));
        assert_eq!(m.hold("k", &second, second), None);
        m.finish(Ended {
            delivered: Delivered {
                id: first,
                batch: None,
            },
            completion: Completion::Returned(HandlerOutcome::Ack),
            at: at(0),
            key: Some("k"),
            token: Token(1),
            publishes: 0,
            attempt: 0,
        })
        .unwrap();
        assert_eq!(
            m.poll_start(),
            None,
            "the key is held while the commit runs"
        );
        m.committed(Token(1), true, at(1));
        assert_eq!(m.poll_start(), Some((second, false)));
    }
}
