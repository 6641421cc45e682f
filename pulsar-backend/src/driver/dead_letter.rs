//! Moving a message to the dead-letter topic, one message at a time: out of attempts, not
//! decodable, or dead-lettered by its handler (`HandlerOutcome::dead_letter`).
//!
//! pulsar-rs 6.9 has a dead-letter policy of its own, but it decides per entry: at the limit it
//! publishes every message of a batched entry, siblings the handler acknowledged included
//! (`consumer/engine.rs`, `process_payload`). So the framework does this step itself, with the
//! same rule and the same copy, and settles the message like any other acknowledgement (a
//! batched one through the entry ledger, so the entry is acknowledged only once all of it is
//! settled):
//!
//! - a delivery whose redelivery count is at least `max_attempts` is not handed to the handler
//!   (pulsar-rs's rule `redelivery_count >= max_redeliver_count`, which lets the handler see a
//!   message exactly `max_attempts` times): the subscription machine decides it
//!   (`Admission::DeadLetter`);
//! - a payload that does not decode, or a message the client cannot read
//!   (`Rejection::Unreadable`), goes at once when a dead-letter topic is declared: no
//!   retry can make it decode;
//! - a handler's `dead_letter(reason)` goes at once, whatever its attempts;
//! - the copy keeps payload, properties and key, and adds `REAL_TOPIC` (the topic it came from,
//!   fully qualified) and `ORIGIN_MESSAGE_ID` (`ledger:entry:partition`, plus `:index` for a
//!   message of a batch), unless already present, as pulsar-rs writes them; and
//!   `DEAD_LETTER_REASON` (the handler's reason, or `out-of-attempts`, `undecodable`) with
//!   `DEAD_LETTER_ERROR` (the error that came with it, if any), replacing earlier ones;
//! - the original is acknowledged only after the broker confirmed the copy; if publishing
//!   fails, the delivery is left unsettled and comes back (after the ack timeout, or when the
//!   consumer reconnects), so nothing is lost.

use std::sync::Arc;

use ruststream::completion::Completion;
use ruststream::handler::Publish;
use ruststream::message::Message;
use ruststream::{MessageId, PublishError};
use ruststream_pulsar_model::{DEAD_LETTER_ERROR, DEAD_LETTER_REASON};

use super::{report, Received};

/// Why a message is dead-lettered, as its copy says.
pub(crate) struct Why<'a> {
    /// `DEAD_LETTER_REASON`.
    pub(crate) reason: &'static str,
    /// `DEAD_LETTER_ERROR`, when an error came with it.
    pub(crate) error: Option<&'a (dyn std::error::Error + Send + Sync)>,
}

/// The reason of a message that came back once more than `max_attempts` allows.
pub(crate) const OUT_OF_ATTEMPTS: &str = "out-of-attempts";

/// The reason of a message whose payload does not decode, or that the client cannot read.
pub(crate) const UNDECODABLE: &str = "undecodable";

/// A subscription's dead-letter step: where to, and after how many attempts, if a limit was
/// declared.
#[derive(Clone)]
pub(crate) struct DeadLetter {
    pub(crate) max_attempts: Option<u32>,
    /// Fully qualified.
    pub(crate) topic: Arc<str>,
    pub(crate) publisher: Arc<dyn Publish>,
}

impl DeadLetter {
    /// Publish the copy of `received` and wait for the broker's receipt.
    pub(crate) async fn publish<Id: std::fmt::Display>(
        &self,
        received: &Received<Id>,
        why: &Why<'_>,
    ) -> Result<MessageId, PublishError> {
        let mut copy = Message::new(self.topic.to_string(), received.payload.to_vec());
        copy.properties = copy_properties(received, why);
        copy.key = received.key.clone();
        copy.event_time = received.event_time;
        self.publisher.publish(copy).await
    }
}

