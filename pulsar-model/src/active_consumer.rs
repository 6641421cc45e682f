//! Which consumer of an Exclusive or Failover subscription receives the messages.
//!
//! Pulsar's `AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer`: the
//! consumers are sorted by priority level, then name; only those at the best (lowest) level
//! take part. On a partition `n` the active one is number `n % count`. On a non-partitioned
//! topic (partition index -1) it is chosen on a hash ring: every candidate `i` puts 100 points
//! at `hash(name_i + j)` for `j` in `0..100` (a later candidate overwrites a colliding point),
//! and the active consumer owns the first point at or after `hash(topic name)`, wrapping
//! around. So the choice depends on the names, not on who connected first, and a newcomer may
//! take over; each change rewinds the cursor (`PersistentDispatcherSingleActiveConsumer`,
//! `scheduleReadOnActiveConsumer`).

use std::collections::BTreeMap;

use crate::hash::pulsar_hash;
use crate::roster::Member;
use crate::{ConsumerId, TopicName};

/// Points per consumer on the ring (`CONSUMER_CONSISTENT_HASH_REPLICAS`).
const REPLICAS: usize = 100;

/// The active consumer among `members`, or `None` if there are none.
pub(crate) fn pick_active(topic: &TopicName, members: &[Member]) -> Option<ConsumerId> {
    let mut sorted: Vec<&Member> = members.iter().collect();
    // Java's List.sort is stable, as is this one.
    sorted.sort_by(|a, b| {
        a.priority_level
            .cmp(&b.priority_level)
            .then_with(|| a.name.cmp(&b.name))
    });
    let best = sorted.first()?.priority_level;
    let candidates: Vec<&Member> = sorted
        .into_iter()
        .take_while(|m| m.priority_level == best)
        .collect();

    let index = match topic.partition_index() {
        Some(partition) => partition as usize % candidates.len(),
        None => {
            let mut ring: BTreeMap<u32, usize> = BTreeMap::new();
            for (i, member) in candidates.iter().enumerate() {
                for j in 0..REPLICAS {
                    ring.insert(pulsar_hash(format!("{}{j}", member.name).as_bytes()), i);
                }
            }
            let hash = pulsar_hash(topic.as_str().as_bytes());
            let (_, &i) = ring
                .range(hash..)
                .next()
                .or_else(|| ring.iter().next())
                .expect("the ring has points: there is a candidate");
            i
        }
    };
    Some(candidates[index].id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, name: &str, priority_level: i32) -> Member {
        Member {
            id: ConsumerId(id),
            name: name.into(),
            priority_level,
        }
    }

    #[test]
    fn a_single_consumer_is_active() {
        let topic: TopicName = "refunds".parse().unwrap();
        assert_eq!(
            pick_active(&topic, &[member(4, "x", 0)]),
            Some(ConsumerId(4))
        );
        assert_eq!(pick_active(&topic, &[]), None);
    }

    #[test]
    fn the_choice_depends_on_names_not_on_arrival_order() {
        let topic: TopicName = "refunds".parse().unwrap();
        let a = [
            member(1, "alpha", 0),
            member(2, "beta", 0),
            member(3, "gamma", 0),
        ];
        let b = [
            member(3, "gamma", 0),
            member(1, "alpha", 0),
            member(2, "beta", 0),
        ];
        assert_eq!(pick_active(&topic, &a), pick_active(&topic, &b));
    }

    #[test]
    fn only_the_best_priority_level_takes_part() {
        let topic: TopicName = "refunds".parse().unwrap();
        let members = [
            member(1, "alpha", 1),
            member(2, "beta", 0),
            member(3, "gamma", 1),
        ];
        assert_eq!(pick_active(&topic, &members), Some(ConsumerId(2)));
    }

    #[test]
    fn partitions_are_spread_by_index() {
        let members = [member(1, "b", 0), member(2, "a", 0)];
        let p0: TopicName = "t-partition-0".parse().unwrap();
        let p1: TopicName = "t-partition-1".parse().unwrap();
        // Sorted by name: a (#2), b (#1).
        assert_eq!(pick_active(&p0, &members), Some(ConsumerId(2)));
        assert_eq!(pick_active(&p1, &members), Some(ConsumerId(1)));
    }
}
