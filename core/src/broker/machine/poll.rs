//! Which command comes next; and what idling, stopping and a grace period that ran out mean
//! for what the machine holds.

use alloc::vec::Vec;

use super::{
    Call, Command, Delivered, Envelope, Gathered, Invoke, Members, Notice, SubscriptionMachine, Txn,
};
use crate::Instant;

impl<D: Envelope, K: Clone, T: Clone> SubscriptionMachine<D, K, T> {
    /// [`SubscriptionMachine::poll`]: what was decided first, in order (invocations of
    /// deliveries let go by their key, opens, copies, commits and aborts, completions);
    /// then the consumer calls: acknowledgements of late copies and of finished entries, the
    /// completion table's calls in completion order, then the waits that ended, earliest
    /// first; then the batches due; then keys whose retried message did not come back; and
    /// last, the deliveries that no longer count as in flight.
    #[inline(always)]
    pub(super) fn next_command(&mut self, now: Instant) -> Option<Command<D::Id, D, K, T>> {
        // The common turn, inlined where the driver takes commands: nothing decided but
        // releases and the acknowledgements of whole messages.
        let quiet = self.commands.is_empty()
            && self.startable.is_empty()
            && self.calls.is_empty()
            && self.transactions.open_none()
            && self.keys.awaiting() == 0;
        if quiet {
            // A release first: the driver makes it after the calls made with it all the same,
            // and it is the cheapest to find.
            if let Some(id) = self.releases.pop() {
                return Some(Command::Release(id));
            }
            if let Some(id) = self.settler.pop_ack_of_whole() {
                return Some(Command::Ack(id));
            }
        }
        self.next_command_slow(now)
    }

    /// [`Self::next_command`] past the common turn.
    #[inline(never)]
    fn next_command_slow(&mut self, now: Instant) -> Option<Command<D::Id, D, K, T>> {
        loop {
            if let Some(command) = self.commands.pop_front() {
                return Some(command);
            }
            if let Some(((delivery, plan), parked)) = self.startable.pop_front() {
                if parked {
                    // It counts as in flight again from now.
                    self.commands
                        .push_back(Command::Acquire(delivery.id().clone()));
                }
                if let Some(invoke) = self.launch(delivery, plan, || now) {
                    self.commands
                        .push_back(Command::Invoke(alloc::boxed::Box::new(invoke)));
                }
                continue;
            }
            if self.transactions.closes_by(now) {
                self.close_transactions();
                continue;
            }
            if let Some(call) = self.next_call(now) {
                return Some(command_of(call));
            }
            if self.hand_over(now) {
                continue;
            }
            if self.keys.awaiting() > 0 {
                if let Some(((delivery, plan), parked)) = self.keys.poll_expired(now) {
                    self.running += 1;
                    let id = delivery.id().clone();
                    self.commands
                        .push_back(Command::Notice(Notice::NotBack(id.clone())));
                    if parked {
                        self.commands.push_back(Command::Acquire(id));
                    }
                    if let Some(invoke) = self.launch(delivery, plan, || now) {
                        self.commands
                            .push_back(Command::Invoke(alloc::boxed::Box::new(invoke)));
                    }
                    continue;
                }
            }
            return self.releases.pop().map(Command::Release);
        }
    }

    /// The next consumer call at `now`: acknowledgements of late copies and of finished
    /// entries first, then the completion table's calls in completion order, then the waits
    /// that ended, earliest first. A message of a batched entry is acknowledged only with the
    /// last of its entry (until then, at index level where configured); a retry of a message
    /// whose entry is on its way back already makes no call.
    #[inline]
    pub(super) fn next_call(&mut self, now: Instant) -> Option<Call<D::Id>> {
        loop {
            if let Some(call) = self.calls.pop_front() {
                return Some(call);
            }
            match self.settler.poll_call(now)? {
                Call::Ack(Delivered { id, batch: None }) => return Some(Call::Ack(id)),
                Call::Ack(Delivered {
                    id,
                    batch: Some(place),
                }) => {
                    let slot = place.in_entry((self.entry_of)(&id));
                    match self.entries.settle(slot, id.clone()) {
                        Some(entry) => self.calls.extend(entry.into_iter().map(Call::Ack)),
                        None if self.config.batch_index_acks => {
                            let ack_set = self.entries.unsettled(slot);
                            return Some(Call::AckIndex { id, slot, ack_set });
                        }
                        None => {}
                    }
                }
                Call::Nack(Delivered { id, batch }) => {
                    let entry_pending = batch.is_some_and(|place| {
                        !self.entries.retry(place.in_entry((self.entry_of)(&id)))
                    });
                    if !entry_pending {
                        return Some(Call::Nack(id));
                    }
                }
                // The settler acknowledges whole messages only; a batch-index acknowledgement
                // is made above, from the entry ledger. Passed on as it is all the same.
                Call::AckIndex {
                    id: Delivered { id, .. },
                    slot,
                    ack_set,
                } => return Some(Call::AckIndex { id, slot, ack_set }),
            }
        }
    }

