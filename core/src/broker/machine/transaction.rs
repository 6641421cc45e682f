//! A transactional registration's deliveries (see [`crate::transaction`]): what an end
//! becomes when the acknowledgements and the handlers' publishes commit together.
//!
//! Each delivery runs in a transaction: its own, or with grouping
//! ([`TransactionPolicy::group`]) the one that deliveries starting within the group's wait of
//! the first share; a batch handler's batch runs in one of its own. The machine asks for each
//! transaction ([`Command::Open`]) and holds its deliveries until it is open
//! ([`Event::Opened`]); one that could not be opened runs none of them
//! ([`Txn::NotOpened`]: each ends as `retry()`).
//!
//! | the delivery ends in | commands |
//! |---|---|
//! | an acknowledgement, its publishes confirmed | none yet: once every delivery of its transaction acknowledged (and the group is full or its wait passed), [`Command::Commit`] of them all; each is released as it waits (a group's wait must let a virtual clock move), and one of them is acquired while the commit is unanswered |
//! | an acknowledgement whose publishes are not all answered | held until they are, then as above |
//! | a copy (`dead_letter`, `retry_later`, out of attempts) | [`Command::Abort`] of its transaction at once; the copy goes in a transaction of its own, committed with its acknowledgement once the copy is confirmed, aborted if it failed |
//! | anything else, or a publish or copy that failed | [`Command::Abort`] of its transaction at once (once per transaction), then the completion table's call |
//! | an acknowledgement in a transaction that was aborted | `retry()`: the message comes back |
//! | a commit that failed | `retry()` for each of its messages: they come back; where nothing was committed (a publish in it failed, an acknowledgement was refused), [`Command::Abort`] too |
//!
//! What a handler published is visible only where its message was acknowledged: an attempt
//! that ended in a copy did not succeed, and its publishes go as a retried attempt's do.
//!
//! Where deliveries of one key run in order, a key stays with its delivery until the
//! transaction has ended: the next message of the key publishes in a transaction that
//! commits after this one.
//!
//! [`TransactionPolicy::group`]: crate::transaction::TransactionPolicy::group
//! [`Command::Open`]: super::Command::Open
//! [`Command::Commit`]: super::Command::Commit
//! [`Command::Abort`]: super::Command::Abort
//! [`Event::Opened`]: super::Event::Opened

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::entries::EntryPosition;
use super::publishes::{AtEnd, Held};
use super::{
    Command, Commit, CommitFailure, Delivered, Envelope, Finished, Gathered, Invoke, Members, Plan,
    Republishing, SubscriptionMachine, Txn, TxnId,
};
use crate::broker::Token;
use crate::completion::{Republish, Settlement};
use crate::transaction::TransactionPolicy;
use crate::Instant;

/// A delivery that acknowledged, until its transaction ends, with the key it keeps.
type Acked<Id> = (Delivered<Id>, Option<String>);

/// Where a transaction stands.
#[derive(Debug)]
enum State<T> {
    /// Asked for, not answered.
    Opening,
    /// Open.
    Open(T),
    /// Could not be opened (why).
    Failed(Arc<str>),
}

impl<T: Clone> State<T> {
    /// The transaction an invocation runs in, once answered.
    fn txn(&self) -> Option<Txn<T>> {
        match self {
            State::Opening => None,
            State::Open(txn) => Some(Txn::In(txn.clone())),
            State::Failed(why) => Some(Txn::NotOpened(why.clone())),
        }
    }
}

/// One transaction and its deliveries.
#[derive(Debug)]
struct Group<D: Envelope, T> {
    /// Deliveries that joined it.
    members: u32,
    /// The messages of those that joined it, where it takes more than one: a message is
    /// never in one transaction twice (a copy the broker sent again while the first ran
    /// would publish its output twice, and commit it).
    messages: Vec<D::Id>,
    /// Deliveries that ended (acknowledged, or not).
    ended: u32,
    /// It takes no more deliveries.
    closed: bool,
    /// When it stops taking deliveries.
    closes_at: Instant,
    /// It was aborted: a delivery in it did not acknowledge.
    aborted: bool,
    /// The deliveries that acknowledged, waiting for the commit.
    acked: Vec<Acked<D::Id>>,
    state: State<T>,
    /// Deliveries waiting for it to open, with their tokens.
    waiting: Vec<(Token, D, Plan)>,
    /// A batch waiting for it to open, with its first token.
    batch: Option<(Token, Vec<Gathered<D>>)>,
}

