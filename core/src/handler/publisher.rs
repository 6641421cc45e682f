//! Publishing from inside a handler.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{Extract, HandlerError};
use crate::boxed::BoxError;
use crate::message::{Headers, Incoming, Publish};
use crate::outgoing::Outgoing;

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
    pub async fn publish<T: Outgoing>(&self, value: &T) -> Result<String, BoxError> {
        let payload = value.encode().map_err(|e| Box::new(e) as BoxError)?;
        self.port.publish(T::TOPIC, payload, Vec::new(), None).await
    }

    /// Publish `value` as JSON to `topic`.
    pub async fn publish_to<T: serde::Serialize>(
        &self,
        topic: &str,
        value: &T,
    ) -> Result<String, BoxError> {
        let payload = serde_json::to_vec(value).map_err(|e| Box::new(e) as BoxError)?;
        self.port.publish(topic, payload, Vec::new(), None).await
    }

    /// Publish an encoded payload with headers and a key.
    pub async fn publish_raw(
        &self,
        topic: &str,
        payload: Vec<u8>,
        headers: Headers,
        key: Option<String>,
    ) -> Result<String, BoxError> {
        self.port.publish(topic, payload, headers, key).await
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
