//! Publishing from inside a handler.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::time::Duration;

use super::{Extract, HandlerError};
use crate::message::{Headers, Incoming, Publish, Record};
use crate::outgoing::EncodeError;
use crate::outgoing::Outgoing;
use crate::publish_error::PublishError;

/// A handler parameter that publishes through the broker the handler runs on:
/// `publisher: Publisher`, then `publisher.publish(&refund).await`.
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

    /// Publish `value` to its `#[outgoing(name)]` topic, encoded by [`Outgoing::encode`] (JSON
    /// unless the type says otherwise).
    pub async fn publish<T: Outgoing>(&self, value: &T) -> Result<String, PublishError> {
        self.message(value).send().await
    }

    /// Prepare `value` for its `#[outgoing(name)]` topic, with options (properties, key, event
    /// time, delayed delivery), then [`Outbound::send`] it:
    /// `publisher.message(&refund).property("tenant", "acme").deliver_after(d).send().await`.
    pub fn message<T: Outgoing>(&self, value: &T) -> Outbound<'_> {
        Outbound {
            publisher: self,
            topic: String::from(T::TOPIC),
            record: value.encode().map(Record::new),
        }
    }

    /// Publish `value` as JSON to `topic`.
    pub async fn publish_to<T: serde::Serialize>(
        &self,
        topic: &str,
        value: &T,
    ) -> Result<String, PublishError> {
        let payload = serde_json::to_vec(value).map_err(|e| EncodeError::new::<T>("JSON", e))?;
        self.port.publish(topic, Record::new(payload)).await
    }

    /// Publish an encoded payload with headers and a key.
    pub async fn publish_raw(
        &self,
        topic: &str,
        payload: Vec<u8>,
        headers: Headers,
        key: Option<String>,
    ) -> Result<String, PublishError> {
        let mut record = Record::new(payload);
        record.headers = headers;
        record.key = key;
        self.port.publish(topic, record).await
    }

    /// Publish `record` (payload and every option) to `topic`.
    pub async fn publish_record(
        &self,
        topic: &str,
        record: Record,
    ) -> Result<String, PublishError> {
        self.port.publish(topic, record).await
    }
}

/// A message [`Publisher::message`] prepared: set its options, then [`Outbound::send`].
#[must_use = "nothing is published until `send().await`"]
pub struct Outbound<'p> {
    publisher: &'p Publisher,
    topic: String,
    record: Result<Record, EncodeError>,
}

impl Outbound<'_> {
    fn with(mut self, f: impl FnOnce(&mut Record)) -> Self {
        if let Ok(record) = &mut self.record {
            f(record);
        }
        self
    }

    /// Publish to `topic` instead of the type's own.
    pub fn to(mut self, topic: impl Into<String>) -> Self {
        self.topic = topic.into();
        self
    }

    /// Add a property (header).
    pub fn property(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), value.into());
        self.with(|r| r.headers.push((name, value)))
    }

    /// Set the partitioning / ordering key.
    pub fn key(self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.with(|r| r.key = Some(key))
    }

    /// Set the event time, since the Unix epoch.
    pub fn event_time(self, since_epoch: Duration) -> Self {
        self.with(|r| r.event_time = Some(since_epoch))
    }

    /// Deliver no sooner than `delay` from now (Shared and KeyShared subscriptions).
    pub fn deliver_after(self, delay: Duration) -> Self {
        self.with(|r| r.deliver_after = Some(delay))
    }

    /// Deliver no sooner than `since_epoch` (Shared and KeyShared subscriptions).
    pub fn deliver_at(self, since_epoch: Duration) -> Self {
        self.with(|r| r.deliver_at = Some(since_epoch))
    }

    /// Publish, waiting for the broker's receipt; the message id.
    pub async fn send(self) -> Result<String, PublishError> {
        let record = self.record?;
        self.publisher.port.publish(&self.topic, record).await
    }
}

impl core::fmt::Debug for Outbound<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Outbound")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl<S> Extract<S> for Publisher {
    fn extract(
        message: &Incoming<'_>,
        _state: &S,
        handler: &'static str,
    ) -> Result<Self, HandlerError> {
        match message.publisher {
            Some(port) => Ok(Publisher { port: port.clone() }),
            None => Err(HandlerError::Extract {
                handler,
                reason: "the broker this handler runs on offers no publisher; remove the \
                         `Publisher` parameter"
                    .to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::borrow::ToOwned;
    use alloc::vec;
    use spin::Mutex;

    /// Keeps what it was asked to publish.
    #[derive(Default)]
    struct Keep(Mutex<Vec<(String, Record)>>);

    impl Publish for Keep {
        fn publish<'a>(
            &'a self,
            topic: &'a str,
            record: Record,
        ) -> crate::message::Publishing<'a, String> {
            self.0.lock().push((topic.to_owned(), record));
            crate::message::Publishing::done(Ok("1:0:-1".to_owned()))
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
    fn a_prepared_message_carries_every_option_to_the_port() {
        let keep = Arc::new(Keep::default());
        let publisher = Publisher::new(keep.clone());
        let id = futures_lite_block_on(
            publisher
                .message(&Refund { id: 7 })
                .property("tenant", "acme")
                .key("card-7")
                .event_time(Duration::from_secs(5))
                .deliver_after(Duration::from_secs(30))
                .to("refunds-eu")
                .send(),
        )
        .expect("published");
        assert_eq!(id, "1:0:-1");
        let kept = keep.0.lock();
        let (topic, record) = &kept[0];
        assert_eq!(topic, "refunds-eu");
        assert_eq!(record.payload, b"{\"id\":7}");
        assert_eq!(
            record.headers,
            vec![("tenant".to_owned(), "acme".to_owned())]
        );
        assert_eq!(record.key.as_deref(), Some("card-7"));
        assert_eq!(record.event_time, Some(Duration::from_secs(5)));
        assert_eq!(record.deliver_after, Some(Duration::from_secs(30)));
        assert_eq!(record.deliver_at, None);
    }

    #[test]
    fn publishing_without_the_id_publishes_the_same_record_by_default() {
        let keep = Keep::default();
        let mut record = Record::new(b"{}".to_vec());
        record.key = Some("card-7".to_owned());
        futures_lite_block_on(keep.publish_without_id("refunds", record)).expect("published");
        let kept = keep.0.lock();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].0, "refunds");
        assert_eq!(kept[0].1.payload, b"{}");
        assert_eq!(kept[0].1.key.as_deref(), Some("card-7"));
    }

    /// Polls a future that completes at once (the test port never waits).
    fn futures_lite_block_on<F: core::future::Future>(future: F) -> F::Output {
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