/// A commit asked for and not answered.
#[derive(Debug)]
struct Committing<Id, T> {
    acked: Vec<Acked<Id>>,
    handle: T,
    /// The delivery that counts as in flight until the answer (a virtual clock must not move
    /// past the ack timeout while a commit that may fail is unanswered).
    acquired: Option<Id>,
}

/// The transaction of a delivery's copy.
#[derive(Debug)]
struct CopyTxn<K, T> {
    token: Token,
    /// The copy and what it is made from, until the transaction is open.
    copy: Option<(Republish, K)>,
    state: State<T>,
}

/// A transactional registration's transactions.
#[derive(Debug)]
pub(super) struct Transactions<D: Envelope, K, T> {
    /// The most deliveries in one transaction, and how long it takes more.
    limits: (u32, Duration),
    /// How long the broker lets one stay open.
    timeout: Duration,
    /// The next transaction's id.
    next: u32,
    /// The transactions of deliveries (with a fixed seed: ids are the machine's own numbers,
    /// and a run repeats).
    groups: HashMap<TxnId, Group<D, T>, FixedState>,
    /// The transaction of each delivery that has not ended, by its token.
    member_of: HashMap<Token, TxnId, FixedState>,
    /// The transaction taking deliveries, if one is.
    open: Option<TxnId>,
    /// The commits asked for and not answered yet.
    committing: HashMap<TxnId, Committing<D::Id, T>, FixedState>,
    /// The transactions of copies, and of which delivery.
    copies: HashMap<TxnId, CopyTxn<K, T>, FixedState>,
    copy_of: HashMap<Token, TxnId, FixedState>,
}

impl<D: Envelope, K, T> Transactions<D, K, T> {
    pub(super) fn new(policy: Option<TransactionPolicy>) -> Self {
        let policy = policy.unwrap_or_default();
        Transactions {
            limits: policy.group_limits(),
            timeout: policy.transaction_timeout(),
            next: 0,
            groups: HashMap::with_hasher(FixedState::default()),
            member_of: HashMap::with_hasher(FixedState::default()),
            open: None,
            committing: HashMap::with_hasher(FixedState::default()),
            copies: HashMap::with_hasher(FixedState::default()),
            copy_of: HashMap::with_hasher(FixedState::default()),
        }
    }

    /// Transactions not ended: opening, taking or waiting for deliveries, committing.
    pub(super) fn len(&self) -> usize {
        self.groups.len() + self.committing.len() + self.copies.len()
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

    /// Whether no transaction takes deliveries (none has a deadline).
    #[inline]
    pub(super) fn open_none(&self) -> bool {
        self.open.is_none()
    }

    /// Whether the transaction taking deliveries stops taking them by `now`.
    #[inline]
    pub(super) fn closes_by(&self, now: Instant) -> bool {
        self.open.is_some() && self.deadline().is_some_and(|at| at <= now)
    }

    /// Delivery `token` waits for its transaction to open.
    pub(super) fn wait(&mut self, token: Token, delivery: D, plan: Plan) {
        let txn = self.member_of[&token];
        let group = self.groups.get_mut(&txn).expect("a member's is kept");
        group.waiting.push((token, delivery, plan));
    }

    /// A new transaction's id.
    fn id(&mut self) -> TxnId {
        let id = TxnId(self.next);
        self.next = self.next.wrapping_add(1);
        id
    }
}

/// A new group, opened now, taking `members`, closed at once or at `closes_at`.
fn new_group<D: Envelope, T>(members: u32, closed: bool, closes_at: Instant) -> Group<D, T> {
    Group {
        members,
        messages: Vec::new(),
        ended: 0,
        closed,
        closes_at,
        aborted: false,
        acked: Vec::new(),
        state: State::Opening,
        waiting: Vec::new(),
        batch: None,
    }
}

impl<D: Envelope, K, T> Transactions<D, K, T> {
    /// The deliveries waiting for a transaction to open, let go (the service's grace is over):
    /// their ids.
    pub(super) fn abandon(&mut self) -> impl Iterator<Item = D::Id> + '_ {
        self.groups.values_mut().flat_map(|group| {
            let waiting = core::mem::take(&mut group.waiting);
            let batch = group
                .batch
                .take()
                .map(|(_, batch)| batch)
                .unwrap_or_default();
            waiting
                .into_iter()
                .map(|(_, delivery, _)| delivery.id().clone())
                .chain(batch.into_iter().map(|g| g.delivery.id().clone()))
                .collect::<Vec<_>>()
        })
    }
}

