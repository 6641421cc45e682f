//! The middleware trait.

use alloc::sync::Arc;
use core::any::Any;

use super::{Delivery, End, Flow, Hooks, Mounting};
use crate::message::Message;
use crate::publish::PublishError;

/// Code around a scope's handlers and publishes. Every method has a default that does
/// nothing, so a layer writes only the hooks it needs.
///
/// A layer MUST:
/// - return from each hook without waiting: hooks run on the driver's task, between the
///   deliveries of a subscription (work that waits belongs in the handler);
/// - keep what it needs from `before` to `after` in the [`Delivery`] (its span, its start
///   time), or in state shared by all deliveries: a layer is shared by every delivery of
///   every registration it applies to, which may run at once;
/// - not panic: a panicking hook takes the driver's task down with it.
///
/// A layer that holds no state (a unit struct) adds no allocation per message: the stack
/// holds it once, and its hooks are called by reference.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a ruststream layer",
    label = "not a `Layer`",
    note = "implement `ruststream::middleware::Layer` for it (every hook has a default); a layer \
            must be `Send + Sync + 'static`"
)]
pub trait Layer: Any + Send + Sync {
    /// The layer to use for one registration, made once when its driver starts (per-handler
    /// metric handles, a label); `None`, the default, uses this one.
    fn mount(&self, registration: &Mounting<'_>) -> Option<Arc<dyn Layer>> {
        let _ = registration;
        None
    }

    /// Which of the hooks below this layer has ([`Hooks::ALL`], the default, is always
    /// right): a stack skips the others on every message. Asked once, when the stack is
    /// built.
    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }

    /// Before the handler: [`Flow::Next`] goes on, [`Flow::Return`] answers without calling
    /// the layers further in nor the handler.
    fn before(&self, delivery: &mut Delivery<'_>) -> Flow {
        let _ = delivery;
        Flow::Next
    }

    /// After the handler (or a layer further in) answered, in the delivery's span: `end`
    /// says how, and [`End::answer`] replaces the answer. Called for every delivery whose
    /// `before` this layer passed on.
    fn after(&self, delivery: &Delivery<'_>, end: &mut End<'_>) {
        let _ = (delivery, end);
    }

    /// How the delivery ended, once that is known: the answer as settled, or what the
    /// machine made of it (a backoff's delay, a copy to the dead-letter or retry topic
    /// confirmed or failed). Once per delivery `after` was called for.
    fn completed(&self, delivery: &Delivery<'_>, end: &End<'_>) {
        let _ = (delivery, end);
    }

    /// Every message a handler of the scope publishes, and those the app publishes itself
    /// at app and broker scope, before it is handed to the producer: change it, or refuse it
    /// (the publish fails with this error, and a handler's delivery is not acknowledged).
    /// The copies the framework makes (to the dead-letter and retry topics) do not pass here:
    /// they are the delivered message, unchanged.
    fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        let _ = message;
        Ok(())
    }
}
