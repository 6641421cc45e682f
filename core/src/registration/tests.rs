//! All 16 combinations of {limit, no limit} × {topic, no topic} × {four types}, with the texts,
//! for a handler that does not declare `dead_letter`, and a topic alone for one that does.

use alloc::string::{String, ToString};
use core::num::NonZeroU32;

use super::*;
use crate::SubscriptionType::{self, Exclusive, Failover, KeyShared, Shared};

const SUB: &str = "refunds";
const DLQ: &str = "refunds-dlq";

fn five() -> Option<NonZeroU32> {
    NonZeroU32::new(5)
}

/// What a combination must produce: the policy's two values, or the error's text.
fn check(
    kind: SubscriptionType,
    limit: Option<NonZeroU32>,
    topic: Option<&str>,
) -> Result<Option<(u32, String)>, String> {
    dead_letter_policy(SUB, kind, limit, topic, false)
        .map(|p| {
            p.map(|p| {
                let limit = p.max_redeliver_count().unwrap_or(0);
                (limit, p.dead_letter_topic().into())
            })
        })
        .map_err(|e| e.to_string())
}

fn missing_topic() -> String {
    "subscription `refunds` declares max_attempts(5) but no dead-letter topic, so a message \
     out of attempts would have nowhere to go: add `.dead_letter(\"<topic>\")` after \
     `.max_attempts(..)`, or remove `.max_attempts(..)`"
        .into()
}

fn uncounted(kind: &str) -> String {
    alloc::format!(
        "subscription `refunds` is {kind} and declares max_attempts(5), which would never be \
         reached: {kind} subscriptions keep no redelivery count (only Shared and KeyShared \
         count redeliveries); make the subscription Shared or KeyShared, declare a retry topic \
         (`.retry_topic(..)`, whose durable retries count on every type), or remove \
         `.max_attempts(..)`"
    )
}

#[test]
fn neither_step_gives_no_policy_on_every_type() {
    for kind in [Exclusive, Shared, Failover, KeyShared] {
        assert_eq!(check(kind, None, None), Ok(None), "{kind}");
    }
}

#[test]
fn both_steps_on_counted_types_give_the_policy() {
    for kind in [Shared, KeyShared] {
        assert_eq!(
            check(kind, five(), Some(DLQ)),
            Ok(Some((5, DLQ.into()))),
            "{kind}: max_redeliver_count is max_attempts"
        );
    }
}

#[test]
fn both_steps_on_uncounted_types_name_the_type() {
    assert_eq!(
        check(Exclusive, five(), Some(DLQ)),
        Err(uncounted("Exclusive"))
    );
    assert_eq!(
        check(Failover, five(), Some(DLQ)),
        Err(uncounted("Failover"))
    );
}

#[test]
fn a_limit_without_a_topic_names_the_missing_topic_or_the_type() {
    assert_eq!(check(Shared, five(), None), Err(missing_topic()));
    assert_eq!(check(KeyShared, five(), None), Err(missing_topic()));
    // On a type without a count the limit itself is the mistake: adding a topic would not fix it.
    assert_eq!(check(Exclusive, five(), None), Err(uncounted("Exclusive")));
    assert_eq!(check(Failover, five(), None), Err(uncounted("Failover")));
}

/// A topic alone, for a handler that does not declare `dead_letter`, is a missing limit.
#[test]
fn a_topic_without_a_limit_names_the_missing_limit() {
    for kind in [Exclusive, Shared, Failover, KeyShared] {
        assert_eq!(
            check(kind, None, Some(DLQ)),
            Err(
                "subscription `refunds` declares dead_letter(\"refunds-dlq\") but no \
                 max_attempts, so no message would ever run out of attempts and reach it: add \
                 `.max_attempts(<n>)` before `.dead_letter(..)`; or, if the topic is for the \
                 messages the handler dead-letters itself, declare \
                 `#[subscriber(.., dead_letter)]` on the handler; or remove `.dead_letter(..)`"
                    .into()
            ),
            "{kind}"
        );
    }
}

/// A topic alone is for what a handler that declares `dead_letter` dead-letters itself and
/// for undecodable payloads: valid on every type, as it needs no count.
#[test]
fn a_topic_without_a_limit_is_a_policy_without_a_limit_on_every_type() {
    for kind in [Exclusive, Shared, Failover, KeyShared] {
        let policy = dead_letter_policy(SUB, kind, None, Some(DLQ), true)
            .unwrap()
            .unwrap();
        assert_eq!(policy.max_attempts(), None);
    }
}

#[test]
fn errors_carry_their_values() {
    assert_eq!(
        dead_letter_policy(SUB, Failover, five(), Some(DLQ), false),
        Err(RegistrationError::LimitOnUncountedType {
            subscription: SUB.into(),
            kind: Failover,
            max_attempts: NonZeroU32::new(5).unwrap(),
        })
    );
    let policy = dead_letter_policy(SUB, Shared, NonZeroU32::new(1), Some(DLQ), false)
        .unwrap()
        .unwrap();
    assert_eq!(policy.max_attempts(), NonZeroU32::new(1));
    assert_eq!(policy.dead_letter_topic(), DLQ);
}
