//! The hash Pulsar uses to place consumers and keys on its hash rings.
//!
//! Pulsar's `Murmur3_32Hash` (apache/pulsar, `pulsar-common/.../common/util/Murmur3_32Hash.java`)
//! is MurmurHash3 x86 32-bit with seed 0 over the bytes, masked to a non-negative `int`
//! (`& Integer.MAX_VALUE`); the client's `Murmur3Hash32.makeHash(String)` hashes the UTF-8 bytes
//! the same way. The Failover active-consumer ring and the KeyShared consistent-hashing selector
//! both use it.

/// MurmurHash3 x86 32-bit, seed 0.
fn murmur3_x86_32(bytes: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mix_k1 = |k1: u32| k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);

    let mut h1: u32 = 0;
    let mut chunks = bytes.chunks_exact(4);
    for chunk in &mut chunks {
        let k1 = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        h1 ^= mix_k1(k1);
        h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let mut k1: u32 = 0;
    for (i, &b) in chunks.remainder().iter().enumerate() {
        k1 ^= u32::from(b) << (8 * i);
    }
    h1 ^= mix_k1(k1);
    // The length is an `int` in Java; only its low 32 bits matter.
    h1 ^= bytes.len() as u32;
    h1 ^= h1 >> 16;
    h1 = h1.wrapping_mul(0x85eb_ca6b);
    h1 ^= h1 >> 13;
    h1 = h1.wrapping_mul(0xc2b2_ae35);
    h1 ^= h1 >> 16;
    h1
}

/// Pulsar's `Murmur3_32Hash.getInstance().makeHash(bytes)`: a value in `0..=i32::MAX`.
pub(crate) fn pulsar_hash(bytes: &[u8]) -> u32 {
    murmur3_x86_32(bytes) & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_known_murmur3_values() {
        // Guava's Murmur3Hash32Test: murmur3_32().hashInt(0) == 593689054 and
        // hashInt(42) == -1134849565 (the int's four little-endian bytes).
        assert_eq!(murmur3_x86_32(&0i32.to_le_bytes()), 593_689_054);
        assert_eq!(murmur3_x86_32(&42i32.to_le_bytes()) as i32, -1_134_849_565);
        assert_eq!(murmur3_x86_32(b""), 0);
        assert_eq!(murmur3_x86_32(b"hello"), 0x248b_fa47);
    }

    #[test]
    fn pulsar_hash_is_non_negative_as_a_java_int() {
        assert_eq!(
            pulsar_hash(&42i32.to_le_bytes()),
            (-1_134_849_565i32 & i32::MAX) as u32
        );
        for key in ["a", "NONE_KEY", "consumer_1\u{0}7", "refunds"] {
            assert!(pulsar_hash(key.as_bytes()) <= i32::MAX as u32);
        }
    }
}
