//! The subscription machine on its own: no executor, no clock, no broker.

extern crate std;

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::num::NonZeroU32;
use core::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::publish::{Origin, Token};
use crate::HandlerOutcome;

/// A message id as a test transport makes it: its entry and its index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Msg {
    entry: u64,
    index: u32,
}

fn entry_of(id: &Msg) -> EntryPosition {
    EntryPosition {
        ledger: 1,
        entry: id.entry,
        partition: -1,
    }
}

fn at(ms: u64) -> Instant {
    Instant::from_elapsed(Duration::from_millis(ms))
}

fn machine(
    kind: SubscriptionType,
    ack_timeout: Option<Duration>,
    config: MachineConfig,
) -> SubscriptionMachine<Msg, Msg> {
    SubscriptionMachine::new(
        SubscriptionRules::new("s", kind, ack_timeout),
        config,
        entry_of,
    )
}

fn slot(id: Msg, size: u32) -> Option<BatchSlot> {
    (size > 1).then(|| BatchSlot {
        entry: entry_of(&id),
        index: id.index,
        size: NonZeroU32::new(size).unwrap(),
    })
}

fn calls(m: &mut SubscriptionMachine<Msg, Msg>, now: Instant) -> Vec<Call<Msg>> {
    core::iter::from_fn(|| m.poll_call(now)).collect()
}

/// Finish `id` (of an entry of `size`) with `outcome` at `now`.
fn finish(
    m: &mut SubscriptionMachine<Msg, Msg>,
    id: Msg,
    size: u32,
    outcome: HandlerOutcome,
    now: Instant,
) -> Result<Settlement, SettlementError> {
    let delivered = Delivered {
        id,
        batch: slot(id, size).map(BatchSlot::place),
    };
    m.finish(ended(delivered, outcome.into(), now, None))
}

/// How `delivered` ended, with no publish, on its first attempt.
fn ended(
    delivered: Delivered<Msg>,
    completion: Completion,
    at: Instant,
    key: Option<&str>,
) -> Ended<'_, Msg> {
    Ended {
        delivered,
        completion,
        at,
        key,
        token: Token(0),
        publishes: 0,
        attempt: 0,
    }
}

