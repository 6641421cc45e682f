//! Publishing from inside a handler.

use alloc::sync::Arc;

use super::Incoming;
use super::{Extract, Rejection};
use crate::message::{IntoMessage, Message, MessageId};
use crate::publish::outbox::{HandlerPort, Tracker};
use crate::publish::{Publish, PublishError, Publishing, Receipt};

/// A handler parameter that publishes through the broker the handler runs on.
///
/// The delivery is acknowledged only once every message its handler published is confirmed
/// by the broker; if one fails, the delivery is not acknowledged and comes back as `retry()`
/// does. So a handler that forwards need not wait for its publishes:
/// `publisher.publish(&shipment).await?` hands the message to the producer (waiting only
/// while the producer holds as many unanswered messages as it may), and the handler returns
/// at once; the subscription settles the delivery once the broker answered.
/// `publisher.publish_for_id(&shipment).await` also waits for the broker's answer, for the
/// message id: a round trip per message, for the handlers that need the id. Options go with
/// [`Message`](crate::message::Message):
/// `publisher.publish(Message::of(&refund)?.key("card-7")).await`.
#[derive(Clone)]
pub struct Publisher {
    port: Arc<dyn Publish>,
    /// The delivery's publishes, counted until its handler ends.
    tracker: Option<Arc<Tracker>>,
}

impl core::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Publisher")
    }
}

impl Publisher {
    /// A publisher over a broker's port, outside any delivery: nothing waits for its
    /// publishes.
    pub fn new(port: Arc<dyn Publish>) -> Self {
        Publisher {
            port,
            tracker: None,
        }
    }

    /// Publish `message` (a [`Message`](crate::message::Message), or `&value` of an
    /// `#[outgoing]` type, to its topic): hand it to the producer and return. The delivery is
    /// acknowledged once the broker confirmed it (and every other publish of the handler), and
    /// comes back if it failed. Waits only while the producer holds as many unanswered
    /// messages as it may.
    pub async fn publish(&self, message: impl IntoMessage) -> Result<(), PublishError> {
        let receipt = self.receipt();
        match message.into_message() {
            Ok(message) => self.port.send(message, receipt).await,
            Err(error) => Err(refuse(receipt, error.into())),
        }
    }

    /// Publish `message` and wait for the broker's answer: the message id. A round trip per
    /// message, where [`Publisher::publish`] leaves the waiting to the subscription.
    pub async fn publish_for_id(
        &self,
        message: impl IntoMessage,
    ) -> Result<MessageId, PublishError> {
        let receipt = self.receipt();
        match message.into_message() {
            Ok(message) => self.port.publish(message, receipt).await,
            Err(error) => Err(refuse(receipt, error.into())),
        }
    }

    /// The publisher a delivery (or a batch handler's call) lends its handler: what it
    /// publishes is counted where `lent` says.
    pub(crate) fn lent(lent: &HandlerPort<'_>) -> Self {
        Publisher {
            port: lent.port().clone(),
            tracker: lent.tracker(),
        }
    }

    /// A publisher for a handler on a broker that offers none: every publish fails, saying
    /// so (a batch handler's parameters cannot be refused one by one).
    pub(crate) fn unavailable() -> Self {
        Publisher::new(Arc::new(Unavailable))
    }

    /// Who is told the answer: the delivery, while its handler runs.
    fn receipt(&self) -> Receipt {
        Receipt::none().and(self.tracker.as_ref().and_then(|t| t.confirm()))
    }
}

/// The port of a broker that offers no publisher: it refuses every message.
struct Unavailable;

impl Publish for Unavailable {
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        let error = PublishError::refused(
            message.topic,
            "this handler has no publisher: the broker it runs on offers none; publish from \
             a handler of a broker that publishes",
        );
        Publishing::done(Err(refuse(receipt, error)))
    }
}

/// A message that could not be built: its receipt fails as the publish does.
fn refuse(receipt: Receipt, error: PublishError) -> PublishError {
    receipt.tell(Err(error.clone()));
    error
}

impl<S> Extract<S> for Publisher {
    fn extract(
        message: &Incoming<'_>,
        _state: &S,
        handler: &'static str,
    ) -> Result<Self, Rejection> {
        match message.publisher {
            Some(lent) => Ok(Publisher::lent(lent)),
            None => Err(Rejection::Missing {
                handler,
                parameter: "Publisher",
                what: "a publisher: the broker this handler runs on offers none",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::outgoing::Outgoing;
    use alloc::borrow::ToOwned;
    use alloc::string::ToString;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::time::Duration;
    use spin::Mutex;

    /// Keeps what it was asked to publish.
    #[derive(Default)]
    struct Keep(Mutex<Vec<Message>>);

    impl Publish for Keep {
        fn send(&self, message: Message, receipt: Receipt) -> crate::publish::Publishing<'_, ()> {
            self.0.lock().push(message);
            receipt.tell(Ok(MessageId::new(&[1, 0, -1])));
            crate::publish::Publishing::done(Ok(()))
        }
    }

    struct Refund {
        id: u64,
    }

    // By hand: the core's serde has no derive feature.
    impl serde::Serialize for Refund {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeStruct;
            let mut refund = s.serialize_struct("Refund", 1)?;
            refund.serialize_field("id", &self.id)?;
            refund.end()
        }
    }

    impl Outgoing for Refund {
        const TOPIC: &'static str = "refunds";
    }

    #[test]
    fn a_message_carries_every_option_to_the_port() {
        let keep = Arc::new(Keep::default());
        let publisher = Publisher::new(keep.clone());
        let message = Message::of(&Refund { id: 7 })
            .expect("encodes")
            .property("tenant", "acme")
            .key("card-7")
            .event_time(Duration::from_secs(5))
            .deliver_after(Duration::from_secs(30))
            .to("refunds-eu");
        let id = block_on(publisher.publish_for_id(message)).expect("published");
        assert_eq!(id.to_string(), "1:0:-1");
        let kept = keep.0.lock();
        let message = &kept[0];
        assert_eq!(message.topic, "refunds-eu");
        assert_eq!(message.payload, b"{\"id\":7}");
        assert_eq!(
            message.properties,
            vec![("tenant".to_owned(), "acme".to_owned())]
        );
        assert_eq!(message.key.as_deref(), Some("card-7"));
        assert_eq!(message.event_time, Some(Duration::from_secs(5)));
        assert_eq!(message.deliver_after, Some(Duration::from_secs(30)));
        assert_eq!(message.deliver_at, None);
    }

    #[test]
    fn a_typed_value_goes_to_its_own_topic() {
        let keep = Arc::new(Keep::default());
        let publisher = Publisher::new(keep.clone());
        block_on(publisher.publish(&Refund { id: 8 })).expect("published");
        let kept = keep.0.lock();
        assert_eq!(kept[0].topic, "refunds");
        assert_eq!(kept[0].payload, b"{\"id\":8}");
    }

    /// Polls a future that completes at once (the test port never waits).
    fn block_on<F: core::future::Future>(future: F) -> F::Output {
        let mut future = core::pin::pin!(future);
        let waker = core::task::Waker::noop();
        match future
            .as_mut()
            .poll(&mut core::task::Context::from_waker(waker))
        {
            core::task::Poll::Ready(output) => output,
            core::task::Poll::Pending => panic!("the test port completes at once"),
        }
    }
}