impl<D: Envelope, K: Clone, T: Clone> SubscriptionMachine<D, K, T> {
    /// The transaction delivery `token` of `message`, starting at `now`, runs in: the open
    /// group's, if it takes it and is open (`None` while it opens: the delivery waits), or a
    /// new one asked for now. Without grouping each delivery opens its own.
    pub(super) fn join(&mut self, token: Token, message: &D::Id, now: Instant) -> Option<Txn<T>> {
        let (max, wait) = self.transactions.limits;
        let txns = &mut self.transactions;
        if let Some(id) = txns.open {
            let group = txns.groups.get_mut(&id).expect("the open one is kept");
            let twice = group.messages.contains(message);
            if now < group.closes_at && !group.aborted && !twice {
                group.members += 1;
                group.messages.push(message.clone());
                group.closed = group.members >= max;
                if group.closed {
                    txns.open = None;
                }
                txns.member_of.insert(token, id);
                return group.state.txn();
            }
            self.close_transactions();
        }
        let closed = max <= 1;
        let txns = &mut self.transactions;
        let id = txns.id();
        let mut group = new_group(1, closed, now.saturating_add(wait));
        if !closed {
            group.messages.push(message.clone());
        }
        txns.groups.insert(id, group);
        txns.member_of.insert(token, id);
        if !closed {
            txns.open = Some(id);
        }
        let timeout = txns.timeout;
        self.commands.push_back(Command::Open { txn: id, timeout });
        None
    }

    /// A batch handler's batch, its deliveries numbered on from `first`: it runs in one
    /// transaction of its own, whatever the grouping, asked for now; it commits once every
    /// one of them acknowledged, and aborts as soon as one did not, as a group does.
    pub(super) fn join_batch(&mut self, first: Token, batch: Vec<Gathered<D>>, now: Instant) {
        let txns = &mut self.transactions;
        let id = txns.id();
        let members = batch.len() as u32;
        let mut group = new_group(members, true, now);
        for i in 0..members {
            txns.member_of.insert(Token(first.0.wrapping_add(i)), id);
        }
        group.batch = Some((first, batch));
        txns.groups.insert(id, group);
        let timeout = txns.timeout;
        self.commands.push_back(Command::Open { txn: id, timeout });
    }

    /// Transaction `txn` is open, or could not be opened: what waited for it runs now.
    pub(super) fn opened(&mut self, txn: TxnId, result: Result<T, Arc<str>>, now: Instant) {
        let state = match result {
            Ok(handle) => State::Open(handle),
            Err(why) => State::Failed(why),
        };
        if let Some(group) = self.transactions.groups.get_mut(&txn) {
            group.state = state;
            let run = group.state.txn().expect("answered");
            for (token, delivery, plan) in core::mem::take(&mut group.waiting) {
                self.commands
                    .push_back(Command::Invoke(alloc::boxed::Box::new(Invoke {
                        token,
                        members: Members::One(delivery, plan),
                        txn: run.clone(),
                    })));
            }
            if let Some((token, batch)) = group.batch.take() {
                self.commands
                    .push_back(Command::Invoke(alloc::boxed::Box::new(Invoke {
                        token,
                        members: Members::Batch(batch),
                        txn: run,
                    })));
            }
            return;
        }
        if let Some(copy) = self.transactions.copies.get_mut(&txn) {
            copy.state = state;
            let run = copy.state.txn().expect("answered");
            if let Some((republish, kept)) = copy.copy.take() {
                self.commands
                    .push_back(Command::Republish(alloc::boxed::Box::new(Republishing {
                        token: copy.token,
                        republish,
                        kept,
                        txn: run,
                    })));
            }
            return;
        }
        // Nobody waits for it (it cannot be): it must not stay open.
        if let State::Open(handle) = state {
            self.commands.push_back(Command::Abort(handle));
        }
        let _ = now;
    }

    /// The transaction taking deliveries takes no more (its wait passed, or the service
    /// stops): it commits once its deliveries have all ended.
    pub(super) fn close_transactions(&mut self) {
        if let Some(id) = self.transactions.open.take() {
            if let Some(group) = self.transactions.groups.get_mut(&id) {
                group.closed = true;
            }
            self.end_if_done(id);
        }
    }

