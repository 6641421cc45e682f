//! Which consumer of a KeyShared subscription receives a key.
//!
//! Pulsar's default KeyShared selector (`AUTO_SPLIT` mode with consistent hashing,
//! `ConsistentHashingStickyKeyConsumerSelector`, 100 points per consumer): consumer `c` puts
//! points at `hash(name_c + "\0" + i)` for `i` in `0..100`, and a key belongs to the consumer
//! owning the first point at or after `hash(key)`, wrapping around. The key hashed is the
//! message's ordering key, else its partition key, else the bytes `NONE_KEY`
//! (`peekStickyKey`); the model has partition keys only. When two consumers share a point, the
//! model prefers the higher priority level, then the smaller name, then the older consumer
//! (Pulsar's tie-break on equal names is a selection counter). Pulsar 4 also reduces hashes to
//! a 65 536-wide range; the exact consumer owning a key may then differ from the model's, but
//! what tests rely on holds in both: one key, one consumer, while the consumers stay the same.

use std::collections::BTreeMap;

use crate::hash::pulsar_hash;
use crate::roster::Member;
use crate::ConsumerId;

/// Points per consumer (`subscriptionKeySharedConsistentHashingReplicaPoints`, default 100).
const POINTS: usize = 100;

/// The key of messages published without one (`NONE_KEY`).
const NONE_KEY: &str = "NONE_KEY";

/// The hash Pulsar computes for a message's sticky key.
pub(crate) fn sticky_key_hash(key: Option<&str>) -> u32 {
    pulsar_hash(key.unwrap_or(NONE_KEY).as_bytes())
}

/// A consistent-hash ring over a subscription's consumers.
#[derive(Debug)]
pub(crate) struct HashRing {
    points: BTreeMap<u32, ConsumerId>,
}

impl HashRing {
    pub(crate) fn new(members: &[Member]) -> Self {
        let mut owners: BTreeMap<u32, &Member> = BTreeMap::new();
        for member in members {
            for i in 0..POINTS {
                let hash = pulsar_hash(format!("{}\0{i}", member.name).as_bytes());
                let keep = owners
                    .get(&hash)
                    .is_some_and(|current| rank(current) <= rank(member));
                if !keep {
                    owners.insert(hash, member);
                }
            }
        }
        HashRing {
            points: owners.into_iter().map(|(h, m)| (h, m.id)).collect(),
        }
    }
}

/// The order in which consumers sharing a point are preferred.
fn rank(m: &Member) -> (std::cmp::Reverse<i32>, &str, ConsumerId) {
    (std::cmp::Reverse(m.priority_level), &m.name, m.id)
}

impl HashRing {
    /// The consumer owning `hash`, or `None` if the ring is empty.
    pub(crate) fn select(&self, hash: u32) -> Option<ConsumerId> {
        self.points
            .range(hash..)
            .next()
            .or_else(|| self.points.iter().next())
            .map(|(_, id)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, name: &str) -> Member {
        Member {
            id: ConsumerId(id),
            name: name.into(),
            priority_level: 0,
        }
    }

    #[test]
    fn keys_spread_over_consumers_and_stay_put() {
        let ring = HashRing::new(&[member(1, "a"), member(2, "b")]);
        let owners: Vec<ConsumerId> = (0..50)
            .map(|k| {
                ring.select(sticky_key_hash(Some(&format!("key-{k}"))))
                    .unwrap()
            })
            .collect();
        assert!(owners.contains(&ConsumerId(1)) && owners.contains(&ConsumerId(2)));
        let again = HashRing::new(&[member(2, "b"), member(1, "a")]);
        for k in 0..50 {
            let h = sticky_key_hash(Some(&format!("key-{k}")));
            assert_eq!(ring.select(h), again.select(h), "key-{k}");
        }
    }

    #[test]
    fn empty_ring_selects_nobody_and_missing_key_is_none_key() {
        assert_eq!(HashRing::new(&[]).select(5), None);
        assert_eq!(sticky_key_hash(None), sticky_key_hash(Some("NONE_KEY")));
    }
}
