//! A transactional registration's deliveries (see [`crate::transaction`]): what an end
//! becomes when the acknowledgements and the handlers' publishes commit together.
//!
//! Each delivery runs in a transaction: its own, or with grouping
//! ([`TransactionPolicy::group`]) the one that deliveries starting within the group's wait of
//! the first share ([`SubscriptionMachine::transaction_of`]).
//!
//! | the delivery ends in | calls |
//! |---|---|
//! | an acknowledgement, its publishes confirmed | none yet: once every delivery of its transaction acknowledged (and the group is full or its wait passed), [`Call::Commit`] of them all; each is released as it waits (a group's wait must let a virtual clock move), and the driver counts the commit in flight until it is answered, then settles them as it went |
//! | an acknowledgement whose publishes are not all answered | held until they are, then as above |
//! | a copy (`dead_letter`, `retry_later`, out of attempts) | [`Call::Abort`] of its transaction at once; the copy goes in a transaction of its own, committed with its acknowledgement once the copy is confirmed ([`Call::Commit`]) |
//! | anything else, or a publish or copy that failed | [`Call::Abort`] of its transaction at once (once per transaction), then the completion table's call |
//! | an acknowledgement in a transaction that was aborted | `retry()`: the message comes back |
//! | a commit that failed | `retry()` for each of its messages: they come back |
//!
//! What a handler published is visible only where its message was acknowledged: an attempt
//! that ended in a copy did not succeed, and its publishes go as a retried attempt's do.
//!
//! Where deliveries of one key run in order, a key stays with its delivery until the
//! transaction has ended: the next message of the key publishes in a transaction that
//! commits after this one.

use alloc::string::String;
use alloc::vec::Vec;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::entries::EntryPosition;
use super::publishes::{AtEnd, Held, Verdict};
use super::{Call, Delivered, Ended, SubscriptionMachine};
use crate::completion::{Settlement, SettlementError};
use crate::publish::Token;
use crate::transaction::TransactionPolicy;
use crate::Instant;

/// The transaction a delivery runs in, from [`SubscriptionMachine::transaction_of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Joined {
    /// The transaction: the token of the delivery that opened it.
    pub leader: Token,
    /// Whether this delivery opens it (the driver opens a transaction for it); otherwise it
    /// joins the one `leader` opened.
    pub opens: bool,
}

/// A delivery that acknowledged, until its transaction ends, with the key it keeps.
type Acked<Id> = (Delivered<Id>, Option<String>);

/// One transaction and its deliveries.
#[derive(Debug)]
struct Group<Id> {
    /// Deliveries that joined it.
    members: u32,
    /// Deliveries that ended (acknowledged, or not).
    ended: u32,
    /// It takes no more deliveries.
    closed: bool,
    /// When it stops taking deliveries.
    closes_at: Instant,
    /// It was aborted: a delivery in it did not acknowledge.
    aborted: bool,
    /// The deliveries that acknowledged, waiting for the commit.
    acked: Vec<Acked<Id>>,
}

/// A transactional registration's transactions.
#[derive(Debug)]
pub(super) struct Transactions<Id> {
    /// The most deliveries in one transaction, and how long it takes more.
    limits: Option<(u32, core::time::Duration)>,
    /// By the token of the delivery that opened each (with a fixed seed: tokens are the
    /// driver's own numbers, and a run repeats).
    groups: HashMap<Token, Group<Id>, FixedState>,
    /// The transaction of each delivery that has not ended, by its token.
    leader_of: HashMap<Token, Token, FixedState>,
    /// The transaction taking deliveries, if one is.
    open: Option<Token>,
    /// The deliveries of the commits asked for and not answered yet, by transaction.
    committing: HashMap<Token, Vec<Acked<Id>>, FixedState>,
}

