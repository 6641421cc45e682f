//! A delivery's handling ended: what it becomes (the completion table), the copy it calls
//! for, what it waits for, and when the layers hear how it ended.

use alloc::string::String;

use super::publishes::{AtEnd, Held};
use super::{
    Command, Completed, Delivered, Envelope, Finished, Republishing, SubscriptionMachine, Txn,
    RETRY_RETURN_GRACE,
};
use crate::broker::{Origin, Token};
use crate::completion::{
    Completion, Republish, Settlement, SettlementError, OUT_OF_ATTEMPTS, UNDECODABLE,
};
use crate::publish::PublishError;
use crate::{HandlerOutcome, Instant, MessageId};

impl<D: Envelope, K: Clone, T: Clone> SubscriptionMachine<D, K, T> {
    /// A started delivery ended: settle it by the completion table.
    ///
    /// - A backoff becomes `retry_after(d)` or `retry_later(d)`, `d` the registration's
    ///   delay for the delivery's attempt.
    /// - `dead_letter(reason)`, a payload that does not decode and a delivery out of attempts
    ///   go to the dead-letter topic, `retry_later(d)` to the retry topic, where the
    ///   registration declared one: [`Command::Republish`], and the delivery is acknowledged
    ///   once the copy is confirmed, left unsettled if it failed.
    /// - An acknowledgement waits until every message its handler published is confirmed
    ///   (`publishes.rs`); a publish that failed makes it a negative acknowledgement.
    /// - An outcome the table refuses leaves the delivery unsettled, and is told
    ///   ([`Command::Completed`]).
    ///
    /// Where the subscription keeps per-key order, the next delivery of its key is then
    /// startable. With ordered retries, a delivery that ends in a retry (or in no outcome, on
    /// a subscription with an ack timeout), or waits for its publishes, keeps its key until it
    /// comes back or is settled.
    #[inline(always)]
    pub(super) fn finish(&mut self, finished: Finished<D::Id, K>) {
        if self.config.transactional.is_some() {
            return self.finish_in_transaction(finished);
        }
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
        // The common end: an acknowledgement, and no publish to wait for. Nothing below would
        // change it (no backoff to resolve, no copy, no refusal, no key kept), so it is settled
        // at once.
        if publishes == 0 && matches!(completion, Completion::Returned(HandlerOutcome::Ack)) {
            let id = delivered.id.clone();
            self.settler.apply(delivered, Settlement::Ack);
            self.releases.push(id);
            if let Some(tail) = tail {
                self.let_key_go(tail.key.as_deref());
            }
            return;
        }
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
        let keeps_key = self.config.ordered_retries && self.config.key_ordered;
        if let Some(copy) = republish {
            let kept = kept.expect("a driver keeps a delivery whose end is not final");
            self.commands
                .push_back(Command::Republish(alloc::boxed::Box::new(Republishing {
                    token,
                    republish: copy,
                    kept: kept.clone(),
                    txn: Txn::Outside,
                })));
            let held = Held {
                delivered,
                key: key.as_deref().filter(|_| keeps_key).map(String::from),
            };
            self.publishes.hold(token, held, Some((copy, Some(kept))));
            if !keeps_key {
                self.let_key_go(key.as_deref());
            }
            return;
        }
        if at_end.unanswered && matches!(settlement, Ok(Settlement::Ack)) {
            // Held for its handler's publishes.
            let held = Held {
                delivered,
                key: key.as_deref().filter(|_| keeps_key).map(String::from),
            };
            self.publishes.hold(token, held, None);
            if !keeps_key {
                self.let_key_go(key.as_deref());
            }
            return;
        }
        let id = delivered.id.clone();
        self.apply_settlement(delivered, &settlement, at, key.as_deref());
        self.tell_end(id, kept, completion, was_final, settlement.err());
    }

    /// Tell how delivery `id` ended where there is something to tell: the layers' `completed`
    /// hooks of an end that was not final as it ended (a backoff resolved, a copy not made),
    /// an outcome refused.
    pub(super) fn tell_end(
        &mut self,
        id: D::Id,
        kept: Option<K>,
        completion: Completion,
        was_final: bool,
        refused: Option<SettlementError>,
    ) {
        if was_final && refused.is_none() {
            return;
        }
        self.commands
            .push_back(Command::Completed(alloc::boxed::Box::new(Completed {
                id,
                kept,
                completion: shown(completion),
                refused,
                republished: None,
            })));
    }