#[test]
fn a_retry_after_becomes_a_nack_when_its_wait_ends_and_is_released_after_its_calls() {
    let mut m = machine(SubscriptionType::Shared, None, MachineConfig::new(4));
    let id = Msg { entry: 1, index: 0 };
    let arrival = Arrival {
        id: &id,
        batch: None,
        redelivery_count: Some(0),
    };
    assert_eq!(m.arrive(&arrival), Admission::Handle);
    assert!(m.start(Admission::Handle, None, &id));
    assert_eq!(m.running(), 1);
    let settled = finish(
        &mut m,
        id,
        1,
        HandlerOutcome::retry_after(Duration::from_secs(1)),
        at(0),
    );
    assert_eq!(settled, Ok(Settlement::NackAt(at(1000))));
    assert_eq!(m.poll_start(), None);
    assert_eq!(calls(&mut m, at(999)), []);
    assert_eq!(m.poll_timeout(), Some(at(1000)));
    assert_eq!(m.poll_release(), Some(id), "released while it waits");
    assert_eq!(calls(&mut m, at(1000)), [Call::Nack(id)]);
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn out_of_attempts_is_dead_lettered_and_a_first_delivery_never_is() {
    let config = MachineConfig {
        max_attempts: Some(3),
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    let id = Msg { entry: 1, index: 0 };
    for (count, admission) in [
        (0, Admission::Handle),
        (2, Admission::Handle),
        (3, Admission::DeadLetter),
        (9, Admission::DeadLetter),
    ] {
        let arrival = Arrival {
            id: &id,
            batch: None,
            redelivery_count: Some(count),
        };
        assert_eq!(m.arrive(&arrival), admission, "count {count}");
    }
    // A transport that tells no count never reaches the limit.
    let arrival = Arrival {
        id: &id,
        batch: None,
        redelivery_count: None,
    };
    assert_eq!(m.arrive(&arrival), Admission::Handle);
}

#[test]
fn a_key_waits_for_the_delivery_of_its_key_and_the_concurrency_counts_both() {
    let mut m = machine(SubscriptionType::KeyShared, None, MachineConfig::new(2));
    let (a1, a2) = (Msg { entry: 1, index: 0 }, Msg { entry: 2, index: 0 });
    assert!(m.start(Admission::Handle, Some("a"), &a1));
    assert!(
        !m.start(Admission::Handle, Some("a"), &a2),
        "a2 waits for a1"
    );
    assert_eq!(m.hold("a", &a2, a2), None);
    assert!(
        !m.wants_delivery(),
        "one running and one held fill a concurrency of 2"
    );
    let delivered = Delivered {
        id: a1,
        batch: None,
    };
    let _ = m.finish(ended(
        delivered,
        HandlerOutcome::ack().into(),
        at(0),
        Some("a"),
    ));
    assert_eq!(
        m.poll_start(),
        Some((a2, false)),
        "a2 runs once a1 is settled"
    );
    assert_eq!(m.running(), 1);
}

#[test]
fn a_batched_entry_is_acknowledged_with_its_last_message_and_siblings_are_not_handled_twice() {
    let mut m = machine(SubscriptionType::Shared, None, MachineConfig::new(8));
    let ids: Vec<Msg> = (0..3).map(|index| Msg { entry: 7, index }).collect();
    for id in &ids {
        let arrival = Arrival {
            id,
            batch: slot(*id, 3),
            redelivery_count: Some(0),
        };
        assert_eq!(m.arrive(&arrival), Admission::Handle);
        m.start(Admission::Handle, None, id);
    }
    let _ = finish(&mut m, ids[0], 3, HandlerOutcome::ack(), at(0));
    let _ = finish(&mut m, ids[1], 3, HandlerOutcome::retry(), at(0));
    assert_eq!(
        calls(&mut m, at(0)),
        [Call::Nack(ids[1])],
        "the ack of 0 is held"
    );
    // The entry comes back for 1: 0 is settled, 2 still runs.
    for id in &ids {
        let arrival = Arrival {
            id,
            batch: slot(*id, 3),
            redelivery_count: Some(1),
        };
        let want = if id.index == 1 {
            Admission::Handle
        } else {
            Admission::Skip
        };
        assert_eq!(m.arrive(&arrival), want, "{id:?}");
    }
    m.start(Admission::Handle, None, &ids[1]);
    let _ = finish(&mut m, ids[1], 3, HandlerOutcome::ack(), at(0));
    let _ = finish(&mut m, ids[2], 3, HandlerOutcome::drop(), at(0));
    let mut acked: Vec<Msg> = calls(&mut m, at(0))
        .into_iter()
        .map(|c| match c {
            Call::Ack(id) => id,
            other => panic!("{other:?}"),
        })
        .collect();
    acked.sort();
    assert_eq!(acked, ids, "every id of the entry, once all are settled");
}

#[test]
fn a_settled_message_of_an_unfinished_entry_is_acknowledged_by_index_when_asked() {
    let config = MachineConfig {
        batch_index_acks: true,
        ..MachineConfig::new(8)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    let ids: Vec<Msg> = (0..2).map(|index| Msg { entry: 3, index }).collect();
    for id in &ids {
        m.arrive(&Arrival {
            id,
            batch: slot(*id, 2),
            redelivery_count: Some(0),
        });
        m.start(Admission::Handle, None, id);
    }
    let _ = finish(&mut m, ids[1], 2, HandlerOutcome::ack(), at(0));
    assert_eq!(
        calls(&mut m, at(0)),
        [Call::AckIndex {
            id: ids[1],
            slot: slot(ids[1], 2).unwrap(),
            ack_set: vec![0b01],
        }]
    );
}

#[test]
fn a_refused_retry_after_leaves_the_delivery_and_puts_its_index_back_out() {
    let mut m = machine(
        SubscriptionType::Shared,
        Some(Duration::from_secs(2)),
        MachineConfig::new(8),
    );
    let id = Msg { entry: 4, index: 0 };
    let sibling = Msg { entry: 4, index: 1 };
    for id in [id, sibling] {
        m.arrive(&Arrival {
            id: &id,
            batch: slot(id, 2),
            redelivery_count: Some(0),
        });
        m.start(Admission::Handle, None, &id);
    }
    let settled = finish(
        &mut m,
        id,
        2,
        HandlerOutcome::retry_after(Duration::from_secs(5)),
        at(0),
    );
    assert!(settled.is_err());
    assert_eq!(calls(&mut m, at(0)), []);
    // The sibling's retry brings the entry back; the refused one is handled again.
    let _ = finish(&mut m, sibling, 2, HandlerOutcome::retry(), at(0));
    assert_eq!(calls(&mut m, at(0)), [Call::Nack(sibling)]);
    let again = Arrival {
        id: &id,
        batch: slot(id, 2),
        redelivery_count: Some(1),
    };
    assert_eq!(m.arrive(&again), Admission::Handle);
}

/// `id` (unbatched) ended with `completion` at `now` as delivery `token`, having published
/// `publishes` messages, its key `key`.
fn end(
    m: &mut SubscriptionMachine<Msg, Msg>,
    id: Msg,
    completion: Completion,
    key: Option<&str>,
    token: u32,
    publishes: u32,
) -> Result<Settlement, SettlementError> {
    m.finish(Ended {
        delivered: Delivered { id, batch: None },
        completion,
        at: at(0),
        key,
        token: Token(token),
        publishes,
        attempt: 0,
    })
}

#[test]
fn an_acknowledgement_waits_for_the_publishes_and_a_failed_one_makes_it_a_retry() {
    let mut m = machine(SubscriptionType::Shared, None, MachineConfig::new(4));
    let (a, b, c) = (
        Msg { entry: 1, index: 0 },
        Msg { entry: 2, index: 0 },
        Msg { entry: 3, index: 0 },
    );
    for id in [a, b, c] {
        m.start(Admission::Handle, None, &id);
    }
    // a: two publishes, both confirmed after it ended.
    assert_eq!(
        end(&mut m, a, HandlerOutcome::ack().into(), None, 1, 2),
        Ok(Settlement::Ack)
    );
    assert_eq!(calls(&mut m, at(0)), [], "held for its publishes");
    assert_eq!(m.awaiting_publishes(), 1);
    m.answered(Token(1), Origin::Handler, true, at(0));
    assert_eq!(calls(&mut m, at(0)), [], "one left");
    m.answered(Token(1), Origin::Handler, true, at(0));
    assert_eq!(calls(&mut m, at(0)), [Call::Ack(a)]);
    assert_eq!(m.poll_release(), Some(a), "released once settled");
    // b: its publish failed while it ran; it returns dead_letter, which copies nothing now.
    m.answered(Token(2), Origin::Handler, false, at(0));
    let settled = end(
        &mut m,
        b,
        HandlerOutcome::dead_letter("poison").into(),
        None,
        2,
        1,
    );
    assert_eq!(settled, Ok(Settlement::Nack), "a retry, with no copy");
    assert_eq!(calls(&mut m, at(0)), [Call::Nack(b)]);
    // c: confirmed while it ran: settled at once.
    m.answered(Token(3), Origin::Handler, true, at(0));
    assert_eq!(
        end(&mut m, c, HandlerOutcome::drop().into(), None, 3, 1),
        Ok(Settlement::Ack)
    );
    assert_eq!(calls(&mut m, at(0)), [Call::Ack(c)]);
    assert_eq!(m.awaiting_publishes(), 0);
}

#[test]
fn a_copy_is_ordered_where_its_topic_is_declared_and_settles_on_its_answer() {
    let config = MachineConfig {
        dead_letter_topic: true,
        retry_topic: true,
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    let (a, b) = (Msg { entry: 1, index: 0 }, Msg { entry: 2, index: 0 });
    for id in [a, b] {
        m.start(Admission::Handle, None, &id);
    }
    let later = HandlerOutcome::retry_later(Duration::from_secs(60));
    let settled = m.finish(Ended {
        delivered: Delivered { id: a, batch: None },
        completion: later.into(),
        at: at(0),
        key: None,
        token: Token(1),
        publishes: 0,
        attempt: 2,
    });
    assert_eq!(
        settled,
        Ok(Settlement::Republish(Republish::RetryTopic {
            delay: Duration::from_secs(60),
            count: 3
        })),
        "the copy counts one delivery more"
    );
    let out = end(&mut m, b, Completion::OutOfAttempts, None, 2, 0);
    assert_eq!(
        out,
        Ok(Settlement::Republish(Republish::DeadLetter {
            reason: OUT_OF_ATTEMPTS
        }))
    );
    assert_eq!(calls(&mut m, at(0)), [], "both wait for their copies");
    m.answered(Token(1), Origin::Copy, true, at(0));
    m.answered(Token(2), Origin::Copy, false, at(0));
    assert_eq!(
        calls(&mut m, at(0)),
        [Call::Ack(a)],
        "b's copy failed: left"
    );
    let mut released = [m.poll_release(), m.poll_release()];
    released.sort();
    assert_eq!(released, [Some(a), Some(b)]);
}

#[test]
fn ordered_retries_keep_a_key_until_its_publishes_are_answered() {
    let config = MachineConfig {
        ordered_retries: true,
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::KeyShared, None, config);
    let (a1, a2, a3) = (
        Msg { entry: 1, index: 0 },
        Msg { entry: 2, index: 0 },
        Msg { entry: 3, index: 0 },
    );
    assert!(m.start(Admission::Handle, Some("a"), &a1));
    assert!(!m.start(Admission::Handle, Some("a"), &a2));
    assert_eq!(m.hold("a", &a2, a2), None);
    let ack = || HandlerOutcome::ack().into();
    assert_eq!(end(&mut m, a1, ack(), Some("a"), 1, 1), Ok(Settlement::Ack));
    assert_eq!(
        m.poll_start(),
        None,
        "a1 keeps its key while its publish is unanswered"
    );
    m.answered(Token(1), Origin::Handler, true, at(0));
    assert_eq!(m.poll_start(), Some((a2, false)), "then a2 runs");
    assert!(!m.start(Admission::Handle, Some("a"), &a3));
    assert_eq!(m.hold("a", &a3, a3), None);
    assert_eq!(end(&mut m, a2, ack(), Some("a"), 2, 1), Ok(Settlement::Ack));
    m.answered(Token(2), Origin::Handler, false, at(0));
    assert_eq!(calls(&mut m, at(0)), [Call::Ack(a1), Call::Nack(a2)]);
    assert_eq!(
        m.poll_start(),
        None,
        "a2 failed: the key waits for it to come back"
    );
    assert!(
        m.start(Admission::Handle, Some("a"), &a2),
        "back, it takes its key again"
    );

    // Without ordered retries the key goes with the handler's end.
    let mut m = machine(SubscriptionType::KeyShared, None, MachineConfig::new(4));
    assert!(m.start(Admission::Handle, Some("a"), &a1));
    assert!(!m.start(Admission::Handle, Some("a"), &a2));
    assert_eq!(m.hold("a", &a2, a2), None);
    assert_eq!(end(&mut m, a1, ack(), Some("a"), 1, 1), Ok(Settlement::Ack));
    assert_eq!(
        m.poll_start(),
        Some((a2, false)),
        "the next of the key runs meanwhile"
    );
}

/// What a handler answers on one delivery, in the property test.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Ack,
    Drop,
    Retry,
    RetryAfter(u64),
    Panic,
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        4 => Just(Answer::Ack),
        1 => Just(Answer::Drop),
        2 => Just(Answer::Retry),
        2 => (1u64..50).prop_map(Answer::RetryAfter),
        1 => Just(Answer::Panic),
    ]
}

/// A tiny broker for one subscription of one consumer, by entry: it sends whole entries, takes
/// acknowledgements by entry (an acknowledged message acknowledges its entry, as Pulsar does
/// without batch-index acknowledgement) and redelivers a whole entry on a nack, or after the ack
/// timeout for an entry with a message left unsettled.
struct Broker {
    sizes: Vec<u32>,
    acked: BTreeSet<u64>,
    /// Entries to (re)send, in order.
    to_send: VecDeque<u64>,
    /// Entries sent and not acknowledged, with when they were sent.
    out: BTreeMap<u64, u64>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// For any batching, answers, concurrency and order of events: every message is handled
    /// until it ends acknowledged exactly once by its handler's answer (no acknowledged sibling
    /// is handed over again), every entry is acknowledged, every arrival is released exactly
    /// once, and the concurrency is never exceeded.
    #[test]
    fn every_message_is_settled_exactly_once(
        sizes in proptest::collection::vec(1u32..5, 1..12),
        answers in proptest::collection::vec(answer(), 64),
        concurrency in 1usize..6,
        finish_order in proptest::collection::vec(any::<u8>(), 256),
    ) {
        let mut m: SubscriptionMachine<Msg, Msg> = SubscriptionMachine::new(
            SubscriptionRules::new("s", SubscriptionType::Shared, Some(Duration::from_millis(100))),
            MachineConfig::new(concurrency),
            entry_of,
        );
        let mut broker = Broker {
            sizes: sizes.clone(),
            acked: BTreeSet::new(),
            to_send: (0..sizes.len() as u64).collect(),
            out: BTreeMap::new(),
        };
        // Deliveries queued at the client, not yet taken by the driver.
        let mut queue: VecDeque<(Msg, u32)> = VecDeque::new();
        let mut running: Vec<Msg> = Vec::new();
        let mut attempts: BTreeMap<Msg, usize> = BTreeMap::new();
        let mut acked_by_handler: BTreeMap<Msg, usize> = BTreeMap::new();
        let mut arrived = 0usize;
        let mut released = 0usize;
        let mut now = 0u64;
        let mut picks = finish_order.iter().cycle();
        for _step in 0..2_000 {
            // The broker sends what it has.
            while let Some(entry) = broker.to_send.pop_front() {
                if broker.acked.contains(&entry) {
                    continue;
                }
                broker.out.insert(entry, now);
                let size = broker.sizes[entry as usize];
                for index in 0..size {
                    queue.push_back((Msg { entry, index }, size));
                }
            }
            // The driver takes deliveries while the machine wants them.
            while m.wants_delivery() {
                let Some((id, size)) = queue.pop_front() else { break };
                arrived += 1;
                let admission = m.arrive(&Arrival { id: &id, batch: slot(id, size), redelivery_count: Some(0) });
                match admission {
                    Admission::Handle => {
                        prop_assert!(m.start(Admission::Handle, None, &id), "no key: starts at once");
                        running.push(id);
                    }
                    Admission::Skip => {}
                    other => prop_assert!(false, "unexpected {other:?}"),
                }
                prop_assert!(m.running() <= concurrency);
            }
            // One running handler ends, chosen by the test.
            if !running.is_empty() {
                let pick = *picks.next().unwrap() as usize % running.len();
                let id = running.swap_remove(pick);
                let n = attempts.entry(id).or_default();
                let answer = if *n >= 3 { Answer::Ack } else { answers[(id.entry as usize * 5 + id.index as usize + *n) % answers.len()] };
                *n += 1;
                let completion = match answer {
                    Answer::Ack => HandlerOutcome::ack().into(),
                    Answer::Drop => HandlerOutcome::drop().into(),
                    Answer::Retry => HandlerOutcome::retry().into(),
                    Answer::RetryAfter(ms) => HandlerOutcome::retry_after(Duration::from_millis(ms)).into(),
                    Answer::Panic => Completion::Panicked,
                };
                if matches!(answer, Answer::Ack | Answer::Drop) {
                    *acked_by_handler.entry(id).or_default() += 1;
                }
                let size = broker.sizes[id.entry as usize];
                let _ = m.finish(ended(Delivered { id, batch: slot(id, size).map(BatchSlot::place) }, completion, at(now), None));
                prop_assert!(m.poll_start().is_none());
            } else {
                // Nothing runs: time moves to the next wait, or to the ack timeout.
                now += 10;
            }
            // The driver makes the calls due, then releases.
            while let Some(call) = m.poll_call(at(now)) {
                match call {
                    Call::Ack(id) => {
                        broker.acked.insert(id.entry);
                        broker.out.remove(&id.entry);
                    }
                    Call::Nack(id) => {
                        if broker.out.remove(&id.entry).is_some() {
                            broker.to_send.push_back(id.entry);
                        }
                    }
                    Call::AckIndex { .. } => prop_assert!(false, "index acks are off"),
                    Call::Commit { .. } | Call::Abort(_) => {
                        prop_assert!(false, "not transactional")
                    }
                }
            }
            while m.poll_release().is_some() {
                released += 1;
            }
            // The client's ack timeout: an entry out for 100 ms comes back.
            let expired: Vec<u64> = broker.out.iter().filter(|(_, sent)| now >= **sent + 100).map(|(e, _)| *e).collect();
            for entry in expired {
                broker.out.remove(&entry);
                broker.to_send.push_back(entry);
            }
            if broker.acked.len() == sizes.len() && queue.is_empty() && running.is_empty() {
                break;
            }
        }
        prop_assert_eq!(broker.acked.len(), sizes.len(), "every entry acknowledged");
        for (entry, size) in sizes.iter().enumerate() {
            for index in 0..*size {
                let id = Msg { entry: entry as u64, index };
                prop_assert_eq!(acked_by_handler.get(&id).copied(), Some(1), "{:?} acknowledged by its handler once", id);
            }
        }
        // Deliveries still queued at the end are not received; every received one is released.
        prop_assert_eq!(released, arrived, "every arrival released exactly once");
    }
}

/// Ordered retries: key a's first message is retried twice (a nack, then a `retry_after`)
/// while a's next two arrive; they are held until it comes back and is acknowledged, and
/// then run in order; key b runs meanwhile.
#[test]
fn ordered_retries_hold_a_key_until_its_retried_message_is_settled() {
    let config = MachineConfig {
        ordered_retries: true,
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::KeyShared, None, config);
    let (a1, a2, a3, b1) = (
        Msg { entry: 1, index: 0 },
        Msg { entry: 2, index: 0 },
        Msg { entry: 3, index: 0 },
        Msg { entry: 4, index: 0 },
    );
    let key = |m: &mut SubscriptionMachine<Msg, Msg>, id: Msg, k: &str| {
        if m.start(Admission::Handle, Some(k), &id) {
            true
        } else {
            assert_eq!(m.hold(k, &id, id), None);
            false
        }
    };
    let done = |m: &mut SubscriptionMachine<Msg, Msg>, id, outcome: HandlerOutcome, now| {
        let delivered = Delivered { id, batch: None };
        m.finish(ended(
            delivered,
            outcome.into(),
            at(now),
            Some(if id == b1 { "b" } else { "a" }),
        ))
        .unwrap()
    };
    assert!(key(&mut m, a1, "a"));
    assert_eq!(
        done(&mut m, a1, HandlerOutcome::retry(), 0),
        Settlement::Nack
    );
    assert_eq!(m.poll_start(), None, "the key stays with a1");
    assert!(!key(&mut m, a2, "a"), "a2 held while a1 is away");
    assert!(key(&mut m, b1, "b"), "other keys flow");
    assert_eq!(done(&mut m, b1, HandlerOutcome::ack(), 0), Settlement::Ack);
    assert_eq!(m.poll_start(), None);
    assert!(key(&mut m, a1, "a"), "a1 back: it takes its key again");
    let wait = HandlerOutcome::retry_after(Duration::from_secs(1));
    assert_eq!(done(&mut m, a1, wait, 5), Settlement::NackAt(at(1005)));
    assert_eq!(m.poll_start(), None);
    assert!(!key(&mut m, a3, "a"), "a3 held too");
    assert!(
        m.wants_delivery(),
        "held ones do not keep a1 from being received"
    );
    assert_eq!(
        m.poll_timeout(),
        Some(at(1005)),
        "the wait first; the key's deadline is after it"
    );
    assert!(key(&mut m, a1, "a"));
    assert_eq!(
        done(&mut m, a1, HandlerOutcome::ack(), 1005),
        Settlement::Ack
    );
    assert_eq!(
        m.poll_start(),
        Some((a2, true)),
        "then a2, parked meanwhile"
    );
    assert_eq!(
        done(&mut m, a2, HandlerOutcome::ack(), 1005),
        Settlement::Ack
    );
    assert_eq!(m.poll_start(), Some((a3, true)), "then a3");
    assert_eq!(
        done(&mut m, a3, HandlerOutcome::ack(), 1005),
        Settlement::Ack
    );
    assert_eq!(m.poll_start(), None);
    assert!(!m.awaits_retries());
}

/// Ordered retries: a retried message that does not come back lets its key go
/// `RETRY_RETURN_GRACE` after it was due, and the held delivery starts then.
#[test]
fn ordered_retries_let_a_key_go_when_the_retried_message_does_not_come_back() {
    let config = MachineConfig {
        ordered_retries: true,
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::KeyShared, None, config);
    let (a1, a2) = (Msg { entry: 1, index: 0 }, Msg { entry: 2, index: 0 });
    assert!(m.start(Admission::Handle, Some("a"), &a1));
    let delivered = Delivered {
        id: a1,
        batch: None,
    };
    let _ = m.finish(ended(
        delivered,
        HandlerOutcome::retry().into(),
        at(0),
        Some("a"),
    ));
    assert!(!m.start(Admission::Handle, Some("a"), &a2));
    assert_eq!(m.hold("a", &a2, a2), None);
    let grace = super::RETRY_RETURN_GRACE.as_millis() as u64;
    let _ = calls(&mut m, at(0));
    assert_eq!(m.poll_timeout(), Some(at(grace)));
    assert_eq!(m.poll_expired(at(grace - 1)), None);
    assert_eq!(
        m.poll_expired(at(grace)),
        Some((a2, true)),
        "a2 goes on without a1"
    );
    assert_eq!(m.running(), 1);
}

/// How the broker answers one publish, in the property test of publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Confirmed,
    Failed,
    /// Not before the service crashes.
    Never,
}

fn said() -> impl Strategy<Value = Said> {
    prop_oneof![
        6 => Just(Said::Confirmed),
        2 => Just(Said::Failed),
        1 => Just(Said::Never),
    ]
}

/// What a handler run answers, with the messages it published first.
#[derive(Debug, Clone, Copy)]
struct Run {
    outcome: Answer2,
    publishes: u32,
}

/// The outcomes of the publishes property test: the table's, and the two that copy.
#[derive(Debug, Clone, Copy)]
enum Answer2 {
    Ack,
    Drop,
    Retry,
    RetryAfter(u64),
    Panic,
    DeadLetter,
    RetryLater,
}

fn run() -> impl Strategy<Value = Run> {
    let outcome = prop_oneof![
        5 => Just(Answer2::Ack),
        1 => Just(Answer2::Drop),
        1 => Just(Answer2::Retry),
        1 => (1u64..50).prop_map(Answer2::RetryAfter),
        1 => Just(Answer2::Panic),
        1 => Just(Answer2::DeadLetter),
        1 => Just(Answer2::RetryLater),
    ];
    (outcome, 0u32..3).prop_map(|(outcome, publishes)| Run { outcome, publishes })
}

/// One handler run as the test follows it: its message, what it published and how those
/// were answered, and whether it ended in an outcome that acknowledges.
#[derive(Debug, Default, Clone)]
struct Attempt {
    message: Option<Msg>,
    issued: u32,
    confirmed: u32,
    failed: bool,
    /// The copy the machine ordered: `Some(true)` once confirmed.
    copy: Option<bool>,
    acknowledging: bool,
    /// Which run of the service it was in (each crash starts another).
    incarnation: u32,
}

impl Attempt {
    /// Everything it published (and its copy) is confirmed.
    fn all_confirmed(&self) -> bool {
        self.acknowledging
            && !self.failed
            && self.confirmed == self.issued
            && self.copy != Some(false)
    }
}

/// A publish not answered yet: its delivery, whether it is the copy, how it will be answered,
/// and when it was made (one never answered fails 300 ms later, as a producer's operation
/// timeout fails it, unless the service crashed first).
type Unanswered = (Token, Origin, Said, u64);

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// For any batching, handler runs (what each publishes and answers, copies included),
    /// publish answers (confirmed, failed, or never: until a crash), order of events, crashes
    /// and time: no message is acknowledged before everything its acknowledging run published,
    /// and the copy it ordered, is confirmed; and nothing is lost: every entry ends
    /// acknowledged, every message with a run whose publishes all were.
    #[test]
    fn no_delivery_is_acknowledged_before_its_publishes_are_confirmed(
        sizes in proptest::collection::vec(1u32..4, 1..10),
        runs in proptest::collection::vec(run(), 64),
        answers in proptest::collection::vec(said(), 64),
        concurrency in 1usize..5,
        picks in proptest::collection::vec(any::<u8>(), 512),
    ) {
        let config = MachineConfig {
            dead_letter_topic: true,
            retry_topic: true,
            ..MachineConfig::new(concurrency)
        };
        let rules = || SubscriptionRules::new("s", SubscriptionType::Shared, Some(Duration::from_millis(100)));
        let mut m: SubscriptionMachine<Msg, Msg> = SubscriptionMachine::new(rules(), config, entry_of);
        let mut broker = Broker {
            sizes: sizes.clone(),
            acked: BTreeSet::new(),
            to_send: (0..sizes.len() as u64).collect(),
            out: BTreeMap::new(),
        };
        let mut queue: VecDeque<(Msg, u32)> = VecDeque::new();
        let mut running: Vec<(Msg, Token)> = Vec::new();
        let mut unanswered: Vec<Unanswered> = Vec::new();
        let mut attempts: BTreeMap<Token, Attempt> = BTreeMap::new();
        let mut runs_of: BTreeMap<Msg, usize> = BTreeMap::new();
        let mut confirmed_runs: BTreeSet<Msg> = BTreeSet::new();
        let mut next_token = 0u32;
        let mut next_answer = 0usize;
        let mut crashes = 0;
        let (mut arrived, mut released) = (0usize, 0usize);
        let mut now = 0u64;
        let mut picks = picks.iter().cycle();
        for _step in 0..3_000 {
            while let Some(entry) = broker.to_send.pop_front() {
                if broker.acked.contains(&entry) {
                    continue;
                }
                broker.out.insert(entry, now);
                let size = broker.sizes[entry as usize];
                for index in 0..size {
                    queue.push_back((Msg { entry, index }, size));
                }
            }
            while m.wants_delivery() {
                let Some((id, size)) = queue.pop_front() else { break };
                arrived += 1;
                match m.arrive(&Arrival { id: &id, batch: slot(id, size), redelivery_count: Some(0) }) {
                    Admission::Handle => {
                        prop_assert!(m.start(Admission::Handle, None, &id));
                        running.push((id, Token(next_token)));
                        next_token += 1;
                    }
                    Admission::Skip => {}
                    other => prop_assert!(false, "unexpected {other:?}"),
                }
            }
            let pick = *picks.next().unwrap() as usize;
            match pick % 8 {
                // A running handler ends, having published.
                0..=3 if !running.is_empty() => {
                    let (id, token) = running.swap_remove(pick % running.len());
                    let n = runs_of.entry(id).or_default();
                    // Late runs succeed, so that the test ends.
                    let late = *n >= 4;
                    let run = if late {
                        Run { outcome: Answer2::Ack, publishes: 1 }
                    } else {
                        runs[(id.entry as usize * 7 + id.index as usize * 3 + *n) % runs.len()]
                    };
                    *n += 1;
                    let mut attempt = Attempt {
                        message: Some(id),
                        issued: run.publishes,
                        incarnation: crashes,
                        ..Attempt::default()
                    };
                    for p in 0..run.publishes {
                        let said = if late { Said::Confirmed } else { answers[next_answer % answers.len()] };
                        next_answer += 1;
                        // Some answers come while the handler still runs.
                        if p == 0 && pick & 0x10 != 0 && said != Said::Never {
                            let ok = said == Said::Confirmed;
                            m.answered(token, Origin::Handler, ok, at(now));
                            attempt.confirmed += u32::from(ok);
                            attempt.failed |= !ok;
                        } else {
                            unanswered.push((token, Origin::Handler, said, now));
                        }
                    }
                    let completion = match run.outcome {
                        Answer2::Ack => HandlerOutcome::ack().into(),
                        Answer2::Drop => HandlerOutcome::drop().into(),
                        Answer2::Retry => HandlerOutcome::retry().into(),
                        Answer2::RetryAfter(ms) => HandlerOutcome::retry_after(Duration::from_millis(ms)).into(),
                        Answer2::Panic => Completion::Panicked,
                        Answer2::DeadLetter => HandlerOutcome::dead_letter("poison").into(),
                        Answer2::RetryLater => HandlerOutcome::retry_later(Duration::from_secs(60)).into(),
                    };
                    let size = broker.sizes[id.entry as usize];
                    let settled = m.finish(Ended {
                        delivered: Delivered { id, batch: slot(id, size).map(BatchSlot::place) },
                        completion,
                        at: at(now),
                        key: None,
                        token,
                        publishes: run.publishes,
                        attempt: 0,
                    });
                    match settled {
                        Ok(Settlement::Republish(_)) => {
                            attempt.acknowledging = true;
                            attempt.copy = Some(false);
                            let said = if late { Said::Confirmed } else { answers[next_answer % answers.len()] };
                            next_answer += 1;
                            unanswered.push((token, Origin::Copy, said, now));
                        }
                        Ok(Settlement::Ack) => attempt.acknowledging = true,
                        _ => {}
                    }
                    attempts.insert(token, attempt);
                    prop_assert!(m.poll_start().is_none(), "no key: nothing held");
                }
                // The broker answers a publish.
                4..=5 if !unanswered.is_empty() => {
                    let at_ = pick % unanswered.len();
                    let (_, _, said, made) = unanswered[at_];
                    if said != Said::Never || now >= made + 300 {
                        let (token, origin, said, _) = unanswered.swap_remove(at_);
                        let ok = said == Said::Confirmed;
                        if let Some(attempt) = attempts.get_mut(&token) {
                            match origin {
                                Origin::Copy => attempt.copy = Some(ok),
                                _ => {
                                    attempt.confirmed += u32::from(ok);
                                    attempt.failed |= !ok;
                                }
                            }
                        }
                        m.answered(token, origin, ok, at(now));
                    }
                }
                // The service crashes: its machine, handlers and unanswered publishes go;
                // the broker sends again what was not acknowledged.
                6 if pick.is_multiple_of(5) && crashes < 3 => {
                    crashes += 1;
                    m = SubscriptionMachine::new(rules(), config, entry_of);
                    running.clear();
                    unanswered.clear();
                    queue.clear();
                    for (entry, _) in core::mem::take(&mut broker.out) {
                        broker.to_send.push_back(entry);
                    }
                    (arrived, released) = (0, 0);
                    continue;
                }
                _ => now += 10,
            }
            while let Some(call) = m.poll_call(at(now)) {
                match call {
                    Call::Ack(id) => {
                        // The run that acknowledges it had everything it published confirmed.
                        let confirmed = attempts.values().any(|a| {
                            a.message == Some(id) && a.incarnation == crashes && a.all_confirmed()
                        });
                        prop_assert!(confirmed, "{:?} acknowledged before its publishes were confirmed: {:?}", id,
                            attempts.values().filter(|a| a.message == Some(id)).collect::<Vec<_>>());
                        confirmed_runs.insert(id);
                        broker.acked.insert(id.entry);
                        broker.out.remove(&id.entry);
                    }
                    Call::Nack(id) => {
                        if broker.out.remove(&id.entry).is_some() {
                            broker.to_send.push_back(id.entry);
                        }
                    }
                    Call::AckIndex { .. } => prop_assert!(false, "index acks are off"),
                    Call::Commit { .. } | Call::Abort(_) => {
                        prop_assert!(false, "not transactional")
                    }
                }
            }
            while m.poll_release().is_some() {
                released += 1;
            }
            let expired: Vec<u64> = broker.out.iter().filter(|(_, sent)| now >= **sent + 100).map(|(e, _)| *e).collect();
            for entry in expired {
                broker.out.remove(&entry);
                broker.to_send.push_back(entry);
            }
            if broker.acked.len() == sizes.len() && queue.is_empty() && running.is_empty() && unanswered.is_empty() {
                break;
            }
        }
        prop_assert_eq!(broker.acked.len(), sizes.len(), "every entry acknowledged");
        for (entry, size) in sizes.iter().enumerate() {
            for index in 0..*size {
                let id = Msg { entry: entry as u64, index };
                prop_assert!(confirmed_runs.contains(&id), "{:?} acknowledged, with its publishes confirmed", id);
            }
        }
        // Deliveries still queued at the end are not received; every received one is released.
        prop_assert_eq!(released, arrived, "every arrival since the last crash released once");
        prop_assert!(unanswered.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Batches, for any batching of entries, keys, policy, answers, concurrency and order of
    /// events: every message is handled until it ends acknowledged exactly once by its own
    /// answer, every entry is acknowledged; at most `concurrency` batches run, none over the
    /// policy's max messages; a key is never in two running batches, nor twice in one; and
    /// every arrival and every re-acquisition of a parked delivery is released exactly once.
    #[test]
    fn batches_settle_every_message_exactly_once_and_keep_each_key_to_one(
        sizes in proptest::collection::vec(1u32..5, 1..12),
        answers in proptest::collection::vec(answer(), 64),
        concurrency in 1usize..4,
        max_messages in 1usize..6,
        keys in 1u64..4,
        picks in proptest::collection::vec(any::<u8>(), 256),
    ) {
        let policy = crate::batch::BatchPolicy::new(core::num::NonZeroUsize::new(max_messages).unwrap())
            .max_wait(Duration::from_millis(20));
        let mut m: SubscriptionMachine<Msg, Msg> = SubscriptionMachine::new(
            SubscriptionRules::new("s", SubscriptionType::KeyShared, Some(Duration::from_millis(100))),
            MachineConfig { batch: Some(policy), ..MachineConfig::new(concurrency) },
            entry_of,
        );
        prop_assert!(m.gathers());
        let key_of = |id: &Msg| alloc::format!("k{}", id.entry % keys);
        let mut broker = Broker {
            sizes: sizes.clone(),
            acked: BTreeSet::new(),
            to_send: (0..sizes.len() as u64).collect(),
            out: BTreeMap::new(),
        };
        let mut queue: VecDeque<(Msg, u32)> = VecDeque::new();
        let mut batches: Vec<Vec<Msg>> = Vec::new();
        let mut attempts: BTreeMap<Msg, usize> = BTreeMap::new();
        let mut acked_by_handler: BTreeMap<Msg, usize> = BTreeMap::new();
        let (mut arrived, mut acquired, mut released) = (0usize, 0usize, 0usize);
        let mut now = 0u64;
        let mut picks = picks.iter().cycle();
        // Entries the ack timeout brought back: a copy may arrive while the first is still
        // gathered or held behind its key (the timeout counts from receipt), and be handled
        // again: at least once, not exactly once, for those.
        let mut timed_out: BTreeSet<u64> = BTreeSet::new();
        for _step in 0..3_000 {
            while let Some(entry) = broker.to_send.pop_front() {
                if broker.acked.contains(&entry) {
                    continue;
                }
                broker.out.insert(entry, now);
                let size = broker.sizes[entry as usize];
                for index in 0..size {
                    queue.push_back((Msg { entry, index }, size));
                }
            }
            while m.wants_delivery() {
                let Some((id, size)) = queue.pop_front() else { break };
                arrived += 1;
                let admission = m.arrive(&Arrival { id: &id, batch: slot(id, size), redelivery_count: Some(0) });
                match admission {
                    Admission::Handle => {
                        let key = key_of(&id);
                        if m.start(Admission::Handle, Some(&key), &id) {
                            m.gather(id, 1, at(now));
                        } else {
                            // A copy of one held already (its entry came back) is let go.
                            let _ = m.hold(&key, &id, id);
                        }
                    }
                    Admission::Skip => {}
                    other => prop_assert!(false, "unexpected {other:?}"),
                }
            }
            // Batches due now are handed over.
            while let Some(batch) = m.poll_batch(at(now)) {
                prop_assert!(batch.len() <= max_messages && !batch.is_empty());
                let ids: Vec<Msg> = batch.iter().map(|g| g.delivery).collect();
                acquired += batch.iter().filter(|g| g.parked).count();
                let mut busy: BTreeSet<alloc::string::String> =
                    batches.iter().flatten().map(key_of).collect();
                for id in &ids {
                    prop_assert!(busy.insert(key_of(id)), "{:?}'s key runs already: {:?} {:?}", id, batches, ids);
                }
                batches.push(ids);
                prop_assert!(batches.len() <= concurrency);
                prop_assert_eq!(m.batches().0, batches.len());
            }
            if !batches.is_empty() && picks.next().unwrap() % 3 != 0 {
                // One running batch ends, each message by its own answer.
                let pick = *picks.next().unwrap() as usize % batches.len();
                for id in batches.swap_remove(pick) {
                    let n = attempts.entry(id).or_default();
                    let answer = if *n >= 3 { Answer::Ack } else { answers[(id.entry as usize * 5 + id.index as usize + *n) % answers.len()] };
                    *n += 1;
                    let completion = match answer {
                        Answer::Ack => HandlerOutcome::ack().into(),
                        Answer::Drop => HandlerOutcome::drop().into(),
                        Answer::Retry => HandlerOutcome::retry().into(),
                        Answer::RetryAfter(ms) => HandlerOutcome::retry_after(Duration::from_millis(ms)).into(),
                        Answer::Panic => Completion::Panicked,
                    };
                    if matches!(answer, Answer::Ack | Answer::Drop) {
                        *acked_by_handler.entry(id).or_default() += 1;
                    }
                    let size = broker.sizes[id.entry as usize];
                    let key = key_of(&id);
                    let _ = m.finish(ended(Delivered { id, batch: slot(id, size).map(BatchSlot::place) }, completion, at(now), Some(&key)));
                }
                m.batch_done(Vec::new());
                while let Some((id, parked)) = m.poll_start() {
                    acquired += usize::from(parked);
                    m.gather(id, 1, at(now));
                }
            } else {
                now += 10;
            }
            while let Some(call) = m.poll_call(at(now)) {
                match call {
                    Call::Ack(id) => {
                        broker.acked.insert(id.entry);
                        broker.out.remove(&id.entry);
                    }
                    Call::Nack(id) => {
                        if broker.out.remove(&id.entry).is_some() {
                            broker.to_send.push_back(id.entry);
                        }
                    }
                    Call::AckIndex { .. } => prop_assert!(false, "index acks are off"),
                    Call::Commit { .. } | Call::Abort(_) => {
                        prop_assert!(false, "not transactional")
                    }
                }
            }
            // The driver waits: what waits for time is parked.
            m.park_gathered(|_| released += 1);
            while m.poll_release().is_some() {
                released += 1;
            }
            let expired: Vec<u64> = broker.out.iter().filter(|(_, sent)| now >= **sent + 100).map(|(e, _)| *e).collect();
            for entry in expired {
                broker.out.remove(&entry);
                broker.to_send.push_back(entry);
                timed_out.insert(entry);
            }
            let idle = batches.is_empty() && m.batches() == (0, 0) && m.running() == 0;
            if broker.acked.len() == sizes.len() && queue.is_empty() && idle {
                break;
            }
        }
        prop_assert_eq!(broker.acked.len(), sizes.len(), "every entry acknowledged");
        for (entry, size) in sizes.iter().enumerate() {
            for index in 0..*size {
                let id = Msg { entry: entry as u64, index };
                let times = acked_by_handler.get(&id).copied().unwrap_or(0);
                match timed_out.contains(&(entry as u64)) {
                    true => prop_assert!(times >= 1, "{:?} acknowledged by its handler", id),
                    false => prop_assert_eq!(times, 1, "{:?} acknowledged by its handler once", id),
                }
            }
        }
        prop_assert_eq!(m.batches(), (0, 0));
        prop_assert_eq!(released, arrived + acquired, "every arrival and re-acquisition released once");
    }
}