impl<Id> Transactions<Id> {
    pub(super) fn new(policy: Option<TransactionPolicy>) -> Self {
        Transactions {
            limits: policy.map(|p| p.group_limits()),
            groups: HashMap::with_hasher(FixedState::default()),
            leader_of: HashMap::with_hasher(FixedState::default()),
            open: None,
            committing: HashMap::with_hasher(FixedState::default()),
        }
    }

    /// Transactions not ended: taking or waiting for deliveries, or committing.
    pub(super) fn len(&self) -> usize {
        self.groups.len() + self.committing.len()
    }

    /// Commits asked for and not answered yet.
    #[inline]
    pub(super) fn commits_unanswered(&self) -> usize {
        self.committing.len()
    }

    /// When the transaction taking deliveries stops taking them, if one does.
    pub(super) fn deadline(&self) -> Option<Instant> {
        let open = self.open?;
        self.groups.get(&open).map(|group| group.closes_at)
    }

    /// Whether the transaction taking deliveries stops taking them by `now`.
    #[inline]
    pub(super) fn closes_by(&self, now: Instant) -> bool {
        self.open.is_some() && self.deadline().is_some_and(|at| at <= now)
    }
}

impl<Id: Clone + PartialEq, D> SubscriptionMachine<Id, D> {
    /// The transaction delivery `token`, starting at `now`, runs in (a transactional
    /// registration; the driver opens it where [`Joined::opens`] says so, and keeps it under
    /// [`Joined::leader`], the token [`Call::Commit`] and [`Call::Abort`] name). Without
    /// grouping each delivery opens its own.
    pub fn transaction_of(&mut self, token: Token, now: Instant) -> Joined {
        let (max, wait) = self
            .transactions
            .limits
            .unwrap_or((1, core::time::Duration::ZERO));
        let txns = &mut self.transactions;
        if let Some(leader) = txns.open {
            let group = txns.groups.get_mut(&leader).expect("the open one is kept");
            if now < group.closes_at && !group.aborted {
                group.members += 1;
                group.closed = group.members >= max;
                if group.closed {
                    txns.open = None;
                }
                txns.leader_of.insert(token, leader);
                return Joined {
                    leader,
                    opens: false,
                };
            }
            self.close_transactions();
        }
        let closed = max <= 1;
        let txns = &mut self.transactions;
        txns.groups.insert(
            token,
            Group {
                members: 1,
                ended: 0,
                closed,
                closes_at: now.saturating_add(wait),
                aborted: false,
                acked: Vec::new(),
            },
        );
        txns.leader_of.insert(token, token);
        if !closed {
            txns.open = Some(token);
        }
        Joined {
            leader: token,
            opens: true,
        }
    }

    /// The transaction a batch handler's call runs in: one for the whole batch, whatever the
    /// grouping, opened for its first delivery `first` (the driver opens it and keeps it
    /// under `first`), its `members` deliveries numbered on from `first`. It commits once
    /// every one of them acknowledged, and aborts as soon as one did not, as a group does.
    pub fn transaction_of_batch(&mut self, first: Token, members: u32, now: Instant) -> Joined {
        let txns = &mut self.transactions;
        txns.groups.insert(
            first,
            Group {
                members,
                ended: 0,
                closed: true,
                closes_at: now,
                aborted: false,
                acked: Vec::new(),
            },
        );
        for i in 0..members {
            txns.leader_of.insert(Token(first.0.wrapping_add(i)), first);
        }
        Joined {
            leader: first,
            opens: true,
        }
    }

