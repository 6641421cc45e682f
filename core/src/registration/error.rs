//! Why a registration was refused.

use alloc::string::String;
use core::fmt;
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
    /// `dead_letter(topic)` without `max_attempts(n)`.
    #[error(
        "subscription `{subscription}` declares dead_letter(\"{dead_letter_topic}\") but no \
         attempt limit, so nothing would ever be sent there: {}",
        AddALimit(*.kind)
    )]
    DeadLetterWithoutLimit {
        /// The subscription.
        subscription: String,
        /// Its type, to tell whether a limit can be added at all.
        kind: SubscriptionType,
        /// The declared dead-letter topic.
        dead_letter_topic: String,
    },
    /// `max_attempts(n)` on a subscription type that keeps no redelivery count.
    #[error(
        "subscription `{subscription}` is {kind} and declares max_attempts({max_attempts}), \
         which would never be reached: {kind} subscriptions keep no redelivery count (only \
         Shared and KeyShared count redeliveries); make the subscription Shared or KeyShared, \
         or remove `.max_attempts(..)` and `.dead_letter(..)`"
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

/// The fix for a dead-letter topic without a limit, which depends on whether the type can
/// take one.
struct AddALimit(SubscriptionType);

impl fmt::Display for AddALimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.0;
        if kind.counts_redeliveries() {
            f.write_str(
                "add `.max_attempts(nonzero!(N))` before `.dead_letter(..)`, or remove \
                 `.dead_letter(..)`",
            )
        } else {
            write!(
                f,
                "remove `.dead_letter(..)`; a limit cannot be added on a {kind} subscription, \
                 which keeps no redelivery count (only Shared and KeyShared count redeliveries)"
            )
        }
    }
}
