//! The core's vocabulary in pulsar-rs terms.

use pulsar::consumer::DeadLetterPolicy as PulsarDeadLetterPolicy;
use pulsar::SubType;
use std::num::NonZeroU32;

use ruststream::SubscriptionType;
use ruststream_pulsar_model::TopicName;

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

/// The pulsar-rs dead-letter policy for a checked registration: `max_attempts` and the
/// dead-letter topic as the broker resolved it (fully qualified, so that pulsar-rs publishes
/// where the app's readers subscribe, on any broker).
///
/// pulsar-rs checks `redelivery_count >= max_redeliver_count` before handing a message over, so
/// `max_redeliver_count = max_attempts` lets the handler see a message exactly `max_attempts`
/// times.
pub(crate) fn dead_letter_policy(
    max_attempts: NonZeroU32,
    dead_letter_topic: &TopicName,
) -> PulsarDeadLetterPolicy {
    PulsarDeadLetterPolicy {
        max_redeliver_count: max_attempts.get() as usize,
        dead_letter_topic: dead_letter_topic.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let topic = TopicName::parse("refunds-dlq").unwrap();
        let pulsar = dead_letter_policy(NonZeroU32::new(5).unwrap(), &topic);
        assert_eq!(pulsar.max_redeliver_count, 5);
        assert_eq!(
            pulsar.dead_letter_topic,
            "persistent://public/default/refunds-dlq"
        );
    }
}