    /// The transaction taking deliveries takes no more (its wait passed, or the service
    /// stops): it commits once its deliveries have all ended.
    pub fn close_transactions(&mut self) {
        if let Some(leader) = self.transactions.open.take() {
            if let Some(group) = self.transactions.groups.get_mut(&leader) {
                group.closed = true;
            }
            self.end_if_done(leader);
        }
    }

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
        let key = key.filter(|_| self.config.key_ordered);
        if republish.is_some() {
            // The attempt did not succeed: what it published goes with its transaction; the
            // copy goes in a transaction of its own (under this delivery's token), with the
            // acknowledgement.
            self.member_failed(token, at);
            let held = Held {
                delivered,
                key: key.map(String::from),
            };
            self.publishes.hold(token, held, republish);
        } else if matches!(settlement, Ok(Settlement::Ack)) && at_end.unanswered {
            // Held for its publishes, keeping its key until its transaction ends.
            let held = Held {
                delivered,
                key: key.map(String::from),
            };
            self.publishes.hold(token, held, None);
        } else if matches!(settlement, Ok(Settlement::Ack)) {
            self.member_acked(token, (delivered, key.map(String::from)), at);
        } else {
            self.member_failed(token, at);
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
        // A delivery still counted in its transaction waited for its publishes; one that is
        // not, for its copy (in a transaction of its own, under its token).
        let in_group = self.transactions.leader_of.contains_key(&token);
        let settlement = match (verdict, in_group) {
            (Verdict::Ack(_), true) => return self.member_acked(token, (delivered, key), now),
            (Verdict::Ack(_), false) => {
                // Its copy is confirmed: out of the handlers' hands, it waits for its commit.
                self.releases.push(delivered.id.clone());
                return self.commit(token, Vec::from([(delivered, key)]));
            }
            (Verdict::Nack, _) => Settlement::Nack,
            (Verdict::Leave, _) => Settlement::Leave,
        };
        match in_group {
            true => self.member_failed(token, now),
            false => self.calls.push_back(Call::Abort(token)),
        }
        self.apply_settlement(delivered, &Ok(settlement), now, key.as_deref());
    }

    /// Delivery `token` acknowledged at `now`: it waits for its transaction to commit.
    fn member_acked(&mut self, token: Token, acked: Acked<Id>, now: Instant) {
        let Some(leader) = self.transactions.leader_of.remove(&token) else {
            return;
        };
        let group = self
            .transactions
            .groups
            .get_mut(&leader)
            .expect("a member's is kept");
        group.ended += 1;
        if group.aborted {
            // Acknowledged in a transaction that was aborted: not acknowledged, it comes back.
            let (delivered, key) = acked;
            self.apply_settlement(delivered, &Ok(Settlement::Nack), now, key.as_deref());
        } else {
            // Out of the handlers' hands: it waits for its transaction's commit (a timer, with
            // grouping) as a `retry_after` waits for its nack, released.
            self.releases.push(acked.0.id.clone());
            group.acked.push(acked);
        }
        self.end_if_done(leader);
    }

    /// Delivery `token` did not acknowledge at `now`: its transaction is aborted (once), and
    /// the deliveries that acknowledged in it come back. The caller settles this one.
    fn member_failed(&mut self, token: Token, now: Instant) {
        let Some(leader) = self.transactions.leader_of.remove(&token) else {
            return;
        };
        let txns = &mut self.transactions;
        let group = txns.groups.get_mut(&leader).expect("a member's is kept");
        group.ended += 1;
        if !group.aborted {
            group.aborted = true;
            group.closed = true;
            if txns.open == Some(leader) {
                txns.open = None;
            }
            self.calls.push_back(Call::Abort(leader));
            let acked = core::mem::take(&mut group.acked);
            for (delivered, key) in acked {
                self.settle_released(delivered, &Ok(Settlement::Nack), now, key.as_deref());
            }
        }
        self.end_if_done(leader);
    }

    /// Transaction `leader` ends once it takes no more deliveries and all of its deliveries
    /// have ended: committed if none was aborted.
    fn end_if_done(&mut self, leader: Token) {
        let Some(group) = self.transactions.groups.get(&leader) else {
            return;
        };
        if !group.closed || group.ended < group.members {
            return;
        }
        let group = self
            .transactions
            .groups
            .remove(&leader)
            .expect("just found");
        if !group.aborted {
            self.commit(leader, group.acked);
        }
    }

