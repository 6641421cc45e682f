//! The subscription machine on its own: no executor, no clock, no broker.

extern crate std;

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use core::num::NonZeroU32;
use core::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::publish::Token;
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