    /// Hand over the next batch due at `now`, if one is: fewer batches run than the
    /// concurrency allows, and the gathered deliveries reach the policy's max messages or
    /// bytes, or the first of them waited the max wait, or the subscription stops. Its
    /// parked deliveries are acquired again first. Whether one was.
    fn hand_over(&mut self, now: Instant) -> bool {
        let concurrency = self.config.concurrency;
        let Some(batch) = self
            .gathering
            .as_mut()
            .and_then(|g| g.poll(now, concurrency))
        else {
            return false;
        };
        for gathered in batch.iter().filter(|gathered| gathered.parked) {
            self.commands
                .push_back(Command::Acquire(gathered.delivery.id().clone()));
        }
        let token = self.token(batch.len() as u32);
        match self.config.transactional {
            Some(_) => self.join_batch(token, batch, now),
            None => self
                .commands
                .push_back(Command::Invoke(alloc::boxed::Box::new(Invoke {
                    token,
                    members: Members::Batch(batch),
                    txn: Txn::Outside,
                }))),
        }
        true
    }

    /// A batch ended: another may run. `storage` is its list, emptied: the next batch is
    /// gathered in it (a batch's list is large; allocating one per batch would cost more than
    /// batching saves).
    pub(super) fn batch_done(&mut self, storage: Vec<Gathered<D>>) {
        if let Some(gathering) = &mut self.gathering {
            gathering.done(storage);
        }
    }

    /// The driver is about to wait: every gathered delivery that waits for time is parked
    /// (it waits for its batch's max wait, not for a handler, so it does not count as in
    /// flight), to be acquired again when its batch is handed over; and so is every delivery
    /// held behind a key, which waits for those.
    pub(super) fn park(&mut self) {
        let Some(gathering) = &mut self.gathering else {
            return;
        };
        let releases = &mut self.releases;
        gathering.park(|delivery| releases.push(delivery.id().clone()));
        if self.keys.held() > 0 {
            self.keys.park_all(|held| releases.push(held.clone()));
        }
    }

    /// The service stops: the deliveries held for their key never start (they stay
    /// unacknowledged and come back), what is gathered goes in partial batches at once, and
    /// the transaction taking deliveries takes no more.
    pub(super) fn stop(&mut self) {
        let held: Vec<_> = self.keys.drain().collect();
        for ((delivery, _), parked) in held {
            if !parked {
                self.releases.push(delivery.id().clone());
            }
        }
        // Those let go by their key and not started yet do not start either.
        for ((delivery, _), parked) in core::mem::take(&mut self.startable) {
            self.running = self.running.saturating_sub(1);
            if !parked {
                self.releases.push(delivery.id().clone());
            }
        }
        if let Some(gathering) = &mut self.gathering {
            gathering.drain();
        }
        self.close_transactions();
    }

    /// The service's grace period is over: the deliveries that waited for their publishes
    /// make no call and are released, every `retry_after` wait is cut short, and the
    /// deliveries waiting for a transaction to open are let go. They stay unacknowledged and
    /// come back.
    pub(super) fn abandon(&mut self) {
        let mut publishes = 0;
        for held in self.publishes.abandon() {
            self.releases.push(held.delivered.id);
            publishes += 1;
        }
        let waiting: Vec<_> = self.transactions.abandon().collect();
        self.releases.extend(waiting);
        if publishes > 0 {
            self.commands
                .push_back(Command::Notice(Notice::PublishesAbandoned(publishes)));
        }
        let waits = self.settler.abandon_waits().count();
        if waits > 0 {
            self.commands
                .push_back(Command::Notice(Notice::WaitsAbandoned(waits)));
        }
    }
}

/// A call as the command of the same name.
#[inline(always)]
fn command_of<Id, D, K, T>(call: Call<Id>) -> Command<Id, D, K, T> {
    match call {
        Call::Ack(id) => Command::Ack(id),
        Call::Nack(id) => Command::Nack(id),
        Call::AckIndex { id, slot, ack_set } => Command::AckIndex {
            id,
            size: slot.size,
            ack_set,
        },
    }
}
