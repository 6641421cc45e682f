//! The four subscription types and the one property of theirs the core relies on.

use core::fmt;

/// How a subscription spreads messages over its consumers.
///
/// The names and behaviours are Pulsar's, and they are also the vocabulary of most other
/// brokers with durable subscriptions. The core cares about one thing only: whether the broker
/// keeps a redelivery count for the type ([`SubscriptionType::counts_redeliveries`]), because an
/// attempt limit is meaningless where nothing counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SubscriptionType {
    /// One consumer at a time; a second one is refused. A redelivery request rewinds the cursor
    /// and the redelivered messages arrive with count 0.
    Exclusive,
    /// Messages are spread round-robin over all consumers; every redelivery is counted. The
    /// default, as it is for a bare topic name.
    #[default]
    Shared,
    /// One active consumer, the others stand by and take over when it leaves. Like
    /// [`SubscriptionType::Exclusive`], it keeps no redelivery count.
    Failover,
    /// Messages are spread over consumers by key, keeping per-key order; redeliveries are
    /// counted.
    KeyShared,
}

impl SubscriptionType {
    /// All four types, in the order used by tests and documentation.
    pub const ALL: [SubscriptionType; 4] = [
        SubscriptionType::Exclusive,
        SubscriptionType::Shared,
        SubscriptionType::Failover,
        SubscriptionType::KeyShared,
    ];

    /// Whether the broker counts redeliveries on this type. Only counted types can enforce an
    /// attempt limit and dead-letter a message that runs out of attempts.
    pub const fn counts_redeliveries(self) -> bool {
        matches!(self, SubscriptionType::Shared | SubscriptionType::KeyShared)
    }

    /// The type's name as written in Pulsar's API and in error messages.
    pub const fn name(self) -> &'static str {
        match self {
            SubscriptionType::Exclusive => "Exclusive",
            SubscriptionType::Shared => "Shared",
            SubscriptionType::Failover => "Failover",
            SubscriptionType::KeyShared => "KeyShared",
        }
    }
}

impl fmt::Display for SubscriptionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_shared_and_key_shared_count_redeliveries() {
        let counted: alloc::vec::Vec<_> = SubscriptionType::ALL
            .into_iter()
            .filter(|t| t.counts_redeliveries())
            .collect();
        assert_eq!(
            counted,
            [SubscriptionType::Shared, SubscriptionType::KeyShared]
        );
    }

    #[test]
    fn default_is_shared() {
        assert_eq!(SubscriptionType::default(), SubscriptionType::Shared);
    }
}