    /// Ask for transaction `token` to be committed with the acknowledgements of `acked`.
    ///
    /// A message of a batched entry is acknowledged at its index, unless the transaction
    /// acknowledges every message of the entry (a batch handler's batch, most often): then
    /// the entry is acknowledged whole, once. That is the same on a broker with batch-index
    /// acknowledgement, and the only form a broker without it acts on (it ignores an
    /// acknowledgement with an ack set, and the entry would stay unacknowledged).
    fn commit(&mut self, token: Token, acked: Vec<Acked<Id>>) {
        let entry_of = self.entry_of;
        let slot = |delivered: &Delivered<Id>| {
            (delivered.batch).map(|place| place.in_entry(entry_of(&delivered.id)))
        };
        // How many of each batched entry's messages it acknowledges.
        let mut in_entry: HashMap<EntryPosition, u32, FixedState> =
            HashMap::with_hasher(FixedState::default());
        for (delivered, _) in &acked {
            if let Some(slot) = slot(delivered) {
                *in_entry.entry(slot.entry).or_default() += 1;
            }
        }
        let mut acks = Vec::with_capacity(acked.len());
        for (delivered, _) in &acked {
            let batch = match slot(delivered) {
                Some(slot) => match in_entry.get_mut(&slot.entry) {
                    // The whole entry, acknowledged with its first message.
                    Some(n) if *n == slot.size.get() => {
                        *n = 0;
                        None
                    }
                    // The rest of a whole entry: acknowledged already.
                    Some(0) => continue,
                    _ => Some(slot),
                },
                None => None,
            };
            acks.push((delivered.id.clone(), batch));
        }
        self.calls.push_back(Call::Commit { token, acks });
        self.transactions.committing.insert(token, acked);
    }

    /// How many messages the commit of transaction `token` ([`Call::Commit`]) acknowledges
    /// (more than its acknowledgements where it acknowledges an entry whole).
    pub fn committing_messages(&self, token: Token) -> usize {
        self.transactions.committing.get(&token).map_or(0, Vec::len)
    }

