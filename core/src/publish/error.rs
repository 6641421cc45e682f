//! Why a publish did not return a message id.

use alloc::string::String;

use crate::boxed::BoxError;
use crate::outgoing::EncodeError;

/// A message was not published, or its receipt never came.
///
/// Returned by every publish call: [`Publisher`](crate::Publisher) in a handler, the running
/// app, and the test harnesses. Match on it to tell a value the service cannot send (encoding,
/// topic name; retrying will not help) from a broker that did not take or confirm the message
/// (retrying may help, and may publish a duplicate).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The value could not be encoded; nothing was sent.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The broker does not accept the topic name as written; nothing was sent. The source
    /// names the rule it breaks and the forms that are accepted.
    #[error(transparent)]
    InvalidTopic(BoxError),
    /// The broker could not be reached, refused the message, or did not confirm it. The
    /// message may or may not be stored: a retry can publish it twice.
    #[error(
        "publishing to `{topic}` failed: {source}; the message may or may not be stored, so a \
         retry can publish it twice"
    )]
    Broker {
        /// The topic, as the broker resolved it.
        topic: String,
        /// What the broker or its client said.
        #[source]
        source: BoxError,
    },
    /// The broker refused the schema the message's producer declares (the topic has one it is
    /// not compatible with), or a batch declared two; nothing was sent, and sending again
    /// fails the same way.
    #[error("publishing to `{topic}` failed: {source}; nothing was sent")]
    Schema {
        /// The topic, as the broker resolved it.
        topic: String,
        /// What the broker or its client said, and what to change.
        #[source]
        source: BoxError,
    },
    /// A layer's [`publish`](crate::middleware::Layer::publish) hook refused the message;
    /// nothing was sent, and sending it again through the same layers fails the same way.
    #[error("a layer refused the message to `{topic}`: {source}; nothing was sent")]
    Refused {
        /// The topic, as the message named it.
        topic: String,
        /// Why the layer refused it.
        #[source]
        source: BoxError,
    },
    /// The broker refused to let the service's role publish to the topic (or look it up);
    /// nothing was sent, and sending again fails the same way until the role is granted it.
    #[error("publishing to `{topic}` failed: {source}; nothing was sent")]
    NotAuthorized {
        /// The topic, as the broker resolved it.
        topic: String,
        /// The operation refused, the role, and what to grant.
        #[source]
        source: BoxError,
    },
    /// The app has no broker to publish through.
    #[error("the app has no broker to publish through: add one with `with_broker`")]
    NoBroker,
    /// The publish ended before the broker answered: the app stopped or was killed, or the
    /// publish was dropped midway. The message may or may not be stored: a retry can publish it
    /// twice.
    #[error(
        "a publish ended before the broker answered (the app stopped, or the publish was \
         dropped); the message may or may not be stored"
    )]
    Abandoned,
    /// A batch named more than one topic; nothing was sent. A batch is one entry of one
    /// topic.
    #[error(
        "a batch goes to one topic, but its messages name `{first}` and `{other}`; publish one \
         batch per topic"
    )]
    MixedBatch {
        /// The first message's topic.
        first: String,
        /// Another topic named in the batch.
        other: String,
    },
}

impl PublishError {
    /// The broker did not take or confirm a message for `topic`, for `source`.
    pub fn broker(topic: impl Into<String>, source: impl Into<BoxError>) -> Self {
        PublishError::Broker {
            topic: topic.into(),
            source: source.into(),
        }
    }

    /// The broker refused the schema declared for `topic`, for `source`.
    pub fn schema(topic: impl Into<String>, source: impl Into<BoxError>) -> Self {
        PublishError::Schema {
            topic: topic.into(),
            source: source.into(),
        }
    }

    /// The broker refused to let the service's role publish to `topic`, for `source`.
    pub fn not_authorized(topic: impl Into<String>, source: impl Into<BoxError>) -> Self {
        PublishError::NotAuthorized {
            topic: topic.into(),
            source: source.into(),
        }
    }

    /// A layer refused the message to `topic`, for `source`.
    pub fn refused(topic: impl Into<String>, source: impl Into<BoxError>) -> Self {
        PublishError::Refused {
            topic: topic.into(),
            source: source.into(),
        }
    }

    /// `topic` is not a name the broker accepts, for `source`.
    pub fn invalid_topic(source: impl Into<BoxError>) -> Self {
        PublishError::InvalidTopic(source.into())
    }

    /// Whether publishing the same message again may succeed: only a broker failure (or a
    /// publish that ended before its answer) is worth retrying; the rest fail the same way
    /// every time.
    pub fn is_retryable(&self) -> bool {
        matches!(self, PublishError::Broker { .. } | PublishError::Abandoned)
    }
}

/// A copy keeps every field and each source error's text, not its type: one failed batch is
/// reported to each of its messages' waiters, and a source (`Box<dyn Error>`) cannot be
/// cloned.
impl Clone for PublishError {
    fn clone(&self) -> Self {
        use alloc::string::ToString;
        let text = |source: &BoxError| -> BoxError { source.to_string().into() };
        match self {
            PublishError::Encode(e) => PublishError::Encode(e.clone()),
            PublishError::InvalidTopic(source) => PublishError::InvalidTopic(text(source)),
            PublishError::Broker { topic, source } => PublishError::Broker {
                topic: topic.clone(),
                source: text(source),
            },
            PublishError::Schema { topic, source } => PublishError::Schema {
                topic: topic.clone(),
                source: text(source),
            },
            PublishError::Refused { topic, source } => PublishError::Refused {
                topic: topic.clone(),
                source: text(source),
            },
            PublishError::NotAuthorized { topic, source } => PublishError::NotAuthorized {
                topic: topic.clone(),
                source: text(source),
            },
            PublishError::NoBroker => PublishError::NoBroker,
            PublishError::Abandoned => PublishError::Abandoned,
            PublishError::MixedBatch { first, other } => PublishError::MixedBatch {
                first: first.clone(),
                other: other.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn a_broker_failure_names_the_topic_and_warns_of_duplicates() {
        let e = PublishError::broker("persistent://public/default/refunds", "connection closed");
        assert_eq!(
            e.to_string(),
            "publishing to `persistent://public/default/refunds` failed: connection closed; \
             the message may or may not be stored, so a retry can publish it twice"
        );
        assert!(e.is_retryable());
        assert!(core::error::Error::source(&e).is_some());
    }

    #[test]
    fn a_copy_reads_as_the_original() {
        let e = PublishError::broker("refunds", "connection closed");
        assert_eq!(e.clone().to_string(), e.to_string());
        let abandoned = PublishError::Abandoned;
        assert!(abandoned.is_retryable());
        assert_eq!(abandoned.clone().to_string(), abandoned.to_string());
    }

    #[test]
    fn an_encoding_failure_is_not_retryable_and_reads_as_the_encoder_said() {
        let encode = EncodeError::new::<u8>("JSON", "key must be a string");
        let e = PublishError::from(encode.clone());
        assert_eq!(e.to_string(), encode.to_string());
        assert!(!e.is_retryable());
    }
}
