//! Moving a message that ran out of attempts to the dead-letter topic, one message at a time.
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
//! - a payload that does not decode goes at once when a dead-letter topic is declared: no
//!   retry can make it decode;
//! - the copy keeps payload, properties and key, and adds `REAL_TOPIC` (the topic it came from,
//!   fully qualified) and `ORIGIN_MESSAGE_ID` (`ledger:entry:partition`, plus `:index` for a
//!   message of a batch), unless already present, as pulsar-rs writes them;
//! - the original is acknowledged only after the broker confirmed the copy; if publishing
//!   fails, the delivery is left unsettled and comes back (after the ack timeout, or when the
//!   consumer reconnects), so nothing is lost.

use std::sync::Arc;

use ruststream::handler::Publish;
use ruststream::message::Message;
use ruststream::{MessageId, PublishError};
use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};

use super::Received;

/// A subscription's dead-letter step: where to, and after how many attempts.
#[derive(Clone)]
pub(crate) struct DeadLetter {
    pub(crate) max_attempts: u32,
    /// Fully qualified.
    pub(crate) topic: Arc<str>,
    pub(crate) publisher: Arc<dyn Publish>,
}

impl DeadLetter {
    /// Publish the copy of `received` and wait for the broker's receipt.
    pub(crate) async fn publish<Id: std::fmt::Display>(
        &self,
        received: &Received<Id>,
    ) -> Result<MessageId, PublishError> {
        let mut copy = Message::new(self.topic.to_string(), received.payload.to_vec());
        copy.properties = copy_properties(received);
        copy.key = received.key.clone();
        copy.event_time = received.event_time;
        self.publisher.publish(copy).await
    }
}

/// The original properties plus `REAL_TOPIC` and `ORIGIN_MESSAGE_ID`, unless already present
/// (a message dead-lettered twice keeps where it first came from).
fn copy_properties<Id: std::fmt::Display>(received: &Received<Id>) -> Vec<(String, String)> {
    let mut properties = received.properties.to_vec();
    for (name, value) in [
        (REAL_TOPIC, received.topic.to_string()),
        (ORIGIN_MESSAGE_ID, received.id.to_string()),
    ] {
        if !properties.iter().any(|(k, _)| k == name) {
            properties.push((name.to_owned(), value));
        }
    }
    properties
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }

    #[test]
    fn the_copy_adds_where_it_came_from() {
        let properties = copy_properties(&received(vec![("trace".into(), "t1".into())]));
        assert_eq!(
            properties,
            [
                ("trace".to_owned(), "t1".to_owned()),
                (
                    REAL_TOPIC.to_owned(),
                    "persistent://public/default/refunds".to_owned()
                ),
                (ORIGIN_MESSAGE_ID.to_owned(), "7:3:-1:2".to_owned()),
            ]
        );
    }

    #[test]
    fn the_copy_keeps_existing_system_properties() {
        let properties = copy_properties(&received(vec![(REAL_TOPIC.into(), "first".into())]));
        assert_eq!(properties[0], (REAL_TOPIC.to_owned(), "first".to_owned()));
        assert_eq!(properties.len(), 2);
    }
}
