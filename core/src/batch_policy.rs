//! When a batch handler's batch is handed over (`ruststream::batch::BatchPolicy`): apart from
//! `batch/`, which builds on the handler, so that the handler can name it.

use core::num::NonZeroUsize;
use core::time::Duration;

/// When the messages gathered for a batch handler are handed over: as soon as `max_messages`
/// are gathered or their payloads reach `max_bytes`, or `max_wait` after the first of them
/// arrived, whichever comes first; and, partial, when the subscription stops.
///
/// The defaults are the Java client's `BatchReceivePolicy` defaults for bytes (10 MiB) and
/// wait (100 ms), with 100 messages where Java sets no count.
///
/// ```
/// use std::time::Duration;
/// use ruststream::batch::BatchPolicy;
/// use ruststream::nonzero;
///
/// let policy = BatchPolicy::new(nonzero!(64)).max_wait(Duration::from_millis(250));
/// assert_eq!(policy.messages().get(), 64);
/// assert_eq!(policy.wait(), Duration::from_millis(250));
/// assert_eq!(policy.bytes(), 10 * 1024 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchPolicy {
    max_messages: NonZeroUsize,
    max_bytes: usize,
    max_wait: Duration,
}

impl Default for BatchPolicy {
    /// 100 messages, 10 MiB, 100 ms.
    fn default() -> Self {
        BatchPolicy::new(crate::nonzero!(100))
    }
}

impl BatchPolicy {
    /// At most `max_messages` a batch, 10 MiB of payload, 100 ms of waiting.
    pub const fn new(max_messages: NonZeroUsize) -> Self {
        BatchPolicy {
            max_messages,
            max_bytes: 10 * 1024 * 1024,
            max_wait: Duration::from_millis(100),
        }
    }

    /// Hand a batch over once its payloads reach `bytes` (a single message larger than that
    /// is a batch of its own).
    pub const fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Hand a partial batch over `wait` after its first message arrived.
    pub const fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// At most how many messages a batch holds.
    pub const fn messages(&self) -> NonZeroUsize {
        self.max_messages
    }

    /// The payload bytes at which a batch is handed over.
    pub const fn bytes(&self) -> usize {
        self.max_bytes
    }

    /// How long a partial batch waits for more.
    pub const fn wait(&self) -> Duration {
        self.max_wait
    }
}
