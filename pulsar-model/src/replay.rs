//! What a replayed message carries: the copy of a dead-lettered message put back on the topic it
//! came from (`<service> dead-letter replay`).
//!
//! The copy keeps the payload, the key and the application's properties. The properties a
//! dead-letter step or a retry topic wrote are dropped, since they describe the message's stay
//! on the dead-letter topic and would mislead the handler that reads it again, or a second
//! dead-letter step, which keeps a `REAL_TOPIC` already present: those ruststream and
//! pulsar-rs write ([`REAL_TOPIC`], [`ORIGIN_MESSAGE_ID`], [`DEAD_LETTER_REASON`],
//! [`DEAD_LETTER_ERROR`]) and those of the Java client's retry letter topic
//! ([`RECONSUMETIMES`], [`DELAY_TIME`], [`REAL_SUBSCRIPTION`], [`ORIGIN_MESSAGE_IDY_TIME`]).
//! [`REPLAYED_FROM`] is added (replacing an older one, and the [`REDRIVEN_FROM`] of replays
//! before it had its name): the dead-letter topic and the id the message had there.

use crate::{
    DEAD_LETTER_ERROR, DEAD_LETTER_REASON, DELAY_TIME, ORIGIN_MESSAGE_ID, REAL_TOPIC,
    RECONSUMETIMES, REDRIVEN_FROM, REPLAYED_FROM,
};

/// The subscription a message of the Java client's retry letter topic is meant for.
pub const REAL_SUBSCRIPTION: &str = "REAL_SUBSCRIPTION";

/// A property the Java client writes on retry letter messages, under this exact name (a typo
/// of `ORIGIN_MESSAGE_ID` joined with `DELAY_TIME` in its source, kept for compatibility).
pub const ORIGIN_MESSAGE_IDY_TIME: &str = "ORIGIN_MESSAGE_IDY_TIME";

/// Every property a replayed copy leaves out: what the dead-letter step and the retry topic
/// wrote. [`REPLAYED_FROM`] is not among them; it is replaced.
pub const DEAD_LETTER_PROPERTIES: [&str; 8] = [
    REAL_TOPIC,
    ORIGIN_MESSAGE_ID,
    DEAD_LETTER_REASON,
    DEAD_LETTER_ERROR,
    RECONSUMETIMES,
    DELAY_TIME,
    REAL_SUBSCRIPTION,
    ORIGIN_MESSAGE_IDY_TIME,
];

/// The value of [`REPLAYED_FROM`] for the message `id` (`ledger:entry:partition[:index]`) of
/// the dead-letter topic `topic`: `topic@id`.
pub fn replayed_from(topic: &str, id: &str) -> String {
    let mut value = String::with_capacity(topic.len() + 1 + id.len());
    value.push_str(topic);
    value.push('@');
    value.push_str(id);
    value
}

/// The properties of the replayed copy of a dead-lettered message with `properties`: the
/// same, in the same order, without [`DEAD_LETTER_PROPERTIES`] and any older
/// [`REPLAYED_FROM`] (or [`REDRIVEN_FROM`]), then `REPLAYED_FROM = from` (see
/// [`replayed_from`]).
pub fn replayed_properties(properties: &[(String, String)], from: String) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = properties
        .iter()
        .filter(|(name, _)| {
            name != REPLAYED_FROM
                && name != REDRIVEN_FROM
                && !DEAD_LETTER_PROPERTIES.contains(&&**name)
        })
        .cloned()
        .collect();
    kept.push((REPLAYED_FROM.to_owned(), from));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_copy_drops_every_dead_letter_property_keeps_the_others_in_order_and_says_where_from() {
        let dead = pairs(&[
            ("trace", "t1"),
            (REAL_TOPIC, "persistent://public/default/refunds"),
            (ORIGIN_MESSAGE_ID, "7:3:-1:2"),
            (DEAD_LETTER_REASON, "out-of-attempts"),
            (DEAD_LETTER_ERROR, "processor timed out"),
            (RECONSUMETIMES, "3"),
            (DELAY_TIME, "60000"),
            (REAL_SUBSCRIPTION, "refunds"),
            (ORIGIN_MESSAGE_IDY_TIME, "7:3:-1:2"),
            ("source", "samples.jsonl:4"),
        ]);
        let from = replayed_from("persistent://public/default/refunds-dlq", "9:41:-1");
        assert_eq!(from, "persistent://public/default/refunds-dlq@9:41:-1");
        assert_eq!(
            replayed_properties(&dead, from),
            pairs(&[
                ("trace", "t1"),
                ("source", "samples.jsonl:4"),
                (
                    REPLAYED_FROM,
                    "persistent://public/default/refunds-dlq@9:41:-1"
                ),
            ])
        );
    }

    #[test]
    fn a_message_replayed_again_names_only_its_latest_dead_letter_topic() {
        let dead = pairs(&[
            (
                REPLAYED_FROM,
                "persistent://public/default/refunds-dlq@1:1:-1",
            ),
            ("k", "v"),
            (REAL_TOPIC, "persistent://public/default/refunds"),
        ]);
        let copy = replayed_properties(&dead, "dlq@2:5:-1".to_owned());
        assert_eq!(copy, pairs(&[("k", "v"), (REPLAYED_FROM, "dlq@2:5:-1")]));
    }

    #[test]
    fn a_message_replayed_before_the_property_had_its_name_loses_the_old_one() {
        let dead = pairs(&[(REDRIVEN_FROM, "dlq@1:1:-1"), ("k", "v")]);
        let copy = replayed_properties(&dead, "dlq@2:5:-1".to_owned());
        assert_eq!(copy, pairs(&[("k", "v"), (REPLAYED_FROM, "dlq@2:5:-1")]));
    }

    #[test]
    fn names_are_matched_exactly() {
        // Lower case, or a prefix, is an application's own property.
        let dead = pairs(&[("real_topic", "x"), ("REAL_TOPIC_OF_ORIGIN", "y")]);
        let copy = replayed_properties(&dead, "d@1:1:-1".to_owned());
        assert_eq!(copy.len(), 3);
    }
}