    /// Settle `delivered`, which ended at `at`, by `settlement` now (nothing it waits for):
    /// the call it makes, the wait for its return with ordered retries, its release, its key.
    #[inline(always)]
    pub(super) fn apply_settlement(
        &mut self,
        delivered: Delivered<D::Id>,
        settlement: &Result<Settlement, SettlementError>,
        at: Instant,
        key: Option<&str>,
    ) {
        let id = self.settle_released(delivered, settlement, at, key);
        self.releases.push(id);
    }

    /// [`Self::apply_settlement`] for a delivery released already (one that acknowledged in
    /// a transaction, and waited for its commit out of the handlers' hands); its id.
    #[inline(always)]
    pub(super) fn settle_released(
        &mut self,
        delivered: Delivered<D::Id>,
        settlement: &Result<Settlement, SettlementError>,
        at: Instant,
        key: Option<&str>,
    ) -> D::Id {
        let id = delivered.id.clone();
        let batch = delivered.batch;
        self.settler.apply(
            delivered,
            *settlement.as_ref().unwrap_or(&Settlement::Leave),
        );
        if let (true, true, Some(key)) = (self.config.ordered_retries, self.config.key_ordered, key)
        {
            let due = match settlement {
                Ok(Settlement::Nack) => Some(at),
                Ok(Settlement::NackAt(deadline)) => Some(*deadline),
                Ok(Settlement::Leave) | Err(_) => self.ack_timeout_from(at),
                _ => None,
            };
            if let Some(due) = due {
                self.await_return(key, id.clone(), due);
            }
        }
        // Let go of without a call: its batched entry's redelivery may hand it over again. (A
        // `NackAt` is still in hand: a sibling's redelivery must not hand it over.)
        if let (Some(place), Ok(Settlement::Leave) | Err(_)) = (batch, settlement) {
            self.entries.put_back(place.in_entry((self.entry_of)(&id)));
        }
        self.let_key_go(key);
        id
    }

    /// What a delivery that ended as `completion` (its backoff resolved) at `at`, with its
    /// publishes as `at_end`, is settled by: the copy to order, if any, and the settlement.
    #[inline(always)]
    pub(super) fn settlement_of(
        &self,
        completion: Completion,
        at_end: AtEnd,
        at: Instant,
        attempt: u32,
    ) -> (Option<Republish>, Result<Settlement, SettlementError>) {
        // A publish of the handler failed: no copy, and no acknowledgement. (Asked only where
        // the registration declared a topic to copy to.)
        let copies = self.config.dead_letter_topic || self.config.retry_topic;
        let republish = match copies && !at_end.failed {
            true => self.republish(completion, attempt),
            false => None,
        };
        let settlement = match (republish, at_end.failed, completion) {
            (Some(copy), _, _) => Ok(Settlement::Republish(copy)),
            // What would have ended the message here (an acknowledgement, a copy) asks for it
            // again instead.
            (
                None,
                true,
                Completion::Returned(HandlerOutcome::DeadLetter(_) | HandlerOutcome::RetryLater(_)),
            ) => Ok(Settlement::Nack),
            (None, false, _) => self.settler.rules().settle(completion, at),
            (None, true, _) => match self.settler.rules().settle(completion, at) {
                Ok(Settlement::Ack) => Ok(Settlement::Nack),
                other => other,
            },
        };
        (republish, settlement)
    }

    /// `completion` with the registration's backoff policy applied: `backoff()` becomes
    /// `retry_after(d)` and `backoff_later()` becomes `retry_later(d)`, `d` the policy's delay
    /// for a delivery of message `id` at `attempt` (its jitter drawn from the id). Anything
    /// else is returned as it is.
    #[inline]
    pub(super) fn resolve(&self, completion: Completion, attempt: u32, id: &D::Id) -> Completion {
        match completion {
            Completion::Returned(
                outcome @ (HandlerOutcome::Backoff | HandlerOutcome::BackoffLater),
            ) => Completion::Returned(self.settler.rules().resolve(
                outcome,
                attempt,
                (self.seed_of)(id),
            )),
            other => other,
        }
    }

