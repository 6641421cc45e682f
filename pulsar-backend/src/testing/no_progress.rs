//! The error a `TestApp` step returns when the app keeps handling deliveries without time
//! moving.

use std::time::Duration;

/// How many handler calls one `TestApp` step (a `settle`, or one instant of an `advance`)
/// allows before it gives up with [`NoProgress`], unless
/// [`TestAppBuilder::max_calls_per_instant`](super::TestAppBuilder::max_calls_per_instant)
/// says otherwise. Far more than any finite scenario makes at one instant; reached only by a
/// loop, such as a handler that always returns `retry()` on an Exclusive or Failover
/// subscription (no count, so no dead-letter limit: the broker redelivers at once, forever).
pub const DEFAULT_MAX_CALLS_PER_INSTANT: usize = 10_000;

/// The app kept handling deliveries at one virtual instant past the bound: on a virtual clock
/// it would never settle. Names the subscription and the message last handled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error(
    "no progress at t={at:?}: {calls} handler calls without time moving, the last one \
     `{handler}` on subscription `{subscription}` with message {message_id}. A handler that \
     always returns `retry()` on an Exclusive or Failover subscription is redelivered at once, \
     forever (those types keep no count, so no attempt limit applies): return \
     `retry_after(..)`, `drop()`, or use a Shared subscription with `max_attempts`. \
     If this many calls at one instant is expected, raise the bound with \
     `TestAppBuilder::max_calls_per_instant`"
)]
pub struct NoProgress {
    /// The subscription of the last call.
    pub subscription: String,
    /// The handler of the last call.
    pub handler: &'static str,
    /// The message id of the last call.
    pub message_id: String,
    /// How many handler calls the step saw.
    pub calls: usize,
    /// The virtual time they were all made at, since the start.
    pub at: Duration,
}
