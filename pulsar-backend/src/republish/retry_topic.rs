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

use std::time::Duration;

use ruststream::message::Message;
use ruststream_driver::port::Original;
use ruststream_pulsar_model::{reconsume_times, DELAY_TIME, RECONSUMETIMES};

/// The copy of `of` for the retry topic `topic`, to be delivered after `delay`, counting
/// `count` deliveries before it (the machine's `Republish::RetryTopic`).
pub(super) fn copy(topic: &str, of: Original<'_>, delay: Duration, count: u32) -> Message {
    let mut copy = Message::new(topic.to_owned(), of.payload.to_vec()).deliver_after(delay);
    copy.properties = copy_properties(&of, delay, count);
    copy.key = of.key.map(str::to_owned);
    copy.event_time = of.event_time;
    copy
}

/// How many times a message with `properties` was republished to a retry topic before (its
/// `RECONSUMETIMES`): what a consumer port tells the machine ([`Received::republished`]),
/// where the registration has a retry topic.
///
/// [`Received::republished`]: ruststream_driver::port::Received::republished
pub(crate) fn republished(properties: &[(String, String)]) -> u32 {
    reconsume_times(
        properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )
}

/// The original properties with `REAL_TOPIC` and `ORIGIN_MESSAGE_ID` added unless present,
/// and this copy's `RECONSUMETIMES` (`count`: the deliveries before it, the machine's one
/// attempt count plus this one) and `DELAY_TIME` in place of earlier ones.
fn copy_properties(of: &Original<'_>, delay: Duration, count: u32) -> Vec<(String, String)> {
    let mut properties = super::copy_properties(of, &[RECONSUMETIMES, DELAY_TIME]);
    properties.push((RECONSUMETIMES.to_owned(), count.to_string()));
    properties.push((DELAY_TIME.to_owned(), delay.as_millis().to_string()));
    properties
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};

    fn of(properties: &[(String, String)]) -> Original<'_> {
        Original {
            payload: b"{}",
            properties,
            topic: "persistent://public/default/refunds",
            id: &"7:3:-1",
            key: Some("card-1"),
            event_time: None,
            error: None,
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_first_copy_says_where_it_came_from_and_counts_one() {
        let original = pairs(&[("trace", "t1")]);
        assert_eq!(republished(&original), 0);
        assert_eq!(
            copy_properties(&of(&original), Duration::from_secs(3600), 1),
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
        let copy = pairs(&[
            (REAL_TOPIC, "persistent://public/default/first"),
            (ORIGIN_MESSAGE_ID, "1:2:-1"),
            (RECONSUMETIMES, "2"),
            (DELAY_TIME, "500"),
        ]);
        assert_eq!(republished(&copy), 2);
        assert_eq!(
            copy_properties(&of(&copy), Duration::from_millis(1500), 3),
            pairs(&[
                (REAL_TOPIC, "persistent://public/default/first"),
                (ORIGIN_MESSAGE_ID, "1:2:-1"),
                (RECONSUMETIMES, "3"),
                (DELAY_TIME, "1500"),
            ])
        );
    }
}
