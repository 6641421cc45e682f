//! Every row of the completion table, on every subscription type.

use alloc::string::ToString;
use alloc::vec::Vec;
use core::time::Duration;

use super::*;
use crate::broker::machine::{Call, Settler};
use crate::{HandlerOutcome, Instant, SubscriptionType};

const SUB: &str = "refunds";
const TWO_MINUTES: Duration = Duration::from_secs(120);
const BACKOFF: Duration = Duration::from_secs(30);

fn at(secs: u64) -> Instant {
    Instant::from_elapsed(Duration::from_secs(secs))
}

fn settler(kind: SubscriptionType, ack_timeout: Option<Duration>) -> Settler<u32> {
    Settler::new(SubscriptionRules::new(SUB, kind, ack_timeout))
}

fn drain(s: &mut Settler<u32>, now: Instant) -> Vec<Call<u32>> {
    core::iter::from_fn(|| s.poll_call(now)).collect()
}

/// Both ack timeouts a subscription can have; the rows that do not involve `retry_after` must
/// not depend on it.
const ACK_TIMEOUTS: [Option<Duration>; 2] = [None, Some(TWO_MINUTES)];

#[test]
fn ack_acknowledges_at_once_on_every_type() {
    for kind in SubscriptionType::ALL {
        for timeout in ACK_TIMEOUTS {
            let mut s = settler(kind, timeout);
            let d = s.complete(7, HandlerOutcome::ack().into(), at(5)).unwrap();
            assert_eq!(d, Settlement::Ack, "{kind}");
            assert_eq!(drain(&mut s, at(5)), [Call::Ack(7)], "{kind}");
            assert_eq!(s.next_deadline(), None);
        }
    }
}

#[test]
fn drop_acknowledges_too_because_the_broker_has_no_reject() {
    for kind in SubscriptionType::ALL {
        for timeout in ACK_TIMEOUTS {
            let mut s = settler(kind, timeout);
            let d = s.complete(7, HandlerOutcome::drop().into(), at(5)).unwrap();
            assert_eq!(d, Settlement::Ack, "{kind}");
            assert_eq!(drain(&mut s, at(5)), [Call::Ack(7)], "{kind}");
        }
    }
}

#[test]
fn retry_negatively_acknowledges_at_once() {
    for kind in SubscriptionType::ALL {
        for timeout in ACK_TIMEOUTS {
            let mut s = settler(kind, timeout);
            let d = s
                .complete(7, HandlerOutcome::retry().into(), at(5))
                .unwrap();
            assert_eq!(d, Settlement::Nack, "{kind}");
            assert_eq!(drain(&mut s, at(5)), [Call::Nack(7)], "{kind}");
            assert_eq!(s.next_deadline(), None);
        }
    }
}

#[test]
fn retry_after_waits_exactly_the_delay_then_nacks() {
    for kind in SubscriptionType::ALL {
        for timeout in ACK_TIMEOUTS {
            let mut s = settler(kind, timeout);
            let d = s
                .complete(7, HandlerOutcome::retry_after(BACKOFF).into(), at(5))
                .unwrap();
            assert_eq!(d, Settlement::NackAt(at(35)), "{kind}");
            assert_eq!(s.waiting(), 1);
            assert_eq!(s.next_deadline(), Some(at(35)));
            let just_before = at(35).saturating_add(Duration::ZERO);
            let just_before = Instant::from_nanos(just_before.as_nanos() - 1);
            assert_eq!(drain(&mut s, just_before), [], "not a nanosecond early");
            assert_eq!(drain(&mut s, at(35)), [Call::Nack(7)], "{kind}");
            assert_eq!(s.waiting(), 0);
            assert_eq!(s.next_deadline(), None);
        }
    }
}

#[test]
fn retry_after_not_shorter_than_ack_timeout_is_refused_and_left_unsettled() {
    for kind in SubscriptionType::ALL {
        for delay in [
            TWO_MINUTES,
            TWO_MINUTES + Duration::from_millis(1),
            Duration::MAX,
        ] {
            let mut s = settler(kind, Some(TWO_MINUTES));
            let err = s
                .complete(7, HandlerOutcome::retry_after(delay).into(), at(5))
                .unwrap_err();
            assert_eq!(
                err,
                SettlementError::DelayNotShorterThanAckTimeout {
                    subscription: SUB.into(),
                    delay,
                    ack_timeout: TWO_MINUTES,
                }
            );
            assert_eq!(
                drain(&mut s, Instant::MAX),
                [],
                "no call for a refused delay"
            );
            assert_eq!(s.waiting(), 0);
        }
    }
    let err = settler(SubscriptionType::Shared, Some(TWO_MINUTES))
        .complete(1, HandlerOutcome::retry_after(TWO_MINUTES).into(), at(0))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "subscription `refunds`: the handler returned retry_after(120s), but the \
         subscription's ack_timeout is 120s, and a wait must be shorter than the ack timeout \
         (the client would redeliver the message first); the delivery is left unsettled and \
         comes back after the ack timeout. Return a delay shorter than 120s, or raise the \
         subscription's ack_timeout above 120s"
    );
}

#[test]
fn retry_after_just_under_the_ack_timeout_is_accepted() {
    let delay = TWO_MINUTES - Duration::from_nanos(1);
    let mut s = settler(SubscriptionType::Shared, Some(TWO_MINUTES));
    let d = s
        .complete(7, HandlerOutcome::retry_after(delay).into(), at(0))
        .unwrap();
    assert_eq!(d, Settlement::NackAt(Instant::ZERO + delay));
}

