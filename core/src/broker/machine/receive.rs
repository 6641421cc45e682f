//! A delivery arrives: whether it is handled, dead-lettered or let go, its attempt count, its
//! key's turn, and where it starts (at once, in a batch, once its transaction is open).

use alloc::borrow::ToOwned;

use super::entries::Arrival;
use super::{Admit, Call, Envelope, Invoke, Members, Plan, Start, SubscriptionMachine, Txn};
use crate::broker::Token;
use crate::Instant;

/// Where a delivery [`SubscriptionMachine::receive`] kept goes, once
/// [`SubscriptionMachine::keep`] hands it over.
#[derive(Debug, Clone, Copy)]
pub(super) enum Keeping {
    /// Behind the running delivery of its key.
    Held(Plan),
    /// Into the batch being gathered, gathered at that time.
    Gathered(Plan, Instant),
    /// With its transaction, until it is open.
    Waiting(Token, Plan),
}

impl<D: Envelope, K: Clone, T: Clone> SubscriptionMachine<D, K, T> {
    /// [`SubscriptionMachine::receive`].
    #[inline(always)]
    pub(super) fn arrive(&mut self, delivery: &mut D, now: impl FnOnce() -> Instant) -> Admit<T> {
        let Some(plan) = self.admit(delivery) else {
            return Admit::Drop;
        };
        if self.config.key_ordered {
            if let Some(key) = delivery.key() {
                if !self.keys.try_start(key, delivery.id()) {
                    self.keeping = Some(Keeping::Held(plan));
                    return Admit::Keep;
                }
            }
        }
        self.running += 1;
        if let Some(gathering) = &self.gathering {
            // A batch is one transaction, which must not take a message twice (a copy the
            // broker sent again while the first waited would publish its output twice): the
            // copy goes, the first runs.
            if self.config.transactional.is_some() && gathering.holds(delivery.id()) {
                self.running -= 1;
                self.releases.push(delivery.id().clone());
                return Admit::Drop;
            }
            let at = gathering.gathered_at(now);
            self.keeping = Some(Keeping::Gathered(plan, at));
            return Admit::Keep;
        }
        let token = self.token(1);
        let txn = match self.config.transactional {
            None => Txn::Outside,
            Some(_) => match self.join(token, delivery.id(), now()) {
                Some(txn) => txn,
                None => {
                    self.keeping = Some(Keeping::Waiting(token, plan));
                    return Admit::Keep;
                }
            },
        };
        Admit::Start(Start { token, plan, txn })
    }

    /// [`SubscriptionMachine::keep`].
    #[inline(always)]
    pub(super) fn place(&mut self, delivery: D) {
        match self.keeping.take() {
            Some(Keeping::Held(plan)) => self.hold(delivery, plan),
            Some(Keeping::Gathered(plan, at)) => {
                let bytes = delivery.bytes();
                if let Some(gathering) = &mut self.gathering {
                    gathering.push(delivery, plan, bytes, || at);
                }
            }
            Some(Keeping::Waiting(token, plan)) => self.transactions.wait(token, delivery, plan),
            // `receive` did not say to keep it: it is let go as a skipped one is.
            None => self.releases.push(delivery.id().clone()),
        }
    }

    /// What a delivery that arrived is due, with its one attempt count set; `None` lets it
    /// go: a message of a batched entry whose index is in hand or settled here already (the
    /// entry came back for a sibling), or a late copy of an entry finished here (acknowledged
    /// again).
    #[inline(always)]
    fn admit(&mut self, delivery: &mut D) -> Option<Plan> {
        if let Some(slot) = delivery.batch() {
            match self.entries.arrive(slot) {
                Arrival::Handle => {}
                Arrival::Finished => {
                    self.calls.push_back(Call::Ack(delivery.id().clone()));
                    self.releases.push(delivery.id().clone());
                    return None;
                }
                Arrival::Settled | Arrival::InHand => {
                    self.releases.push(delivery.id().clone());
                    return None;
                }
            }
        }
        if self.config.retry_topic {
            // One attempt count: the copies it went through on the retry topic, plus the
            // broker's count of this one.
            let copies = delivery.republished();
            if copies > 0 {
                let broker = delivery.redelivery_count().unwrap_or(0);
                delivery.set_redelivery_count(Some(broker.saturating_add(copies)));
            }
        }
        match (self.config.max_attempts, delivery.redelivery_count()) {
            // pulsar-rs's rule, `redelivery_count >= max_redeliver_count`: the handler sees a
            // message exactly `max_attempts` times.
            (Some(max), Some(count)) if count > 0 && count >= max => Some(Plan::OutOfAttempts),
            _ => Some(Plan::Handle),
        }
    }

    /// Hold `delivery` behind the running delivery of its key. A copy of a delivery held
    /// already is let go (released like a skipped one); one held behind a key that waits for
    /// a retried message is parked: released now (it waits for time, not for a handler), and
    /// acquired again when it starts. A move to the dead-letter topic waits for its key as a
    /// handler does, so that the key's messages keep their order whatever becomes of each;
    /// with ordered retries a retried message that comes back takes back the key it kept
    /// ([`super::key_order`]).
    #[cold]
    fn hold(&mut self, delivery: D, plan: Plan) {
        let key = delivery.key().unwrap_or_default().to_owned();
        let id = delivery.id().clone();
        match self.keys.hold(&key, id.clone(), (delivery, plan)) {
            Ok(false) => {}
            Ok(true) | Err(_) => self.releases.push(id),
        }
    }

    /// Start `delivery`, let go by its key, which runs from now (counted already): gathered
    /// for its batch, held until its transaction opens, or the invocation to run now.
    #[inline(always)]
    pub(super) fn launch(
        &mut self,
        delivery: D,
        plan: Plan,
        now: impl FnOnce() -> Instant,
    ) -> Option<Invoke<D, T>> {
        if let Some(gathering) = &mut self.gathering {
            // A batch is one transaction, which must not take a message twice (a copy the
            // broker sent again while the first waited would publish its output twice): the
            // copy goes, the first runs.
            if self.config.transactional.is_some() && gathering.holds(delivery.id()) {
                self.running -= 1;
                self.releases.push(delivery.id().clone());
                return None;
            }
            let bytes = delivery.bytes();
            gathering.push(delivery, plan, bytes, now);
            return None;
        }
        let token = self.token(1);
        let txn = match self.config.transactional {
            None => Txn::Outside,
            Some(_) => match self.join(token, delivery.id(), now()) {
                Some(txn) => txn,
                None => {
                    self.transactions.wait(token, delivery, plan);
                    return None;
                }
            },
        };
        Some(Invoke {
            token,
            members: Members::One(delivery, plan),
            txn,
        })
    }
}
