//! Publishing from inside a handler.

use alloc::sync::Arc;

use super::{Extract, Rejection};
use crate::message::{Incoming, IntoMessage, MessageId, Publish};
use crate::publish_error::PublishError;

/// A handler parameter that publishes through the broker the handler runs on:
/// `publisher: Publisher`, then `publisher.publish(&refund).await`, or with options
/// `publisher.publish(Message::of(&refund)?.key("card-7")).await`.
#[derive(Clone)]
pub struct Publisher {
    port: Arc<dyn Publish>,
}

impl core::fmt::Debug for dyn Publish {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("dyn Publish")
    }
}

impl core::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Publisher")
    }
}

impl Publisher {
    /// A publisher over a broker's port.
    pub fn new(port: Arc<dyn Publish>) -> Self {
        Publisher { port }
    }

    /// Publish `message` (a [`Message`](crate::message::Message), or `&value` of an
    /// `#[outgoing]` type, to its topic) and wait for the broker's receipt; the message id.
    pub async fn publish(&self, message: impl IntoMessage) -> Result<MessageId, PublishError> {
        self.port.publish(message.into_message()?).await
    }
}

impl<S> Extract<S> for Publisher {
    fn extract(
        message: &Incoming<'_>,
        _state: &S,
        handler: &'static str,
    ) -> Result<Self, Rejection> {
        match message.publisher {
            Some(port) => Ok(Publisher { port: port.clone() }),
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
        fn publish(&self, message: Message) -> crate::message::Publishing<'_, MessageId> {
            self.0.lock().push(message);
            crate::message::Publishing::done(Ok(MessageId::new(&[1, 0, -1])))
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
        let id = block_on(publisher.publish(message)).expect("published");
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
