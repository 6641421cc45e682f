//! The port a broker offers for publishing.

use alloc::boxed::Box;

use super::{Publishing, Receipt, Reply};
use crate::message::Message;
use crate::MessageId;

/// What a broker offers handlers and the app for publishing.
///
/// A port MUST:
/// - hand `message` to its producer when the returned future completes `Ok`, and tell
///   `receipt` the broker's answer exactly once, later (or at once, for a broker that stores
///   at the call); dropping the receipt untold tells a failure;
/// - when the future completes with an error (the message was not sent: an invalid topic, a
///   producer that could not open), tell `receipt` that error too;
/// - wait, in the future, while its producers hold as many unanswered messages as they may
///   (backpressure), rather than fail or hold more;
/// - keep the order of the messages one caller sends to one topic.
pub trait Publish: Send + Sync {
    /// Hand `message` to the producer of its topic; `receipt` is told the broker's answer.
    /// Completes once the message is handed over, not once it is answered.
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()>;

    /// Publish `message` and wait for the broker's answer, telling `receipt` too; the
    /// message's id. By default a [`Reply`] joins the receipt of [`Publish::send`].
    fn publish(&self, message: Message, receipt: Receipt) -> Publishing<'_, MessageId> {
        let (reply, confirm) = Reply::new();
        let sending = self.send(message, receipt.and(Some(confirm)));
        Publishing::waiting(Box::pin(async move {
            sending.await?;
            reply.await
        }))
    }
}

impl core::fmt::Debug for dyn Publish {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("dyn Publish")
    }
}
