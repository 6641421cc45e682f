//! pulsar-rs's client-side dead-letter policy.
//!
//! pulsar-rs checks every message the broker sends before handing it to the application
//! (`src/consumer/engine.rs`, `ConsumerEngine::process_payload`): when the broker's
//! `redelivery_count` is present and `redelivery_count >= max_redeliver_count`, it publishes a
//! copy to the dead-letter topic (original payload, partition key and properties, plus
//! [`REAL_TOPIC`] and [`ORIGIN_MESSAGE_ID`] unless already present), waits for the publish
//! receipt, acknowledges the original, and the application never sees that delivery. The broker
//! leaves `redelivery_count` out of the command when it is 0 (`Commands.newMessageCommand` sets
//! it only if `> 0`), so a first delivery is never dead-lettered, even with a limit of 0.

use std::collections::BTreeMap;

use crate::{MessageId, OutgoingMessage, StoredMessage, TopicName, TopicNameError};

/// The property naming the topic a dead-lettered message came from (pulsar-rs
/// `SYSTEM_PROPERTY_REAL_TOPIC`).
pub const REAL_TOPIC: &str = "REAL_TOPIC";

/// The property holding a dead-lettered message's id in its original topic, written
/// `ledger:entry:partition`, or `ledger:entry:partition:index` for a message of a batch
/// (pulsar-rs `SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID`).
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";

/// The property ruststream adds to every dead-lettered copy, saying why it was dead-lettered:
/// the reason a handler gave `HandlerOutcome::dead_letter`, or `out-of-attempts` or
/// `undecodable` when the framework decided. Stable words, so that an operator can filter on
/// them (a replay's `--filter DEAD_LETTER_REASON=card-declined`). No Pulsar client writes it.
pub const DEAD_LETTER_REASON: &str = "DEAD_LETTER_REASON";

/// The property holding the text of the error a handler returned with its dead-letter
/// outcome, when it returned one (the reason's detail: `Answer::because`).
pub const DEAD_LETTER_ERROR: &str = "DEAD_LETTER_ERROR";

/// The property a replayed message carries: the dead-letter topic and the id it had there,
/// `topic@ledger:entry:partition[:index]`, so that a message replayed twice can be told.
pub const REPLAYED_FROM: &str = "REPLAYED_FROM";

/// [`REPLAYED_FROM`]'s name before `dead-letter replay` had its name: messages replayed then
/// carry it. A replay drops it as it drops [`REPLAYED_FROM`], and writes the new name.
pub const REDRIVEN_FROM: &str = "REDRIVEN_FROM";

/// A consumer's dead-letter policy, as pulsar-rs's `DeadLetterPolicy` (`src/consumer/data.rs`)
/// with the topic already resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterPolicy {
    /// A delivery whose redelivery count is at least this is dead-lettered instead of handed
    /// over; with ruststream's `max_attempts(n)` it is `n`, so the application sees a message
    /// `n` times.
    pub max_redeliver_count: u32,
    /// Where such a message is published.
    pub dead_letter_topic: TopicName,
}

impl DeadLetterPolicy {
    /// The client-side policy a ruststream registration declared, with its topic resolved as
    /// Pulsar would; `None` for a registration without an attempt limit (its topic takes only
    /// what the framework itself moves there, which no client-side policy does).
    pub fn from_registration(
        policy: &ruststream::DeadLetterPolicy,
    ) -> Result<Option<DeadLetterPolicy>, TopicNameError> {
        let Some(max_redeliver_count) = policy.max_redeliver_count() else {
            return Ok(None);
        };
        Ok(Some(DeadLetterPolicy {
            max_redeliver_count,
            dead_letter_topic: policy.dead_letter_topic().parse()?,
        }))
    }

    /// Whether pulsar-rs would dead-letter a delivery that the broker sent with this count.
    pub fn applies_to(&self, redelivery_count: u32) -> bool {
        redelivery_count > 0 && redelivery_count >= self.max_redeliver_count
    }
}

