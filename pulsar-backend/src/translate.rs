//! The core's vocabulary in pulsar-rs terms.

use pulsar::consumer::DeadLetterPolicy as PulsarDeadLetterPolicy;
use pulsar::SubType;
use ruststream::{DeadLetterPolicy, SubscriptionType};

/// The pulsar-rs subscription type for a core [`SubscriptionType`].
///
/// `None` only for a type added to the (non-exhaustive) core enum that this crate does not know
/// yet; the four Pulsar types always map to their namesakes.
pub fn sub_type(kind: SubscriptionType) -> Option<SubType> {
    Some(match kind {
        SubscriptionType::Exclusive => SubType::Exclusive,
        SubscriptionType::Shared => SubType::Shared,
        SubscriptionType::Failover => SubType::Failover,
        SubscriptionType::KeyShared => SubType::KeyShared,
        _ => return None,
    })
}

/// The pulsar-rs dead-letter policy for a validated core policy.
///
/// pulsar-rs checks `redelivery_count >= max_redeliver_count` before handing a message over, so
/// `max_redeliver_count = max_attempts` lets the handler see a message exactly `max_attempts`
/// times. The topic is passed as given; the broker layer qualifies names before this point.
pub fn dead_letter_policy(policy: &DeadLetterPolicy) -> PulsarDeadLetterPolicy {
    PulsarDeadLetterPolicy {
        max_redeliver_count: policy.max_redeliver_count() as usize,
        dead_letter_topic: policy.dead_letter_topic().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    #[test]
    fn every_type_maps_to_its_namesake() {
        let mapped: Vec<_> = SubscriptionType::ALL.into_iter().map(sub_type).collect();
        assert_eq!(
            mapped,
            [
                Some(SubType::Exclusive),
                Some(SubType::Shared),
                Some(SubType::Failover),
                Some(SubType::KeyShared)
            ]
        );
    }

    #[test]
    fn max_redeliver_count_is_max_attempts() {
        let policy = ruststream::dead_letter_policy(
            "refunds",
            SubscriptionType::Shared,
            NonZeroU32::new(5),
            Some("refunds-dlq"),
        )
        .unwrap()
        .unwrap();
        let pulsar = dead_letter_policy(&policy);
        assert_eq!(pulsar.max_redeliver_count, 5);
        assert_eq!(pulsar.dead_letter_topic, "refunds-dlq");
    }
}