    /// The copy `completion` calls for, where the registration declared its topic.
    fn republish(&self, completion: Completion, attempt: u32) -> Option<Republish> {
        let dead_letter = self.config.dead_letter_topic;
        match completion {
            Completion::Returned(HandlerOutcome::DeadLetter(reason)) if dead_letter => {
                Some(Republish::DeadLetter { reason })
            }
            Completion::OutOfAttempts if dead_letter => Some(Republish::DeadLetter {
                reason: OUT_OF_ATTEMPTS,
            }),
            Completion::Undecodable if dead_letter => Some(Republish::DeadLetter {
                reason: UNDECODABLE,
            }),
            Completion::Returned(HandlerOutcome::RetryLater(delay)) if self.config.retry_topic => {
                Some(Republish::RetryTopic {
                    delay,
                    count: attempt.saturating_add(1),
                })
            }
            _ => None,
        }
    }

    /// When the ack timeout brings back a message left unsettled at `at`, if there is one.
    fn ack_timeout_from(&self, at: Instant) -> Option<Instant> {
        self.settler
            .rules()
            .ack_timeout()
            .map(|timeout| at.saturating_add(timeout))
    }

    /// With ordered retries, `key` stays with message `id` until it comes back (due at `due`,
    /// plus the grace).
    fn await_return(&mut self, key: &str, id: D::Id, due: Instant) {
        let until = due.saturating_add(RETRY_RETURN_GRACE);
        let releases = &mut self.releases;
        self.keys
            .await_return(key, id, until, |held| releases.push(held.clone()));
    }

    /// The delivery of `key` that ran is done with it: the next one held behind it becomes
    /// startable (where the subscription keeps per-key order).
    #[inline]
    pub(super) fn let_key_go(&mut self, key: Option<&str>) {
        if !self.config.key_ordered {
            return;
        }
        if let Some(next) = self.keys.finish(key) {
            self.running += 1;
            self.startable.push_back(next);
        }
    }

    /// A publish of delivery `token` was answered at `now`: one of its handler's (`origin`),
    /// or the copy ordered for it. The delivery is settled once everything it waits for is
    /// answered (`publishes.rs`); a copy's answer is told at once ([`Command::Completed`]).
    pub(super) fn answered(
        &mut self,
        token: Token,
        origin: Origin,
        result: Result<MessageId, PublishError>,
        now: Instant,
    ) {
        let ok = result.is_ok();
        let settled = self.publishes.answered(token, origin, ok);
        if let Some((copy, kept, id)) = settled.copied {
            let completion = match (ok, copy) {
                (true, Republish::DeadLetter { .. }) => Completion::DeadLettered,
                (true, Republish::RetryTopic { .. }) => Completion::Rescheduled,
                (false, _) => Completion::Rejected,
            };
            self.commands
                .push_back(Command::Completed(alloc::boxed::Box::new(Completed {
                    id,
                    kept: Some(kept),
                    completion,
                    refused: None,
                    republished: Some((copy, result)),
                })));
        }
        let Some((held, settlement)) = settled.delivery else {
            return;
        };
        if self.config.transactional.is_some() {
            return self.answered_in_transaction(token, held, settlement, now);
        }
        let Held { delivered, key } = held;
        let id = delivered.id.clone();
        let batch = delivered.batch;
        self.settler.apply(delivered, settlement);
        if let Some(key) = key.as_deref() {
            // With ordered retries the key stayed with it: it keeps it until it comes back.
            let due = match settlement {
                Settlement::Nack => Some(now),
                Settlement::Leave => self.ack_timeout_from(now),
                _ => None,
            };
            if let Some(due) = due {
                self.await_return(key, id.clone(), due);
            }
        }
        if let (Some(place), Settlement::Leave) = (batch, settlement) {
            self.entries.put_back(place.in_entry((self.entry_of)(&id)));
        }
        self.releases.push(id);
        self.let_key_go(key.as_deref());
    }
}

/// A completion as the layers and the lines show it: a payload that does not decode, where
/// no copy was made of it, is a rejection.
fn shown(completion: Completion) -> Completion {
    match completion {
        Completion::Undecodable => Completion::Rejected,
        other => other,
    }
}
