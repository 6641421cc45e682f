//! The dead-letter policy and the validation that produces it.

use alloc::string::String;
use core::num::NonZeroU32;

use super::RegistrationError;
use crate::SubscriptionType;

/// A registration's dead-letter topic, and its attempt limit if it has one.
///
/// With a limit, before a message is handed over, `redelivery_count >= max_redeliver_count`
/// sends it to the dead-letter topic instead (pulsar-rs's rule, applied per message by
/// ruststream's driver), so with `max_redeliver_count = max_attempts` a handler sees one
/// message exactly `max_attempts` times. Without one, the topic takes what a handler
/// dead-letters itself (`HandlerOutcome::dead_letter`) and payloads that do not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterPolicy {
    max_attempts: Option<NonZeroU32>,
    dead_letter_topic: String,
}

impl DeadLetterPolicy {
    /// The number of deliveries of one message, the first included, before it is
    /// dead-lettered; `None` when only handlers (and undecodable payloads) send it there.
    pub fn max_attempts(&self) -> Option<NonZeroU32> {
        self.max_attempts
    }

    /// The value for the client's `max_redeliver_count`: the same number as
    /// [`DeadLetterPolicy::max_attempts`], because the client compares it with the redelivery
    /// count before each delivery.
    pub fn max_redeliver_count(&self) -> Option<u32> {
        self.max_attempts.map(NonZeroU32::get)
    }

    /// Where a message out of attempts is published, as it was declared.
    pub fn dead_letter_topic(&self) -> &str {
        &self.dead_letter_topic
    }
}

/// Check a subscription's retry declaration.
///
/// - neither a limit nor a topic: `Ok(None)`, the consumer gets no dead-letter policy;
/// - both, on a type that counts redeliveries: `Ok(Some(policy))`;
/// - a topic alone, on any type, where the handler declares that it dead-letters messages
///   itself (`#[subscriber(.., dead_letter)]`, `handler_dead_letters`): `Ok(Some(policy))`
///   without a limit, for what it dead-letters and payloads that do not decode;
/// - a topic alone otherwise: [`RegistrationError::DeadLetterWithoutLimit`] (the guide: write
///   both steps or neither);
/// - a limit on Exclusive or Failover (with or without a topic):
///   [`RegistrationError::LimitOnUncountedType`];
/// - a limit without a topic: [`RegistrationError::LimitWithoutDeadLetter`].
pub fn dead_letter_policy(
    subscription: &str,
    kind: SubscriptionType,
    max_attempts: Option<NonZeroU32>,
    dead_letter_topic: Option<&str>,
    handler_dead_letters: bool,
) -> Result<Option<DeadLetterPolicy>, RegistrationError> {
    match (max_attempts, dead_letter_topic) {
        (None, None) => Ok(None),
        (Some(max_attempts), _) if !kind.counts_redeliveries() => {
            Err(RegistrationError::LimitOnUncountedType {
                subscription: subscription.into(),
                kind,
                max_attempts,
            })
        }
        (Some(max_attempts), None) => Err(RegistrationError::LimitWithoutDeadLetter {
            subscription: subscription.into(),
            max_attempts,
        }),
        (None, Some(topic)) if !handler_dead_letters => {
            Err(RegistrationError::DeadLetterWithoutLimit {
                subscription: subscription.into(),
                topic: topic.into(),
            })
        }
        (max_attempts, Some(topic)) => Ok(Some(DeadLetterPolicy {
            max_attempts,
            dead_letter_topic: topic.into(),
        })),
    }
}