    /// [`SubscriptionMachine::handle`] of [`Event::Finished`](super::Event::Finished) for a
    /// transactional registration (see the [module documentation](self)).
    pub(super) fn finish_in_transaction(&mut self, finished: Finished<D::Id, K>) {
        let Finished {
            token,
            delivered,
            completion,
            at,
            publishes,
            attempt,
            tail,
        } = finished;
        self.running = self.running.saturating_sub(1);
        let (key, kept) = match tail {
            Some(tail) => (tail.key, tail.kept),
            None => (None, None),
        };
        let was_final = completion.is_final();
        let completion = self.resolve(completion, attempt, &delivered.id);
        let at_end = match publishes {
            0 => AtEnd::NOTHING,
            _ => self.publishes.ended(token, publishes),
        };
        let (republish, settlement) = self.settlement_of(completion, at_end, at, attempt);
        let key = key.filter(|_| self.config.key_ordered);
        if let Some(copy) = republish {
            // The attempt did not succeed: what it published goes with its transaction; the
            // copy goes in a transaction of its own, with the acknowledgement.
            self.member_failed(token, at);
            let kept = kept.expect("a driver keeps a delivery whose end is not final");
            let held = Held { delivered, key };
            self.publishes
                .hold(token, held, Some((copy, Some(kept.clone()))));
            self.republish_in_own(token, copy, kept);
            return;
        }
        let id = delivered.id.clone();
        if matches!(settlement, Ok(Settlement::Ack)) && at_end.unanswered {
            // Held for its publishes, keeping its key until its transaction ends.
            self.publishes.hold(token, Held { delivered, key }, None);
        } else if matches!(settlement, Ok(Settlement::Ack)) {
            self.member_acked(token, (delivered, key), at);
        } else {
            self.member_failed(token, at);
            self.apply_settlement(delivered, &settlement, at, key.as_deref());
        }
        self.tell_end(id, kept, completion, was_final, settlement.err());
    }

    /// The copy of delivery `token` goes in a transaction of its own: asked for now, the copy
    /// ordered once it is open.
    fn republish_in_own(&mut self, token: Token, republish: Republish, kept: K) {
        let txns = &mut self.transactions;
        let id = txns.id();
        txns.copies.insert(
            id,
            CopyTxn {
                token,
                copy: Some((republish, kept.clone())),
                state: State::Opening,
            },
        );
        txns.copy_of.insert(token, id);
        let timeout = txns.timeout;
        self.commands.push_back(Command::Open { txn: id, timeout });
    }

    /// [`SubscriptionMachine::answered`] for a transactional registration, once everything
    /// delivery `token` waited for is answered.
    pub(super) fn answered_in_transaction(
        &mut self,
        token: Token,
        held: Held<D::Id>,
        settlement: Settlement,
        now: Instant,
    ) {
        let Held { delivered, key } = held;
        // A delivery still counted in its transaction waited for its publishes; one that is
        // not, for its copy (in a transaction of its own).
        let in_group = self.transactions.member_of.contains_key(&token);
        match (settlement, in_group) {
            (Settlement::Ack, true) => return self.member_acked(token, (delivered, key), now),
            (Settlement::Ack, false) => {
                // Its copy is confirmed: out of the handlers' hands, it waits for its commit.
                self.releases.push(delivered.id.clone());
                return self.commit_copy(token, (delivered, key), now);
            }
            _ => {}
        }
        match in_group {
            true => self.member_failed(token, now),
            false => self.abort_copy(token),
        }
        self.apply_settlement(delivered, &Ok(settlement), now, key.as_deref());
    }

    /// Delivery `token` acknowledged at `now`: it waits for its transaction to commit.
    fn member_acked(&mut self, token: Token, acked: Acked<D::Id>, now: Instant) {
        let Some(txn) = self.transactions.member_of.remove(&token) else {
            return;
        };
        let group = (self.transactions.groups.get_mut(&txn)).expect("a member's is kept");
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
        self.end_if_done(txn);
    }

    /// Delivery `token` did not acknowledge at `now`: its transaction is aborted (once), and
    /// the deliveries that acknowledged in it come back. The caller settles this one.
    fn member_failed(&mut self, token: Token, now: Instant) {
        let Some(txn) = self.transactions.member_of.remove(&token) else {
            return;
        };
        let txns = &mut self.transactions;
        let group = txns.groups.get_mut(&txn).expect("a member's is kept");
        group.ended += 1;
        if !group.aborted {
            group.aborted = true;
            group.closed = true;
            if txns.open == Some(txn) {
                txns.open = None;
            }
            if let State::Open(handle) = &group.state {
                self.commands.push_back(Command::Abort(handle.clone()));
            }
            let acked = core::mem::take(&mut group.acked);
            for (delivered, key) in acked {
                self.settle_released(delivered, &Ok(Settlement::Nack), now, key.as_deref());
            }
        }
        self.end_if_done(txn);
    }