    /// The commit of transaction `token` ([`Call::Commit`]) succeeded (`ok`), or failed at
    /// `now`: the broker aborted the transaction (its timeout passed, a publish or an
    /// acknowledgement was refused) or its answer was lost. Each message of a failed one is
    /// settled as `retry()`: it comes back, and nothing published in it is visible.
    pub fn committed(&mut self, token: Token, ok: bool, now: Instant) {
        let Some(acked) = self.transactions.committing.remove(&token) else {
            return;
        };
        // Each was released as it waited for the commit.
        for (delivered, key) in acked {
            if !ok {
                self.settle_released(delivered, &Ok(Settlement::Nack), now, key.as_deref());
                continue;
            }
            if let Some(place) = delivered.batch {
                // Acknowledged at its index in its transaction: the entry needs no call of
                // its own once all of it is settled.
                let id = delivered.id;
                let _ = self
                    .entries
                    .settle(place.in_entry((self.entry_of)(&id)), id);
            }
            self.let_key_go(key.as_deref());
        }
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
    use crate::transaction::TransactionPolicy;
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
            transactional: Some(TransactionPolicy::new()),
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
        m.transaction_of(Token(token), at(0));
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
    fn an_ack_commits_and_is_released_as_it_waits_for_the_commit() {
        let mut m = machine(false);
        let settled = run(&mut m, 7, 1, HandlerOutcome::Ack, 0, 3, None);
        assert_eq!(settled, Ok(Settlement::Ack));
        let commit = Call::Commit {
            token: Token(3),
            acks: vec![(7, None)],
        };
        assert_eq!(calls(&mut m, at(0)), vec![commit]);
        assert_eq!(releases(&mut m), vec![7], "out of the handlers' hands");
        assert_eq!(m.committing(), 1);
        m.committed(Token(3), true, at(5));
        assert_eq!(calls(&mut m, at(5)), vec![], "no plain acknowledgement");
        assert_eq!(releases(&mut m), Vec::<u64>::new(), "released once only");
        assert_eq!(m.committing(), 0);
    }

    #[test]
    fn no_delivery_is_taken_while_commits_in_flight_are_unanswered() {
        use super::super::COMMITS_IN_FLIGHT;
        let mut m = machine(false);
        let bound = COMMITS_IN_FLIGHT as u64;
        assert!(
            m.config().concurrency < COMMITS_IN_FLIGHT,
            "the bound is not the concurrency"
        );
        for id in 0..bound {
            assert!(m.wants_delivery(), "{id} commits unanswered");
            run(&mut m, id, 1, HandlerOutcome::Ack, 0, id as u32, None).unwrap();
        }
        assert_eq!(
            calls(&mut m, at(0)).len(),
            COMMITS_IN_FLIGHT,
            "a commit each"
        );
        assert_eq!(releases(&mut m).len(), COMMITS_IN_FLIGHT, "no handler runs");
        assert!(!m.wants_delivery(), "{bound} commits unanswered");
        m.committed(Token(2), false, at(3));
        assert!(m.wants_delivery(), "a failed commit is an answer too");
        m.committed(Token(0), true, at(3));
        assert!(m.wants_delivery());
    }

    #[test]
    fn a_concurrency_above_the_commits_in_flight_bounds_them_instead() {
        use super::super::COMMITS_IN_FLIGHT;
        let concurrency = COMMITS_IN_FLIGHT + 8;
        let config = MachineConfig {
            transactional: Some(TransactionPolicy::new()),
            ..MachineConfig::new(concurrency)
        };
        let rules = SubscriptionRules::new("s", SubscriptionType::Shared, None);
        let mut m = SubscriptionMachine::new(rules, config, entry_of);
        for id in 0..concurrency as u64 {
            assert!(m.wants_delivery(), "{id} commits unanswered");
            run(&mut m, id, 1, HandlerOutcome::Ack, 0, id as u32, None).unwrap();
        }
        assert_eq!(calls(&mut m, at(0)).len(), concurrency, "a commit each");
        assert!(!m.wants_delivery(), "{concurrency} commits unanswered");
        m.committed(Token(5), true, at(1));
        assert!(m.wants_delivery());
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
            acks: vec![(7, None)],
        };
        assert_eq!(calls(&mut m, at(2)), vec![commit]);
    }

    #[test]
    fn a_copy_aborts_the_handler_s_transaction_and_commits_its_own_once_confirmed() {
        let config = MachineConfig {
            transactional: Some(TransactionPolicy::new()),
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
            acks: vec![(7, None)],
        };
        assert_eq!(
            calls(&mut m, at(1)),
            vec![commit, Call::Abort(Token(2))],
            "a confirmed copy commits; a failed one aborts, its message left to come back"
        );
    }

    /// A machine whose transactions take up to `max` deliveries for `wait_ms`.
    fn grouped(max: u32, wait_ms: u64) -> SubscriptionMachine<u64, u64> {
        let policy = TransactionPolicy::new().group(
            NonZeroU32::new(max).unwrap(),
            Duration::from_millis(wait_ms),
        );
        let config = MachineConfig {
            transactional: Some(policy),
            ..MachineConfig::new(8)
        };
        let rules = SubscriptionRules::new("s", SubscriptionType::Shared, None);
        SubscriptionMachine::new(rules, config, entry_of)
    }

    /// Start `id` as delivery `token` at `now_ms`: the transaction it joins.
    fn start(m: &mut SubscriptionMachine<u64, u64>, id: u64, token: u32, now_ms: u64) -> Joined {
        let arrival = Arrival {
            id: &id,
            batch: None,
            redelivery_count: Some(0),
        };
        assert_eq!(m.arrive(&arrival), Admission::Handle);
        m.transaction_of(Token(token), at(now_ms))
    }

