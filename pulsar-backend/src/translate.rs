//! The core's vocabulary in pulsar-rs terms.

use pulsar::SubType;

use ruststream::SubscriptionType;

/// The pulsar-rs subscription type for a core [`SubscriptionType`].
///
/// `None` only for a type added to the (non-exhaustive) core enum that this crate does not know
/// yet; the four Pulsar types always map to their namesakes.
pub(crate) fn sub_type(kind: SubscriptionType) -> Option<SubType> {
    Some(match kind {
        SubscriptionType::Exclusive => SubType::Exclusive,
        SubscriptionType::Shared => SubType::Shared,
        SubscriptionType::Failover => SubType::Failover,
        SubscriptionType::KeyShared => SubType::KeyShared,
        _ => return None,
    })
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
}
