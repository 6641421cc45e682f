//! The latency benchmark's message: a JSON payload of a fixed size carrying its sequence
//! number and the wall-clock time it was sent, so that a consumer on the same host (same clock)
//! computes publish→handler latency from the payload alone; and the wall clock both sides
//! read.
//!
//! `{"seq":12,"sent_ns":1733400000123456789,"pad":"xxxx…"}`, padded to the size asked for.
//! `bench/java/LiveConsumer.java` reads the same two fields.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch now (`CLOCK_REALTIME`, as Java's `Instant.now()`).
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

/// The payload of message `seq` sent at `sent_ns`, `size` bytes long (or longer, if `size` is
/// below what the two fields need).
pub fn stamped(seq: u64, sent_ns: u64, size: usize) -> Vec<u8> {
    let head = format!("{{\"seq\":{seq},\"sent_ns\":{sent_ns},\"pad\":\"");
    let tail = "\"}";
    let pad = size.saturating_sub(head.len() + tail.len());
    let mut payload = Vec::with_capacity(size.max(head.len() + tail.len()));
    payload.extend_from_slice(head.as_bytes());
    payload.resize(payload.len() + pad, b'x');
    payload.extend_from_slice(tail.as_bytes());
    payload
}

/// The sequence number and send time of a [`stamped`] payload.
pub fn read_stamp(payload: &[u8]) -> Option<(u64, u64)> {
    Some((
        field(payload, b"\"seq\":")?,
        field(payload, b"\"sent_ns\":")?,
    ))
}

/// The unsigned integer after `key` in `payload`.
fn field(payload: &[u8], key: &[u8]) -> Option<u64> {
    let at = payload.windows(key.len()).position(|w| w == key)? + key.len();
    let digits = payload[at..].iter().take_while(|b| b.is_ascii_digit());
    let mut value: u64 = 0;
    let mut any = false;
    for digit in digits {
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
        any = true;
    }
    any.then_some(value)
}

/// Nearest-rank quantiles: the smallest value with at least `q` of `sorted` at or below it.
/// `sorted` must be sorted and not empty.
pub fn quantile(sorted: &[i64], q: f64) -> i64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_read_back_at_the_size_asked_for() {
        let payload = stamped(42, 1_733_400_000_123_456_789, 128);
        assert_eq!(payload.len(), 128);
        assert!(serde_json::from_slice::<serde_json::Value>(&payload).is_ok());
        assert_eq!(read_stamp(&payload), Some((42, 1_733_400_000_123_456_789)));
        assert_eq!(read_stamp(b"{\"seq\":1}"), None);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let values: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(&values, 0.5), 50);
        assert_eq!(quantile(&values, 0.99), 99);
        assert_eq!(quantile(&values, 1.0), 100);
        assert_eq!(quantile(&[7], 0.99), 7);
    }
}