    /// End `id`, delivery `token`, as `outcome` at `now_ms`.
    fn end(
        m: &mut SubscriptionMachine<u64, u64>,
        id: u64,
        token: u32,
        outcome: HandlerOutcome,
        now_ms: u64,
    ) {
        m.finish(Ended {
            delivered: Delivered { id, batch: None },
            completion: Completion::Returned(outcome),
            at: at(now_ms),
            key: None,
            token: Token(token),
            publishes: 0,
            attempt: 0,
        })
        .unwrap();
    }

    #[test]
    fn a_group_commits_once_full_and_every_delivery_acknowledged() {
        let mut m = grouped(3, 1_000);
        assert_eq!(
            start(&mut m, 7, 1, 0),
            Joined {
                leader: Token(1),
                opens: true
            }
        );
        assert_eq!(
            start(&mut m, 8, 2, 5),
            Joined {
                leader: Token(1),
                opens: false
            }
        );
        assert_eq!(
            start(&mut m, 9, 3, 6),
            Joined {
                leader: Token(1),
                opens: false
            }
        );
        assert_eq!(
            start(&mut m, 10, 4, 7),
            Joined {
                leader: Token(4),
                opens: true
            },
            "the first is full"
        );
        end(&mut m, 8, 2, HandlerOutcome::Ack, 10);
        end(&mut m, 7, 1, HandlerOutcome::Ack, 11);
        assert_eq!(calls(&mut m, at(11)), vec![], "one still runs");
        end(&mut m, 9, 3, HandlerOutcome::Ack, 12);
        let commit = Call::Commit {
            token: Token(1),
            acks: vec![(8, None), (7, None), (9, None)],
        };
        assert_eq!(calls(&mut m, at(12)), vec![commit]);
        let mut released = releases(&mut m);
        released.sort_unstable();
        assert_eq!(
            released,
            vec![7, 8, 9],
            "released as each waited for the commit"
        );
        m.committed(Token(1), true, at(20));
        assert_eq!(releases(&mut m), Vec::<u64>::new(), "once only");
        assert_eq!(
            m.committing(),
            1,
            "the second transaction still takes deliveries"
        );
    }

    #[test]
    fn a_group_that_is_not_full_commits_once_its_wait_has_passed() {
        let mut m = grouped(10, 1_000);
        start(&mut m, 7, 1, 0);
        end(&mut m, 7, 1, HandlerOutcome::Ack, 3);
        assert_eq!(m.poll_timeout(), Some(at(1_000)));
        assert_eq!(calls(&mut m, at(999)), vec![]);
        let commit = Call::Commit {
            token: Token(1),
            acks: vec![(7, None)],
        };
        assert_eq!(calls(&mut m, at(1_000)), vec![commit]);
        assert_eq!(
            start(&mut m, 8, 2, 1_000),
            Joined {
                leader: Token(2),
                opens: true
            },
            "a delivery after the wait opens the next"
        );
    }

    #[test]
    fn a_delivery_that_does_not_acknowledge_aborts_its_group_and_the_others_come_back() {
        let mut m = grouped(3, 1_000);
        start(&mut m, 7, 1, 0);
        start(&mut m, 8, 2, 0);
        start(&mut m, 9, 3, 0);
        end(&mut m, 7, 1, HandlerOutcome::Ack, 1);
        end(&mut m, 8, 2, HandlerOutcome::Retry, 2);
        assert_eq!(
            calls(&mut m, at(2)),
            vec![Call::Abort(Token(1)), Call::Nack(7), Call::Nack(8)],
            "aborted once; the acknowledged one comes back too"
        );
        end(&mut m, 9, 3, HandlerOutcome::Ack, 3);
        assert_eq!(
            calls(&mut m, at(3)),
            vec![Call::Nack(9)],
            "acknowledged in an aborted transaction: back"
        );
        assert_eq!(m.committing(), 0);
        let mut released = releases(&mut m);
        released.sort_unstable();
        assert_eq!(released, vec![7, 8, 9]);
    }