    /// Transaction `txn` ends once it takes no more deliveries and all of its deliveries
    /// have ended: committed if none was aborted.
    fn end_if_done(&mut self, txn: TxnId) {
        let Some(group) = self.transactions.groups.get(&txn) else {
            return;
        };
        if !group.closed || group.ended < group.members {
            return;
        }
        let group = (self.transactions.groups.remove(&txn)).expect("just found");
        if group.aborted {
            return;
        }
        match group.state {
            State::Open(handle) => self.commit(txn, handle, group.acked),
            // Every delivery of a transaction that did not open ended as `retry()`: it was
            // aborted. Nothing else can end one unopened.
            _ => unreachable!("a transaction commits only once open"),
        }
    }

    /// Ask for transaction `txn` to be committed with the acknowledgements of `acked`.
    ///
    /// A message of a batched entry is acknowledged at its index, unless the transaction
    /// acknowledges every message of the entry (a batch handler's batch, most often): then
    /// the entry is acknowledged whole, once. That is the same on a broker with batch-index
    /// acknowledgement, and the only form a broker without it acts on (it ignores an
    /// acknowledgement with an ack set, and the entry would stay unacknowledged).
    fn commit(&mut self, txn: TxnId, handle: T, acked: Vec<Acked<D::Id>>) {
        let entry_of = self.entry_of;
        let slot = |delivered: &Delivered<D::Id>| {
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
        // One of its deliveries counts as in flight until the answer.
        let acquired = acks.first().map(|(id, _)| id.clone());
        if let Some(id) = &acquired {
            self.commands.push_back(Command::Acquire(id.clone()));
        }
        self.commands
            .push_back(Command::Commit(alloc::boxed::Box::new(Commit {
                txn,
                handle: handle.clone(),
                acks,
                messages: acked.len(),
            })));
        self.transactions.committing.insert(
            txn,
            Committing {
                acked,
                handle,
                acquired,
            },
        );
    }

    /// The copy of delivery `token` was confirmed: its transaction commits with the
    /// delivery's acknowledgement.
    fn commit_copy(&mut self, token: Token, acked: Acked<D::Id>, now: Instant) {
        let txns = &mut self.transactions;
        let copy =
            (txns.copy_of.remove(&token)).and_then(|id| Some((id, txns.copies.remove(&id)?)));
        match copy {
            Some((
                id,
                CopyTxn {
                    state: State::Open(handle),
                    ..
                },
            )) => self.commit(id, handle, Vec::from([acked])),
            // Confirmed means sent in its open transaction: this cannot be. Not acknowledged.
            _ => {
                let (delivered, key) = acked;
                self.settle_released(delivered, &Ok(Settlement::Leave), now, key.as_deref());
            }
        }
    }

    /// The copy of delivery `token` failed (or its delivery's handler publishes did): its
    /// transaction is aborted.
    fn abort_copy(&mut self, token: Token) {
        let txns = &mut self.transactions;
        let Some(id) = txns.copy_of.remove(&token) else {
            return;
        };
        if let Some(CopyTxn {
            state: State::Open(handle),
            ..
        }) = txns.copies.remove(&id)
        {
            self.commands.push_back(Command::Abort(handle));
        }
    }

    /// The commit of transaction `txn` ([`Command::Commit`]) was answered at `now`: committed,
    /// or not (the broker aborted it, its answer was lost, or nothing was committed). Each
    /// message of a failed one is settled as `retry()`: it comes back, and nothing published
    /// in it is visible.
    pub(super) fn committed(
        &mut self,
        txn: TxnId,
        result: Result<(), CommitFailure>,
        now: Instant,
    ) {
        let Some(committing) = self.transactions.committing.remove(&txn) else {
            return;
        };
        let Committing {
            acked,
            handle,
            acquired,
        } = committing;
        if let Err(CommitFailure::NotSent | CommitFailure::AckRefused) = result {
            self.commands.push_back(Command::Abort(handle));
        }
        // Each was released as it waited for the commit.
        for (delivered, key) in acked {
            if result.is_err() {
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
        if let Some(id) = acquired {
            self.releases.push(id);
        }
    }
}
