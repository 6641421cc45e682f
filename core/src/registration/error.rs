//! Why a registration was refused.

use alloc::string::String;
use core::num::NonZeroU32;

use crate::SubscriptionType;

/// A subscription whose retry declaration cannot work. The service refuses to start with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// `max_attempts(n)` without `dead_letter(topic)`.
    #[error(
        "subscription `{subscription}` declares max_attempts({max_attempts}) but no dead-letter \
         topic, so a message out of attempts would have nowhere to go: add \
         `.dead_letter(\"<topic>\")` after `.max_attempts(..)`, or remove `.max_attempts(..)`"
    )]
    LimitWithoutDeadLetter {
        /// The subscription.
        subscription: String,
        /// The declared limit.
        max_attempts: NonZeroU32,
    },
    /// `dead_letter(topic)` without `max_attempts(n)`, on a handler that does not declare
    /// that it dead-letters messages itself.
    #[error(
        "subscription `{subscription}` declares dead_letter(\"{topic}\") but no max_attempts, \
         so no message would ever run out of attempts and reach it: add \
         `.max_attempts(<n>)` before `.dead_letter(..)`; or, if the topic is for the messages \
         the handler dead-letters itself, declare `#[subscriber(.., dead_letter)]` on the \
         handler; or remove `.dead_letter(..)`"
    )]
    DeadLetterWithoutLimit {
        /// The subscription.
        subscription: String,
        /// The declared dead-letter topic.
        topic: String,
    },
    /// `max_attempts(n)` on a subscription type that keeps no redelivery count.
    #[error(
        "subscription `{subscription}` is {kind} and declares max_attempts({max_attempts}), \
         which would never be reached: {kind} subscriptions keep no redelivery count (only \
         Shared and KeyShared count redeliveries); make the subscription Shared or KeyShared, \
         declare a retry topic (`.retry_topic(..)`, whose durable retries count on every \
         type), or remove `.max_attempts(..)`"
    )]
    LimitOnUncountedType {
        /// The subscription.
        subscription: String,
        /// Its type (Exclusive or Failover).
        kind: SubscriptionType,
        /// The declared limit.
        max_attempts: NonZeroU32,
    },
}