    /// Admit `id` (a member of a batch) without joining a transaction.
    fn admit(m: &mut SubscriptionMachine<u64, u64>, id: u64) {
        let arrival = Arrival {
            id: &id,
            batch: None,
            redelivery_count: Some(0),
        };
        assert_eq!(m.arrive(&arrival), Admission::Handle);
    }

    #[test]
    fn a_batch_is_one_transaction_whatever_the_grouping_and_commits_once_all_acknowledged() {
        let mut m = grouped(2, 1_000);
        for id in [7, 8, 9] {
            admit(&mut m, id);
        }
        let joined = m.transaction_of_batch(Token(1), 3, at(0));
        assert_eq!(
            joined,
            Joined {
                leader: Token(1),
                opens: true
            }
        );
        assert_eq!(
            start(&mut m, 10, 4, 0).leader,
            Token(4),
            "a delivery outside the batch opens its own"
        );
        end(&mut m, 7, 1, HandlerOutcome::Ack, 1);
        end(&mut m, 8, 2, HandlerOutcome::Drop, 1);
        assert_eq!(
            calls(&mut m, at(1)),
            vec![],
            "one of the batch has not ended"
        );
        end(&mut m, 9, 3, HandlerOutcome::Ack, 1);
        let commit = Call::Commit {
            token: Token(1),
            acks: vec![(7, None), (8, None), (9, None)],
        };
        assert_eq!(
            calls(&mut m, at(1)),
            vec![commit],
            "more than the group's 2"
        );

        for id in [11, 12] {
            admit(&mut m, id);
        }
        m.transaction_of_batch(Token(5), 2, at(2));
        end(&mut m, 11, 5, HandlerOutcome::Ack, 3);
        end(&mut m, 12, 6, HandlerOutcome::Retry, 3);
        assert_eq!(
            calls(&mut m, at(3)),
            vec![Call::Abort(Token(5)), Call::Nack(11), Call::Nack(12)],
            "one message that does not acknowledge brings the whole batch back"
        );
    }

    #[test]
    fn a_transaction_acknowledging_a_whole_entry_acknowledges_it_once_without_an_index() {
        let mut m = machine(false);
        let size = NonZeroU32::new(2).unwrap();
        for (id, index) in [(20, 0), (21, 1), (30, 0)] {
            let slot = BatchSlot {
                entry: entry_of(&id),
                index,
                size,
            };
            let arrival = Arrival {
                id: &id,
                batch: Some(slot),
                redelivery_count: Some(0),
            };
            assert_eq!(m.arrive(&arrival), Admission::Handle);
        }
        m.transaction_of_batch(Token(1), 3, at(0));
        for (id, index, token) in [(20, 0, 1), (21, 1, 2), (30, 0, 3)] {
            let place = BatchSlot {
                entry: entry_of(&id),
                index,
                size,
            }
            .place();
            m.finish(Ended {
                delivered: Delivered {
                    id,
                    batch: Some(place),
                },
                completion: Completion::Returned(HandlerOutcome::Ack),
                at: at(0),
                key: None,
                token: Token(token),
                publishes: 0,
                attempt: 0,
            })
            .unwrap();
        }
        let part = BatchSlot {
            entry: entry_of(&30),
            index: 0,
            size,
        };
        assert_eq!(
            calls(&mut m, at(0)),
            vec![Call::Commit {
                token: Token(1),
                acks: vec![(20, None), (30, Some(part))],
            }],
            "entry 2 whole, once; entry 3 at its index"
        );
        m.committed(Token(1), true, at(1));
        assert_eq!(
            calls(&mut m, at(1)),
            vec![],
            "entry 2 needs no call of its own"
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
                    acks: vec![(10, Some(slot(0)))],
                },
                Call::Commit {
                    token: Token(2),
                    acks: vec![(11, Some(slot(1)))],
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
        m.transaction_of(Token(1), at(0));
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