/// The copy pulsar-rs publishes to the dead-letter topic. `REAL_TOPIC` is the topic string the
/// consumer was built with (pulsar-rs does not expand names); the model's consumers always
/// hold a resolved name, as the real backend must pass to pulsar-rs, so it is the full name.
pub(crate) fn dead_letter_copy(
    message: &StoredMessage,
    source: &TopicName,
    id: MessageId,
) -> OutgoingMessage {
    let mut properties: BTreeMap<String, String> = message.properties().to_map();
    properties
        .entry(REAL_TOPIC.to_owned())
        .or_insert_with(|| source.to_string());
    properties
        .entry(ORIGIN_MESSAGE_ID.to_owned())
        .or_insert_with(|| id.to_string());
    OutgoingMessage {
        payload: message.payload().to_vec(),
        properties: properties.into(),
        key: message.key.clone(),
        event_time: message.event_time,
        deliver_at: None,
        // A copy, written without a schema (pulsar-rs's dead-letter producer declares none).
        schema: None,
        // The model's client-side policy copies what it received, one chunk at a time.
        chunk: None,
        unreadable: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::num::NonZeroU32;
    use ruststream::{Instant, SubscriptionType};

    #[test]
    fn only_counted_redeliveries_at_the_limit_apply() {
        let p = DeadLetterPolicy {
            max_redeliver_count: 3,
            dead_letter_topic: "dlq".parse().unwrap(),
        };
        assert!(!p.applies_to(0));
        assert!(!p.applies_to(2));
        assert!(p.applies_to(3));
        assert!(p.applies_to(4));
        let zero = DeadLetterPolicy {
            max_redeliver_count: 0,
            ..p
        };
        assert!(!zero.applies_to(0), "count 0 is not sent, so never matches");
        assert!(zero.applies_to(1));
    }

    #[test]
    fn copy_keeps_existing_system_properties() {
        let source: TopicName = "refunds".parse().unwrap();
        let id = MessageId {
            ledger_id: 3,
            entry_id: 4,
            partition: -1,
            batch_index: None,
        };
        let stored = StoredMessage {
            id,
            content: std::sync::Arc::new(crate::Content::new(
                b"x".to_vec(),
                BTreeMap::from([(REAL_TOPIC.to_owned(), "elsewhere".to_owned())]).into(),
            )),
            key: Some("k".into()),
            publish_time: Instant::ZERO,
            batch_size: None,
            event_time: Some(std::time::Duration::from_secs(7)),
            deliver_at: None,
        };
        let copy = dead_letter_copy(&stored, &source, id);
        assert_eq!(
            copy.event_time,
            Some(std::time::Duration::from_secs(7)),
            "kept"
        );
        assert_eq!(copy.properties[REAL_TOPIC], "elsewhere");
        assert_eq!(copy.properties[ORIGIN_MESSAGE_ID], "3:4:-1");
        assert_eq!(copy.key.as_deref(), Some("k"));
        assert_eq!(copy.payload, b"x");
    }

    #[test]
    fn from_registration_resolves_the_topic() {
        let declared = ruststream::dead_letter_policy(
            "refunds",
            SubscriptionType::Shared,
            NonZeroU32::new(5),
            Some("refunds-dlq"),
            false,
        )
        .unwrap()
        .unwrap();
        let p = DeadLetterPolicy::from_registration(&declared)
            .unwrap()
            .unwrap();
        assert_eq!(p.max_redeliver_count, 5);
        assert_eq!(
            p.dead_letter_topic.as_str(),
            "persistent://public/default/refunds-dlq"
        );
        let topic_only = ruststream::dead_letter_policy(
            "refunds",
            SubscriptionType::Shared,
            None,
            Some("dlq"),
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            DeadLetterPolicy::from_registration(&topic_only),
            Ok(None),
            "no limit: no client-side policy"
        );
    }
}
