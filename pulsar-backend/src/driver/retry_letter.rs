//! Republishing a message to the retry topic, for a durable `retry_later(d)`.
//!
//! The wait of `retry_after` is kept in the service: a crash loses it (the message then comes
//! back at once), and it must end before the ack timeout. `retry_later` hands the wait to the
//! broker instead, the way the Java client's `reconsumeLater` does:
//!
//! - the copy goes to the registration's retry topic with the broker's delayed delivery
//!   (`deliver_after(d)`: delivered no earlier than `d` after it is stored), keeping payload,
//!   key, event time and properties, and adds the Java client's properties: `REAL_TOPIC` and
//!   `ORIGIN_MESSAGE_ID` (unless present: a copy of a copy keeps where it first came from),
//!   `RECONSUMETIMES` and `DELAY_TIME` (milliseconds). `RECONSUMETIMES` carries the one
//!   attempt count: every delivery before the copy's, however the message came back (nacks,
//!   ack timeouts, earlier copies), where the Java client counts only its `reconsumeLater`
//!   calls (apache/pulsar #9047); a Java consumer reading it sees at least its own count;
//! - the original is acknowledged only after the broker confirmed the copy. A crash before
//!   that leaves the original unacknowledged, so it comes back: a duplicate is possible
//!   (the copy may have been stored), a loss is not;
//! - the subscription reads the retry topic too, so the copy reaches the same handler, with
//!   `RECONSUMETIMES` added to the broker's redelivery count: one attempt count, which
//!   `max_attempts` limits and the handler's `RedeliveryCount` shows.

use std::sync::Arc;
use std::time::Duration;

use ruststream::message::Message;
use ruststream_pulsar_model::{reconsume_times, DELAY_TIME, RECONSUMETIMES};

use super::Received;

/// A subscription's retry topic.
#[derive(Clone)]
pub(crate) struct RetryLetter {
    /// Fully qualified.
    pub(crate) topic: Arc<str>,
}

impl RetryLetter {
    /// The copy of `received` for the retry topic, to be delivered after `delay`, counting
    /// `count` deliveries before it (the machine's `Republish::RetryTopic`).
    pub(crate) fn copy<Id: std::fmt::Display>(
        &self,
        received: &Received<Id>,
        delay: Duration,
        count: u32,
    ) -> Message {
        let mut copy =
            Message::new(self.topic.to_string(), received.payload.to_vec()).deliver_after(delay);
        copy.properties = copy_properties(received, delay, count);
        copy.key = received.key.clone();
        copy.event_time = received.event_time;
        copy
    }
}

/// How many times `received` was republished to a retry topic before (its `RECONSUMETIMES`).
pub(crate) fn republished<Id>(received: &Received<Id>) -> u32 {
    reconsume_times(
        received
            .properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )
}

/// The original properties with `REAL_TOPIC` and `ORIGIN_MESSAGE_ID` added unless present,
/// and this copy's `RECONSUMETIMES` (`count`: the deliveries before it, the machine's one
/// attempt count plus this one) and `DELAY_TIME` in place of earlier ones.
fn copy_properties<Id: std::fmt::Display>(
    received: &Received<Id>,
    delay: Duration,
    count: u32,
) -> Vec<(String, String)> {
    let mut properties = received.copy_properties(&[RECONSUMETIMES, DELAY_TIME]);
    properties.push((RECONSUMETIMES.to_owned(), count.to_string()));
    properties.push((DELAY_TIME.to_owned(), delay.as_millis().to_string()));
    properties
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};

    fn received(properties: Vec<(String, String)>, count: u32) -> Received<&'static str> {
        Received {
            id: "7:3:-1",
            payload: super::super::Payload::Owned(b"{}".to_vec()),
            properties: crate::driver::Properties::Owned(properties),
            topic: "persistent://public/default/refunds".into(),
            key: Some("card-1".into()),
            redelivery_count: Some(count),
            batch: None,
            publish_time: None,
            event_time: None,
            unusual: None,
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_first_copy_says_where_it_came_from_and_counts_one() {
        let original = received(pairs(&[("trace", "t1")]), 0);
        assert_eq!(republished(&original), 0);
        assert_eq!(
            copy_properties(&original, Duration::from_secs(3600), 1),
            pairs(&[
                ("trace", "t1"),
                (REAL_TOPIC, "persistent://public/default/refunds"),
                (ORIGIN_MESSAGE_ID, "7:3:-1"),
                (RECONSUMETIMES, "1"),
                (DELAY_TIME, "3600000"),
            ])
        );
    }

    #[test]
    fn a_copy_of_a_copy_keeps_its_origin_and_counts_on() {
        // Its third delivery: the driver counted the 2 copies, the broker none.
        let copy = received(
            pairs(&[
                (REAL_TOPIC, "persistent://public/default/first"),
                (ORIGIN_MESSAGE_ID, "1:2:-1"),
                (RECONSUMETIMES, "2"),
                (DELAY_TIME, "500"),
            ]),
            2,
        );
        assert_eq!(republished(&copy), 2);
        assert_eq!(
            copy_properties(&copy, Duration::from_millis(1500), 3),
            pairs(&[
                (REAL_TOPIC, "persistent://public/default/first"),
                (ORIGIN_MESSAGE_ID, "1:2:-1"),
                (RECONSUMETIMES, "3"),
                (DELAY_TIME, "1500"),
            ])
        );
    }

    #[test]
    fn nacks_and_ack_timeouts_before_the_copy_count_too() {
        let nacked_twice = received(Vec::new(), 2);
        let properties = copy_properties(&nacked_twice, Duration::from_secs(1), 3);
        assert_eq!(properties[2], (RECONSUMETIMES.to_owned(), "3".to_owned()));
    }
}
