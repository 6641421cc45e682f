//! Topic names no other test run uses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fully qualified topic, `persistent://public/default/<prefix>-<unique>`, unique per call
/// across processes.
///
/// Fully qualified because pulsar-lite does not expand short names (`refunds` and
/// `persistent://public/default/refunds` are two topics to it, one to Apache Pulsar); unique so
/// that tests sharing an external broker, or reruns, never see each other's messages.
pub fn unique_topic(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "persistent://public/default/{prefix}-{}-{nanos:x}-{count}",
        std::process::id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_full_and_distinct() {
        let a = unique_topic("t");
        let b = unique_topic("t");
        assert!(a.starts_with("persistent://public/default/t-"), "{a}");
        assert_ne!(a, b);
    }
}
