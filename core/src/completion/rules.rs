//! The subscription settings the completion rules depend on.

use alloc::sync::Arc;
use core::time::Duration;

use super::{Backoff, Completion, Settlement, SettlementError};
use crate::{HandlerOutcome, Instant, SubscriptionType};

/// What the completion rules need to know about a subscription.
///
/// Built once per subscription at registration; settling a delivery does not allocate.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionRules {
    subscription: Arc<str>,
    kind: SubscriptionType,
    ack_timeout: Option<Duration>,
    backoff: Option<Backoff>,
}

impl SubscriptionRules {
    /// Rules for the subscription named `subscription` (used in error messages), of type
    /// `kind`, with the client-side ack timeout if one is set.
    pub fn new(
        subscription: impl Into<Arc<str>>,
        kind: SubscriptionType,
        ack_timeout: Option<Duration>,
    ) -> Self {
        SubscriptionRules {
            subscription: subscription.into(),
            kind,
            ack_timeout,
            backoff: None,
        }
    }

    /// The same rules with the registration's backoff policy, which `backoff()` and
    /// `backoff_later()` take their delay from.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// The backoff policy, if the registration declared one.
    pub fn backoff(&self) -> Option<&Backoff> {
        self.backoff.as_ref()
    }

    /// `outcome` with the backoff policy applied: `backoff()` becomes `retry_after(d)` and
    /// `backoff_later()` becomes `retry_later(d)`, `d` the policy's delay after the delivery
    /// counted `attempt` (its redelivery count), `seed` drawing its jitter. Other outcomes,
    /// and both without a policy (which [`SubscriptionRules::settle`] then refuses), are
    /// returned as they are.
    pub fn resolve(&self, outcome: HandlerOutcome, attempt: u32, seed: u64) -> HandlerOutcome {
        match (outcome, &self.backoff) {
            (HandlerOutcome::Backoff, Some(policy)) => {
                HandlerOutcome::RetryAfter(policy.delay(attempt, seed))
            }
            (HandlerOutcome::BackoffLater, Some(policy)) => {
                HandlerOutcome::RetryLater(policy.delay(attempt, seed))
            }
            (outcome, _) => outcome,
        }
    }

    /// The subscription's name.
    pub fn subscription(&self) -> &str {
        &self.subscription
    }

    /// The subscription's name, shared (no copy of the string).
    pub fn subscription_name(&self) -> Arc<str> {
        self.subscription.clone()
    }

    /// The subscription's type.
    pub fn kind(&self) -> SubscriptionType {
        self.kind
    }

    /// The client-side ack timeout, if any.
    pub fn ack_timeout(&self) -> Option<Duration> {
        self.ack_timeout
    }

    /// Decide what becomes of one delivery whose handling ended with `completion` at `now`.
    ///
    /// - `ack` and `drop` acknowledge; `retry` negatively acknowledges at once.
    /// - `retry_after(d)` negatively acknowledges at `now + d`, provided `d` is shorter than the
    ///   ack timeout. A delay not shorter than it is an error naming both values; the caller
    ///   then leaves the delivery unsettled ([`Settlement::Leave`]). Without an ack timeout any
    ///   delay is accepted.
    /// - No outcome (a panic, or a handler that could not start) makes no call.
    /// - A message moved to the dead-letter topic is acknowledged.
    /// - A message republished to the retry topic (`retry_later`) is acknowledged; a
    ///   `retry_later(d)` that reaches the table was not republished, as the subscription has
    ///   no retry topic: an error naming the delay, and the delivery is left unsettled.
    /// - `dead_letter(reason)` that reaches the table was not moved: the subscription has no
    ///   dead-letter topic (the driver publishes the copy where there is one, and the copy
    ///   settles as [`Completion::DeadLettered`]). An error naming the reason; the caller
    ///   leaves the delivery unsettled.
    pub fn settle(
        &self,
        completion: Completion,
        now: Instant,
    ) -> Result<Settlement, SettlementError> {
        let outcome = match completion {
            Completion::Returned(outcome) => outcome,
            Completion::DeadLettered | Completion::Rescheduled => return Ok(Settlement::Ack),
            // Reaching the table, these found no dead-letter topic: no outcome.
            Completion::Panicked
            | Completion::Rejected
            | Completion::OutOfAttempts
            | Completion::Undecodable => return Ok(Settlement::Leave),
        };
        Ok(match outcome {
            HandlerOutcome::Ack | HandlerOutcome::Drop => Settlement::Ack,
            HandlerOutcome::Backoff | HandlerOutcome::BackoffLater => {
                return Err(SettlementError::NoBackoffPolicy {
                    subscription: self.subscription.clone(),
                    outcome: outcome.name(),
                })
            }
            HandlerOutcome::RetryLater(delay) => {
                return Err(SettlementError::NoRetryTopic {
                    subscription: self.subscription.clone(),
                    delay,
                })
            }
            HandlerOutcome::DeadLetter(reason) => {
                return Err(SettlementError::NoDeadLetterTopic {
                    subscription: self.subscription.clone(),
                    reason,
                })
            }
            HandlerOutcome::Retry => Settlement::Nack,
            HandlerOutcome::RetryAfter(delay) => {
                if let Some(ack_timeout) = self.ack_timeout {
                    if delay >= ack_timeout {
                        return Err(SettlementError::DelayNotShorterThanAckTimeout {
                            subscription: self.subscription.clone(),
                            delay,
                            ack_timeout,
                        });
                    }
                }
                Settlement::NackAt(now.saturating_add(delay))
            }
        })
    }
}
