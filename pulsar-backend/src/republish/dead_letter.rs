//! The copy of a message for the dead-letter topic: out of attempts, not decodable, or
//! dead-lettered by its handler (`HandlerOutcome::dead_letter`).
//!
//! pulsar-rs 6.9 has a dead-letter policy of its own, but it decides per entry: at the limit it
//! publishes every message of a batched entry, siblings the handler acknowledged included
//! (`consumer/engine.rs`, `process_payload`). So the framework does this step itself, with the
//! same rule and the same copy, and settles the message like any other acknowledgement (a
//! batched one through the entry ledger, so the entry is acknowledged only once all of it is
//! settled). The subscription machine decides when (`Settlement::Republish`); the driver
//! publishes the copy written here, and the machine acknowledges the original once the broker
//! confirmed the copy, or leaves it unsettled (it comes back) if publishing failed:
//!
//! - a delivery whose redelivery count is at least `max_attempts` is not handed to the handler
//!   (pulsar-rs's rule `redelivery_count >= max_redeliver_count`, which lets the handler see a
//!   message exactly `max_attempts` times): the machine decides it (`Admission::DeadLetter`);
//! - a payload that does not decode, or a message the client cannot read
//!   (`Rejection::Unreadable`), goes at once when a dead-letter topic is declared: no
//!   retry can make it decode;
//! - a handler's `dead_letter(reason)` goes at once, whatever its attempts;
//! - the copy keeps payload, properties and key, and adds `REAL_TOPIC` (the topic it came from,
//!   fully qualified) and `ORIGIN_MESSAGE_ID` (`ledger:entry:partition`, plus `:index` for a
//!   message of a batch), unless already present, as pulsar-rs writes them; and
//!   `DEAD_LETTER_REASON` (the handler's reason, or `out-of-attempts`, `undecodable`) with
//!   `DEAD_LETTER_ERROR` (the error that came with it, if any), replacing earlier ones.

use ruststream::message::Message;
use ruststream_driver::port::Original;
use ruststream_pulsar_model::{DEAD_LETTER_ERROR, DEAD_LETTER_REASON};

/// The copy of `of` for the dead-letter topic `topic`, saying why (`reason`).
pub(super) fn copy(topic: &str, of: Original<'_>, reason: &'static str) -> Message {
    let mut copy = Message::new(topic.to_owned(), of.payload.to_vec());
    copy.properties = copy_properties(&of, reason);
    copy.key = of.key.map(str::to_owned);
    copy.event_time = of.event_time;
    copy
}

/// The original properties plus `REAL_TOPIC` and `ORIGIN_MESSAGE_ID`, unless already present
/// (a message dead-lettered twice keeps where it first came from), and this time's
/// `DEAD_LETTER_REASON` and `DEAD_LETTER_ERROR` in place of earlier ones.
fn copy_properties(of: &Original<'_>, reason: &str) -> Vec<(String, String)> {
    let mut properties = super::copy_properties(of, &[DEAD_LETTER_REASON, DEAD_LETTER_ERROR]);
    properties.push((DEAD_LETTER_REASON.to_owned(), reason.to_owned()));
    if let Some(error) = of.error {
        properties.push((DEAD_LETTER_ERROR.to_owned(), error.to_owned()));
    }
    properties
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream_pulsar_model::{ORIGIN_MESSAGE_ID, REAL_TOPIC};

    fn of<'a>(properties: &'a [(String, String)], error: Option<&'a str>) -> Original<'a> {
        Original {
            payload: b"{}",
            properties,
            topic: "persistent://public/default/refunds",
            id: &"7:3:-1:2",
            key: Some("card-1"),
            event_time: None,
            error,
        }
    }

    const OUT: &str = ruststream::completion::OUT_OF_ATTEMPTS;

    #[test]
    fn the_copy_adds_where_it_came_from_and_why() {
        let given = vec![("trace".into(), "t1".into())];
        let properties = copy_properties(&of(&given, None), OUT);
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
        let properties =
            copy_properties(&of(&earlier, Some("card 4111 declined")), "card-declined");
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
        let given = vec![(REAL_TOPIC.into(), "first".into())];
        let properties = copy_properties(&of(&given, None), OUT);
        assert_eq!(properties[0], (REAL_TOPIC.to_owned(), "first".to_owned()));
        assert_eq!(properties.len(), 3);
    }
}