/// The original properties plus `REAL_TOPIC` and `ORIGIN_MESSAGE_ID`, unless already present
/// (a message dead-lettered twice keeps where it first came from), and this time's
/// `DEAD_LETTER_REASON` and `DEAD_LETTER_ERROR` in place of earlier ones.
fn copy_properties<Id: std::fmt::Display>(
    received: &Received<Id>,
    why: &Why<'_>,
) -> Vec<(String, String)> {
    let mut properties = received.copy_properties(&[DEAD_LETTER_REASON, DEAD_LETTER_ERROR]);
    properties.push((DEAD_LETTER_REASON.to_owned(), why.reason.to_owned()));
    if let Some(error) = why.error {
        properties.push((DEAD_LETTER_ERROR.to_owned(), error.to_string()));
    }
    properties
}

/// Publish `received` to the dead-letter topic; acknowledged once the broker confirmed the
/// copy, left unsettled (it comes back) if publishing failed.
pub(super) async fn move_out<Id: std::fmt::Display>(
    dead_letter: &DeadLetter,
    received: &Received<Id>,
    why: Why<'_>,
    (span, handler): (&tracing::Span, &'static str),
) -> Completion {
    let published = dead_letter.publish(received, &why).await;
    let _context = report::context(span, handler, &received.topic, &received.id);
    match published {
        Ok(copy) => {
            tracing::warn!(
                reason = why.reason,
                dead_letter_topic = %dead_letter.topic,
                copy_id = %copy,
                "moved to the dead-letter topic"
            );
            Completion::DeadLettered
        }
        Err(error) => {
            tracing::error!(
                %error,
                dead_letter_topic = %dead_letter.topic,
                "could not publish to the dead-letter topic; the delivery is left \
                 unacknowledged and comes back"
            );
            Completion::Rejected
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};

    fn received(properties: Vec<(String, String)>) -> Received<&'static str> {
        Received {
            id: "7:3:-1:2",
            payload: super::super::Payload::Owned(b"{}".to_vec()),
            properties: crate::driver::Properties::Owned(properties),
            topic: "persistent://public/default/refunds".into(),
            key: Some("card-1".into()),
            redelivery_count: Some(5),
            batch: None,
            publish_time: None,
            event_time: None,
            unusual: None,
        }
    }

    const OUT: Why<'static> = Why {
        reason: OUT_OF_ATTEMPTS,
        error: None,
    };

    #[test]
    fn the_copy_adds_where_it_came_from_and_why() {
        let properties = copy_properties(&received(vec![("trace".into(), "t1".into())]), &OUT);
        assert_eq!(
            properties,
            [
                ("trace".to_owned(), "t1".to_owned()),
                (
                    REAL_TOPIC.to_owned(),
                    "persistent://public/default/refunds".to_owned()
                ),
                (ORIGIN_MESSAGE_ID.to_owned(), "7:3:-1:2".to_owned()),
                (DEAD_LETTER_REASON.to_owned(), "out-of-attempts".to_owned()),
            ]
        );
    }

    #[test]
    fn the_reason_and_error_replace_earlier_ones() {
        let earlier = vec![
            (DEAD_LETTER_REASON.to_owned(), "undecodable".to_owned()),
            (DEAD_LETTER_ERROR.to_owned(), "expected `,`".to_owned()),
        ];
        let error = std::io::Error::other("card 4111 declined");
        let why = Why {
            reason: "card-declined",
            error: Some(&error),
        };
        let properties = copy_properties(&received(earlier), &why);
        assert_eq!(
            properties[2..],
            [
                (DEAD_LETTER_REASON.to_owned(), "card-declined".to_owned()),
                (
                    DEAD_LETTER_ERROR.to_owned(),
                    "card 4111 declined".to_owned()
                ),
            ]
        );
        assert_eq!(properties.len(), 4, "{properties:?}");
    }

    #[test]
    fn the_copy_keeps_existing_system_properties() {
        let properties =
            copy_properties(&received(vec![(REAL_TOPIC.into(), "first".into())]), &OUT);
        assert_eq!(properties[0], (REAL_TOPIC.to_owned(), "first".to_owned()));
        assert_eq!(properties.len(), 3);
    }
}