#[test]
fn without_ack_timeout_any_delay_is_accepted() {
    for kind in SubscriptionType::ALL {
        for delay in [
            Duration::ZERO,
            TWO_MINUTES,
            Duration::from_secs(86_400),
            Duration::MAX,
        ] {
            let mut s = settler(kind, None);
            let d = s
                .complete(7, HandlerOutcome::retry_after(delay).into(), at(5))
                .unwrap();
            assert_eq!(d, Settlement::NackAt(at(5) + delay), "{kind} {delay:?}");
        }
    }
}

#[test]
fn no_outcome_makes_no_call() {
    for kind in SubscriptionType::ALL {
        for timeout in ACK_TIMEOUTS {
            for completion in [Completion::Panicked, Completion::Rejected] {
                let mut s = settler(kind, timeout);
                let d = s.complete(7, completion, at(5)).unwrap();
                assert_eq!(d, Settlement::Leave, "{kind} {completion:?}");
                assert_eq!(drain(&mut s, Instant::MAX), []);
                assert_eq!(s.next_deadline(), None);
            }
        }
    }
}

#[test]
fn a_wait_cut_short_by_shutdown_yields_no_call() {
    let mut s = settler(SubscriptionType::Shared, Some(TWO_MINUTES));
    s.complete(1, HandlerOutcome::retry_after(BACKOFF).into(), at(0))
        .unwrap();
    s.complete(2, HandlerOutcome::ack().into(), at(1)).unwrap();
    s.complete(3, HandlerOutcome::retry_after(BACKOFF).into(), at(2))
        .unwrap();
    let mut abandoned: Vec<u32> = s.abandon_waits().collect();
    abandoned.sort_unstable();
    assert_eq!(abandoned, [1, 3]);
    assert_eq!(s.waiting(), 0);
    assert_eq!(s.next_deadline(), None);
    assert_eq!(
        drain(&mut s, Instant::MAX),
        [Call::Ack(2)],
        "queued immediate calls are still flushed"
    );
}

#[test]
fn delayed_nacks_come_out_in_deadline_order_then_completion_order() {
    let mut s = settler(SubscriptionType::KeyShared, None);
    let secs = Duration::from_secs;
    s.complete(1, HandlerOutcome::retry_after(secs(30)).into(), at(0))
        .unwrap();
    s.complete(2, HandlerOutcome::retry_after(secs(10)).into(), at(0))
        .unwrap();
    s.complete(3, HandlerOutcome::retry_after(secs(20)).into(), at(10))
        .unwrap();
    s.complete(4, HandlerOutcome::retry_after(secs(5)).into(), at(5))
        .unwrap();
    s.complete(5, HandlerOutcome::retry().into(), at(6))
        .unwrap();
    assert_eq!(s.next_deadline(), Some(at(10)));
    assert_eq!(drain(&mut s, at(9)), [Call::Nack(5)]);
    assert_eq!(
        drain(&mut s, at(10)),
        [Call::Nack(2), Call::Nack(4)],
        "two waits due at 10 s leave in the order they were completed"
    );
    assert_eq!(s.next_deadline(), Some(at(30)));
    assert_eq!(drain(&mut s, at(100)), [Call::Nack(1), Call::Nack(3)]);
}

#[test]
fn the_same_rules_hold_for_the_bare_decision() {
    let rules = SubscriptionRules::new(SUB, SubscriptionType::Shared, Some(TWO_MINUTES));
    assert_eq!(rules.subscription(), SUB);
    assert_eq!(rules.kind(), SubscriptionType::Shared);
    assert_eq!(rules.ack_timeout(), Some(TWO_MINUTES));
    assert_eq!(
        rules.settle(HandlerOutcome::ack().into(), at(0)),
        Ok(Settlement::Ack)
    );
    assert_eq!(
        rules.settle(Completion::Panicked, at(0)),
        Ok(Settlement::Leave)
    );
}

/// A copy confirmed on the retry or dead-letter topic is acknowledged; the outcome itself,
/// reaching the table, means there was no topic: refused with the values, nothing queued.
#[test]
fn moved_copies_are_acknowledged_and_outcomes_without_a_topic_refused() {
    for kind in SubscriptionType::ALL {
        for timeout in ACK_TIMEOUTS {
            for moved in [Completion::Rescheduled, Completion::DeadLettered] {
                let mut s = settler(kind, timeout);
                assert_eq!(s.complete(7, moved, at(5)), Ok(Settlement::Ack), "{kind}");
                assert_eq!(drain(&mut s, at(5)), [Call::Ack(7)], "{kind}");
            }
            let mut s = settler(kind, timeout);
            let later = s.complete(7, HandlerOutcome::retry_later(TWO_MINUTES).into(), at(5));
            assert_eq!(
                later,
                Err(SettlementError::NoRetryTopic {
                    subscription: SUB.into(),
                    delay: TWO_MINUTES,
                }),
                "{kind}"
            );
            let dead = s.complete(8, HandlerOutcome::dead_letter("poison").into(), at(5));
            assert_eq!(
                dead,
                Err(SettlementError::NoDeadLetterTopic {
                    subscription: SUB.into(),
                    reason: "poison",
                }),
                "{kind}"
            );
            assert!(drain(&mut s, at(5)).is_empty(), "{kind}: no call");
            assert_eq!(s.next_deadline(), None);
        }
    }
    let refused = SubscriptionRules::new(SUB, SubscriptionType::Shared, None)
        .settle(HandlerOutcome::retry_later(TWO_MINUTES).into(), at(0))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("retry_later(120s)"), "{refused}");
    assert!(refused.contains(".retry_topic("), "{refused}");
}
