//! A batch handler with its batch policy, as `include` takes it.

use alloc::vec::Vec;
use core::future::Future;
use core::num::NonZeroUsize;
use core::time::Duration;

use super::{BatchPolicy, Spare};
use crate::handler::{Described, Handler, Incoming, Rejection};
use crate::outcome::Answer;

/// A batch handler with the policy it is gathered by: what `handler.batch(max_messages)`
/// gives, for `b.include(..)`. The registration's own `.batch(policy)` overrides it.
///
/// ```
/// use std::time::Duration;
/// use ruststream::batch::BatchPolicy;
/// use ruststream::{nonzero, subscriber, Handler, HandlerOutcome};
///
/// #[subscriber("readings")]
/// async fn aggregate(readings: &[u32]) -> HandlerOutcome {
///     HandlerOutcome::ack()
/// }
///
/// // As a broker's `include` takes it: `b.include(aggregate.batch(..).batch_wait(..))`.
/// let batched = aggregate.batch(nonzero!(64)).batch_wait(Duration::from_millis(250));
/// let policy = BatchPolicy::new(nonzero!(64)).max_wait(Duration::from_millis(250));
/// assert_eq!(Handler::<()>::batch_policy(&batched), Some(policy));
/// assert_eq!(Handler::<()>::batch_policy(&aggregate), Some(BatchPolicy::default()));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Batched<H> {
    handler: H,
    policy: BatchPolicy,
}

impl<H> Batched<H> {
    /// `handler`, gathered in batches of at most `max_messages` (other limits the defaults of
    /// [`BatchPolicy::new`]).
    pub const fn new(handler: H, max_messages: NonZeroUsize) -> Self {
        Batched {
            handler,
            policy: BatchPolicy::new(max_messages),
        }
    }

    /// Hand a partial batch over `wait` after its first message arrived.
    pub const fn batch_wait(mut self, wait: Duration) -> Self {
        self.policy = self.policy.max_wait(wait);
        self
    }

    /// Hand a batch over once its payloads reach `bytes`.
    pub const fn batch_bytes(mut self, bytes: usize) -> Self {
        self.policy = self.policy.max_bytes(bytes);
        self
    }

    /// The policy.
    pub const fn policy(&self) -> BatchPolicy {
        self.policy
    }
}

// Not offered as a fix where something is not a handler: a `Batched` is made from one.
#[diagnostic::do_not_recommend]
impl<H: Described> Described for Batched<H> {
    type Descriptor = H::Descriptor;

    fn descriptor(&self) -> Self::Descriptor {
        self.handler.descriptor()
    }

    fn dead_letters(&self) -> bool {
        self.handler.dead_letters()
    }

    fn payload_schema(&self) -> Option<crate::schema::Schema> {
        self.handler.payload_schema()
    }

    fn message(&self) -> crate::describe::MessageInfo {
        self.handler.message()
    }
}

#[diagnostic::do_not_recommend]
impl<S: Sync, H: Handler<S>> Handler<S> for Batched<H> {
    fn name(&self) -> &'static str {
        self.handler.name()
    }

    fn call<'a>(
        &'a self,
        message: Incoming<'a>,
        state: &'a S,
    ) -> impl Future<Output = Result<Answer, Rejection>> + Send + 'a {
        self.handler.call(message, state)
    }

    fn batch_policy(&self) -> Option<BatchPolicy> {
        Some(self.policy)
    }

    fn call_batch<'a>(
        &'a self,
        messages: &'a [Incoming<'a>],
        state: &'a S,
        spare: &'a mut Spare,
    ) -> impl Future<Output = Vec<Result<Answer, Rejection>>> + Send + 'a
    where
        S: Sync,
    {
        self.handler.call_batch(messages, state, spare)
    }
}
