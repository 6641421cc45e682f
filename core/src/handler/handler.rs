//! The handler trait.

use core::future::Future;

use alloc::vec::Vec;

use super::spare::Spare;
use super::Incoming;
use super::Rejection;
use crate::batch_policy::BatchPolicy;
use crate::outcome::Answer;

/// A message handler for an app whose state is `S`.
///
/// Written by `#[subscriber(..)]`; implementing it by hand is possible but rarely useful.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a ruststream handler for an app whose state is `{S}`",
    label = "not a handler",
    note = "a handler is an `async fn` annotated with `#[subscriber(..)]` that returns \
            `HandlerOutcome` (or anything `IntoOutcome`); pass the function's name to `include`, e.g. \
            `b.include(process_refund)`",
    note = "if it is such a function, one of its parameters cannot be taken from the app state \
            `{S}`: check that every `State<T>` parameter has `T: FromRef<{S}>` (derive `FromRef` \
            on the state struct)"
)]
pub trait Handler<S>: Send + Sync + 'static {
    /// The handler's name (the function's), for logs, metrics and error messages.
    fn name(&self) -> &'static str;

    /// Decode `message`, extract the other parameters from it and from `state`, and run the
    /// handler.
    ///
    /// The future is the handler's own type, not a boxed one: a driver is built for each
    /// handler type and keeps the running calls in place, so handling a message allocates
    /// nothing for the call itself.
    fn call<'a>(
        &'a self,
        message: Incoming<'a>,
        state: &'a S,
    ) -> impl Future<Output = Result<Answer, Rejection>> + Send + 'a;

    /// For a handler that takes many messages at once (its first parameter is a slice), the
    /// policy its batches are gathered by unless its registration sets one; `None`, the
    /// default, for a handler of one message. The broker gathers batches only for handlers
    /// that answer `Some`.
    fn batch_policy(&self) -> Option<BatchPolicy> {
        None
    }

    /// Run the handler on a batch of `messages`: one answer per message, in their order. By
    /// default each message is handled on its own, one after the other; a batch handler
    /// decodes them all and runs its function once. Its lists as long as the batch come
    /// from `spare` and go back to it, so that a subscription's batches allocate them once.
    fn call_batch<'a>(
        &'a self,
        messages: &'a [Incoming<'a>],
        state: &'a S,
        spare: &'a mut Spare,
    ) -> impl Future<Output = Vec<Result<Answer, Rejection>>> + Send + 'a
    where
        S: Sync,
    {
        async move {
            let mut answers = spare.answers(messages.len());
            for message in messages {
                answers.push(self.call(*message, state).await);
            }
            answers
        }
    }
}

/// Where a handler is mounted, as its `#[subscriber(..)]` attribute says, with the type it was
/// written in (for Pulsar, a `PulsarSubscription` or a bare topic name).
///
/// A broker's `include` accepts only handlers whose descriptor type it understands, so a
/// handler written for another broker does not compile there. Written by `#[subscriber(..)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `#[subscriber(..)]` handler: nothing says where it is mounted",
    label = "not a `#[subscriber(..)]` handler",
    note = "annotate the `async fn` with `#[subscriber(\"topic\")]` (or a broker's subscription \
            descriptor) and pass its name to `include`"
)]
pub trait Described {
    /// The type of the attribute's expression.
    type Descriptor;

    /// The attribute's expression, evaluated. Called once, at registration.
    fn descriptor(&self) -> Self::Descriptor;

    /// Whether the handler may return `HandlerOutcome::dead_letter`, as its attribute says
    /// (`#[subscriber(.., dead_letter)]`). Which outcomes a handler returns cannot be seen
    /// from outside it (an error type's `IntoOutcome` may choose one), so the handler declares
    /// it, and a broker refuses to start it without a dead-letter topic rather than find out
    /// at the first poison message.
    fn dead_letters(&self) -> bool {
        false
    }

    /// The schema of the handler's payload type ([`Payload::schema`](super::Payload::schema)),
    /// which the broker checks against the topic's when the handler subscribes.
    fn payload_schema(&self) -> Option<crate::schema::Schema> {
        None
    }

    /// What the handler reads, for the service's description (`<service> asyncapi`): its
    /// payload type, encoding and schema, and whether it reads the key and the properties.
    /// `#[subscriber]` writes it from the function's parameters.
    fn message(&self) -> crate::describe::MessageInfo {
        crate::describe::MessageInfo::new("payload", "application/octet-stream")
            .with_payload(crate::describe::PayloadSchema::Bytes)
    }
}
