//! The subscription machine on its own, one case at a time: no executor, no clock, no broker.
//! (`property.rs` drives it through any interleaving.)

extern crate std;

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::num::NonZeroU32;
use core::time::Duration;

use super::*;
use crate::broker::{Origin, Token};
use crate::completion::{Completion, Republish, OUT_OF_ATTEMPTS};
use crate::publish::PublishError;
use crate::transaction::TransactionPolicy;
use crate::{HandlerOutcome, MessageId};

/// A message id as a test transport makes it: its entry and its index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Id {
    pub(super) entry: u64,
    pub(super) index: u32,
}

/// A delivery as a test transport makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Msg {
    pub(super) id: Id,
    pub(super) slot: Option<BatchSlot>,
    pub(super) count: Option<u32>,
    pub(super) key: Option<String>,
    pub(super) republished: u32,
}

impl Envelope for Msg {
    type Id = Id;
    fn id(&self) -> &Id {
        &self.id
    }
    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
    fn batch(&self) -> Option<BatchSlot> {
        self.slot
    }
    fn redelivery_count(&self) -> Option<u32> {
        self.count
    }
    fn republished(&self) -> u32 {
        self.republished
    }
    fn set_redelivery_count(&mut self, count: Option<u32>) {
        self.count = count;
    }
    fn bytes(&self) -> usize {
        1
    }
}

/// What the test driver keeps of a delivery: its id.
pub(super) type Kept = Id;
/// A transaction, as the test opens them: its number.
pub(super) type Handle = u32;
pub(super) type Machine = SubscriptionMachine<Msg, Kept, Handle>;
pub(super) type Cmd = Command<Id, Msg, Kept, Handle>;

pub(super) fn entry_of(id: &Id) -> EntryPosition {
    EntryPosition {
        ledger: 1,
        entry: id.entry,
        partition: -1,
    }
}

pub(super) fn at(ms: u64) -> Instant {
    Instant::from_elapsed(Duration::from_millis(ms))
}

pub(super) fn machine(
    kind: SubscriptionType,
    ack_timeout: Option<Duration>,
    config: MachineConfig,
) -> Machine {
    SubscriptionMachine::new(
        SubscriptionRules::new("s", kind, ack_timeout),
        config,
        entry_of,
    )
}

pub(super) fn slot(id: Id, size: u32) -> Option<BatchSlot> {
    (size > 1).then(|| BatchSlot {
        entry: entry_of(&id),
        index: id.index,
        size: NonZeroU32::new(size).unwrap(),
    })
}

/// Message `entry`'s first (and only) message.
fn one(entry: u64) -> Id {
    Id { entry, index: 0 }
}

/// The delivery of `id`, of an entry of `size`, with `key`, on its first attempt.
pub(super) fn msg(id: Id, size: u32, key: Option<&str>) -> Msg {
    Msg {
        id,
        slot: slot(id, size),
        count: Some(0),
        key: key.map(String::from),
        republished: 0,
    }
}

/// Receive `delivery` at `now` as a driver does: the invocation it starts, if it starts at
/// once (kept by the machine otherwise).
pub(super) fn receive(m: &mut Machine, mut delivery: Msg, now: u64) -> Option<Invoke<Msg, Handle>> {
    match m.receive(&mut delivery, || at(now)) {
        Admit::Start(start) => Some(Invoke {
            token: start.token,
            members: Members::One(delivery, start.plan),
            txn: start.txn,
        }),
        Admit::Keep => {
            m.keep(delivery);
            None
        }
        Admit::Drop => None,
    }
}

/// Receive `delivery`; the token it started under, if it started at once.
fn start(m: &mut Machine, delivery: Msg) -> Option<Token> {
    receive(m, delivery, 0).map(|invoke| invoke.token)
}

/// How `id` (of an entry of `size`), delivery `token`, ended at `now`.
pub(super) fn finished(
    token: Token,
    id: Id,
    size: u32,
    completion: Completion,
    now: u64,
    publishes: u32,
    tail: Option<(Option<&str>, Option<Kept>)>,
) -> Event<Id, Msg, Kept, Handle> {
    Event::Finished(Finished {
        token,
        delivered: Delivered {
            id,
            batch: slot(id, size).map(BatchSlot::place),
        },
        completion,
        at: at(now),
        publishes,
        attempt: 0,
        tail: tail.map(|(key, kept)| {
            Box::new(Tail {
                key: key.map(String::from),
                kept,
            })
        }),
    })
}

/// Every command due at `now`.
pub(super) fn drain(m: &mut Machine, now: u64) -> Vec<Cmd> {
    core::iter::from_fn(|| m.poll(at(now))).collect()
}

/// The consumer calls among `commands`, as `ack`, `nack` and `index` with their ids.
fn calls(commands: &[Cmd]) -> Vec<(&'static str, Id)> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Ack(id) => Some(("ack", *id)),
            Command::Nack(id) => Some(("nack", *id)),
            Command::AckIndex { id, .. } => Some(("index", *id)),
            _ => None,
        })
        .collect()
}

/// The releases among `commands`.
fn releases(commands: &[Cmd]) -> Vec<Id> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Release(id) => Some(*id),
            _ => None,
        })
        .collect()
}

/// The deliveries started by `commands`, with whether each was acquired first.
fn started(commands: &[Cmd]) -> Vec<Id> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Invoke(invoke) => match &invoke.members {
                Members::One(delivery, _) => Some(delivery.id),
                Members::Batch(_) => None,
            },
            _ => None,
        })
        .collect()
}

fn confirmed() -> Result<MessageId, PublishError> {
    Ok(MessageId::new(&[9, 0, -1]))
}

fn failed() -> Result<MessageId, PublishError> {
    Err(PublishError::NoBroker)
}

#[test]
fn a_retry_after_becomes_a_nack_when_its_wait_ends_and_is_released_after_its_calls() {
    let mut m = machine(SubscriptionType::Shared, None, MachineConfig::new(4));
    let id = one(1);
    let token = start(&mut m, msg(id, 1, None)).expect("starts at once");
    assert_eq!(m.status().running, 1);
    let wait = HandlerOutcome::retry_after(Duration::from_secs(1));
    m.handle(finished(token, id, 1, wait.into(), 0, 0, None), at(0));
    let now = drain(&mut m, 999);
    assert_eq!(calls(&now), []);
    assert_eq!(releases(&now), [id], "released while it waits");
    assert_eq!(m.poll_timeout(), Some(at(1000)));
    assert_eq!(calls(&drain(&mut m, 1000)), [("nack", id)]);
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn out_of_attempts_is_dead_lettered_and_a_first_delivery_never_is() {
    let config = MachineConfig {
        max_attempts: Some(3),
        ..MachineConfig::new(8)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    for (entry, count, plan) in [
        (1, Some(0), Plan::Handle),
        (2, Some(2), Plan::Handle),
        (3, Some(3), Plan::OutOfAttempts),
        (4, Some(9), Plan::OutOfAttempts),
        // A transport that tells no count never reaches the limit.
        (5, None, Plan::Handle),
    ] {
        let delivery = Msg {
            count,
            ..msg(one(entry), 1, None)
        };
        let invoke = receive(&mut m, delivery, 0).expect("starts");
        assert!(
            matches!(invoke.members, Members::One(_, p) if p == plan),
            "count {count:?}"
        );
    }
}

#[test]
fn the_copies_through_the_retry_topic_count_as_attempts() {
    let config = MachineConfig {
        max_attempts: Some(3),
        retry_topic: true,
        ..MachineConfig::new(8)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    let delivery = Msg {
        count: Some(1),
        republished: 2,
        ..msg(one(1), 1, None)
    };
    let invoke = receive(&mut m, delivery, 0).expect("starts");
    let Members::One(delivery, plan) = invoke.members else {
        panic!("one")
    };
    assert_eq!(
        delivery.count,
        Some(3),
        "one count: the broker's and the copies"
    );
    assert_eq!(plan, Plan::OutOfAttempts);
}

#[test]
fn a_plan_steps_in_the_completion_table_s_order() {
    let retry = Some(HandlerOutcome::Retry);
    assert_eq!(Plan::Handle.step(None, None, false), Step::Call);
    assert_eq!(
        Plan::Handle.step(None, retry, true),
        Step::Answered(HandlerOutcome::Retry)
    );
    assert_eq!(Plan::Handle.step(None, None, true), Step::Unreadable);
    assert_eq!(
        Plan::OutOfAttempts.step(None, retry, false),
        Step::OutOfAttempts
    );
    assert_eq!(
        Plan::OutOfAttempts.step(Some("down"), retry, true),
        Step::NotOpened("down")
    );
    assert!(Step::Unreadable.by_handler() && !Step::OutOfAttempts.by_handler());
}

#[test]
fn a_key_waits_for_the_delivery_of_its_key_and_the_concurrency_counts_both() {
    let mut m = machine(SubscriptionType::KeyShared, None, MachineConfig::new(2));
    let (a1, a2) = (one(1), one(2));
    let token = start(&mut m, msg(a1, 1, Some("a"))).expect("a1 runs");
    assert_eq!(
        start(&mut m, msg(a2, 1, Some("a"))),
        None,
        "a2 waits for a1"
    );
    assert!(
        !m.wants_delivery(),
        "one running and one held fill a concurrency of 2"
    );
    let ack = HandlerOutcome::ack().into();
    m.handle(
        finished(token, a1, 1, ack, 0, 0, Some((Some("a"), None))),
        at(0),
    );
    assert_eq!(started(&drain(&mut m, 0)), [a2], "a2 runs once a1 ended");
    assert_eq!(m.status().running, 1);
}

#[test]
fn a_batched_entry_is_acknowledged_with_its_last_message_and_siblings_are_not_handled_twice() {
    let mut m = machine(SubscriptionType::Shared, None, MachineConfig::new(8));
    let ids: Vec<Id> = (0..3).map(|index| Id { entry: 7, index }).collect();
    let tokens: Vec<Token> = ids
        .iter()
        .map(|id| start(&mut m, msg(*id, 3, None)).unwrap())
        .collect();
    m.handle(
        finished(
            tokens[0],
            ids[0],
            3,
            HandlerOutcome::ack().into(),
            0,
            0,
            None,
        ),
        at(0),
    );
    m.handle(
        finished(
            tokens[1],
            ids[1],
            3,
            HandlerOutcome::retry().into(),
            0,
            0,
            None,
        ),
        at(0),
    );
    assert_eq!(
        calls(&drain(&mut m, 0)),
        [("nack", ids[1])],
        "the ack of 0 is held"
    );
    // The entry comes back for 1: 0 is settled, 2 still runs.
    let mut again = None;
    for id in &ids {
        let delivery = Msg {
            count: Some(1),
            ..msg(*id, 3, None)
        };
        match receive(&mut m, delivery, 0) {
            Some(invoke) => again = Some((id.index, invoke.token)),
            None => assert_ne!(id.index, 1, "{id:?}"),
        }
    }
    let (index, token) = again.expect("1 handled again");
    assert_eq!(index, 1);
    m.handle(
        finished(token, ids[1], 3, HandlerOutcome::ack().into(), 0, 0, None),
        at(0),
    );
    m.handle(
        finished(
            tokens[2],
            ids[2],
            3,
            HandlerOutcome::drop().into(),
            0,
            0,
            None,
        ),
        at(0),
    );
    let mut acked: Vec<Id> = calls(&drain(&mut m, 0))
        .into_iter()
        .map(|(call, id)| {
            assert_eq!(call, "ack");
            id
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
    let ids: Vec<Id> = (0..2).map(|index| Id { entry: 3, index }).collect();
    let tokens: Vec<Token> = ids
        .iter()
        .map(|id| start(&mut m, msg(*id, 2, None)).unwrap())
        .collect();
    m.handle(
        finished(
            tokens[1],
            ids[1],
            2,
            HandlerOutcome::ack().into(),
            0,
            0,
            None,
        ),
        at(0),
    );
    let made: Vec<Cmd> = drain(&mut m, 0)
        .into_iter()
        .filter(|c| matches!(c, Command::AckIndex { .. }))
        .collect();
    assert!(matches!(
        &made[..],
        [Command::AckIndex { id, size, ack_set }]
            if *id == ids[1] && size.get() == 2 && ack_set == &vec![0b01]
    ));
}

#[test]
fn a_refused_retry_after_is_told_leaves_the_delivery_and_puts_its_index_back_out() {
    let mut m = machine(
        SubscriptionType::Shared,
        Some(Duration::from_secs(2)),
        MachineConfig::new(8),
    );
    let (id, sibling) = (Id { entry: 4, index: 0 }, Id { entry: 4, index: 1 });
    let t1 = start(&mut m, msg(id, 2, None)).unwrap();
    let t2 = start(&mut m, msg(sibling, 2, None)).unwrap();
    let long = HandlerOutcome::retry_after(Duration::from_secs(5));
    m.handle(finished(t1, id, 2, long.into(), 0, 0, None), at(0));
    let now = drain(&mut m, 0);
    assert_eq!(calls(&now), []);
    assert!(
        now.iter().any(
            |c| matches!(c, Command::Completed(done) if done.refused.is_some() && done.id == id)
        ),
        "the refusal is told: {now:?}"
    );
    // The sibling's retry brings the entry back; the refused one is handled again.
    m.handle(
        finished(t2, sibling, 2, HandlerOutcome::retry().into(), 0, 0, None),
        at(0),
    );
    assert_eq!(calls(&drain(&mut m, 0)), [("nack", sibling)]);
    let again = Msg {
        count: Some(1),
        ..msg(id, 2, None)
    };
    assert!(receive(&mut m, again, 0).is_some());
}

#[test]
fn an_acknowledgement_waits_for_the_publishes_and_a_failed_one_makes_it_a_retry() {
    let mut m = machine(SubscriptionType::Shared, None, MachineConfig::new(4));
    let (a, b, c) = (one(1), one(2), one(3));
    let ta = start(&mut m, msg(a, 1, None)).unwrap();
    let tb = start(&mut m, msg(b, 1, None)).unwrap();
    let tc = start(&mut m, msg(c, 1, None)).unwrap();
    // a: two publishes, both confirmed after it ended.
    m.handle(
        finished(ta, a, 1, HandlerOutcome::ack().into(), 0, 2, None),
        at(0),
    );
    assert_eq!(calls(&drain(&mut m, 0)), [], "held for its publishes");
    assert_eq!(m.status().awaiting_publishes, 1);
    let answered = |token| Event::Answered {
        token,
        origin: Origin::Handler,
        result: confirmed(),
    };
    m.handle(answered(ta), at(0));
    assert_eq!(calls(&drain(&mut m, 0)), [], "one left");
    m.handle(answered(ta), at(0));
    let now = drain(&mut m, 0);
    assert_eq!(calls(&now), [("ack", a)]);
    assert_eq!(releases(&now), [a], "released once settled");
    // b: its publish failed while it ran; it returns dead_letter, which copies nothing now.
    let failure = Event::Answered {
        token: tb,
        origin: Origin::Handler,
        result: failed(),
    };
    m.handle(failure, at(0));
    let poison = HandlerOutcome::dead_letter("poison").into();
    m.handle(
        finished(tb, b, 1, poison, 0, 1, Some((None, Some(b)))),
        at(0),
    );
    assert_eq!(
        calls(&drain(&mut m, 0)),
        [("nack", b)],
        "a retry, with no copy"
    );
    // c: confirmed while it ran: settled at once.
    m.handle(answered(tc), at(0));
    m.handle(
        finished(tc, c, 1, HandlerOutcome::drop().into(), 0, 1, None),
        at(0),
    );
    assert_eq!(calls(&drain(&mut m, 0)), [("ack", c)]);
    assert_eq!(m.status().awaiting_publishes, 0);
}

#[test]
fn a_copy_is_ordered_where_its_topic_is_declared_and_settles_on_its_answer() {
    let config = MachineConfig {
        dead_letter_topic: true,
        retry_topic: true,
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    let (a, b) = (one(1), one(2));
    let ta = start(&mut m, msg(a, 1, None)).unwrap();
    let tb = start(&mut m, msg(b, 1, None)).unwrap();
    let later = HandlerOutcome::retry_later(Duration::from_secs(60));
    let Event::Finished(mut ended) = finished(ta, a, 1, later.into(), 0, 0, Some((None, Some(a))))
    else {
        unreachable!()
    };
    ended.attempt = 2;
    m.handle(Event::Finished(ended), at(0));
    m.handle(
        finished(
            tb,
            b,
            1,
            Completion::OutOfAttempts,
            0,
            0,
            Some((None, Some(b))),
        ),
        at(0),
    );
    let now = drain(&mut m, 0);
    let copies: Vec<(Token, Republish, Kept)> = now
        .iter()
        .filter_map(|c| match c {
            Command::Republish(r) => Some((r.token, r.republish, r.kept)),
            _ => None,
        })
        .collect();
    let retry = Republish::RetryTopic {
        delay: Duration::from_secs(60),
        count: 3,
    };
    let dead = Republish::DeadLetter {
        reason: OUT_OF_ATTEMPTS,
    };
    assert_eq!(
        copies,
        [(ta, retry, a), (tb, dead, b)],
        "the retry copy counts one more"
    );
    assert_eq!(calls(&now), [], "both wait for their copies");
    m.handle(
        Event::Answered {
            token: ta,
            origin: Origin::Republish,
            result: confirmed(),
        },
        at(0),
    );
    m.handle(
        Event::Answered {
            token: tb,
            origin: Origin::Republish,
            result: failed(),
        },
        at(0),
    );
    let now = drain(&mut m, 0);
    assert_eq!(calls(&now), [("ack", a)], "b's copy failed: left");
    let told: Vec<(Kept, Completion)> = now
        .iter()
        .filter_map(|c| match c {
            Command::Completed(done) => Some((done.kept.unwrap(), done.completion)),
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        [(a, Completion::Rescheduled), (b, Completion::Rejected)],
        "the layers hear how each copy went"
    );
    let mut released = releases(&now);
    released.sort();
    assert_eq!(released, [a, b]);
}

#[test]
fn a_backoff_is_resolved_and_told_and_a_final_end_is_not() {
    let rules = SubscriptionRules::new("s", SubscriptionType::Shared, None)
        .with_backoff(crate::completion::Backoff::fixed(Duration::from_secs(3)));
    let mut m: Machine = SubscriptionMachine::new(rules, MachineConfig::new(4), entry_of);
    let (a, b) = (one(1), one(2));
    let ta = start(&mut m, msg(a, 1, None)).unwrap();
    let tb = start(&mut m, msg(b, 1, None)).unwrap();
    m.handle(
        finished(
            ta,
            a,
            1,
            HandlerOutcome::Backoff.into(),
            0,
            0,
            Some((None, Some(a))),
        ),
        at(0),
    );
    m.handle(
        finished(
            tb,
            b,
            1,
            HandlerOutcome::Retry.into(),
            0,
            0,
            Some((None, Some(b))),
        ),
        at(0),
    );
    let told: Vec<(Kept, Completion)> = drain(&mut m, 0)
        .iter()
        .filter_map(|c| match c {
            Command::Completed(done) => Some((done.kept.unwrap(), done.completion)),
            _ => None,
        })
        .collect();
    let resolved = HandlerOutcome::RetryAfter(Duration::from_secs(3)).into();
    assert_eq!(
        told,
        [(a, resolved)],
        "b's end was final: its layers heard it already"
    );
    assert_eq!(m.poll_timeout(), Some(at(3_000)));
}

#[test]
fn ordered_retries_keep_a_key_until_its_publishes_are_answered() {
    let config = MachineConfig {
        ordered_retries: true,
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::KeyShared, None, config);
    let (a1, a2, a3) = (one(1), one(2), one(3));
    let key = Some((Some("a"), None));
    let t1 = start(&mut m, msg(a1, 1, Some("a"))).unwrap();
    assert_eq!(start(&mut m, msg(a2, 1, Some("a"))), None);
    m.handle(
        finished(t1, a1, 1, HandlerOutcome::ack().into(), 0, 1, key),
        at(0),
    );
    assert_eq!(
        started(&drain(&mut m, 0)),
        [],
        "a1 keeps its key while its publish is unanswered"
    );
    let answer = |token, result| Event::Answered {
        token,
        origin: Origin::Handler,
        result,
    };
    m.handle(answer(t1, confirmed()), at(0));
    let now = drain(&mut m, 0);
    assert_eq!(calls(&now), [("ack", a1)]);
    assert_eq!(started(&now), [a2], "then a2 runs");
    let t2 = now
        .iter()
        .find_map(|c| match c {
            Command::Invoke(invoke) => Some(invoke.token),
            _ => None,
        })
        .unwrap();
    assert_eq!(start(&mut m, msg(a3, 1, Some("a"))), None);
    m.handle(
        finished(t2, a2, 1, HandlerOutcome::ack().into(), 0, 1, key),
        at(0),
    );
    m.handle(answer(t2, failed()), at(0));
    let now = drain(&mut m, 0);
    assert_eq!(calls(&now), [("nack", a2)]);
    assert_eq!(
        started(&now),
        [],
        "a2 failed: the key waits for it to come back"
    );
    assert!(
        start(&mut m, msg(a2, 1, Some("a"))).is_some(),
        "back, it takes its key again"
    );

    // Without ordered retries the key goes with the handler's end.
    let mut m = machine(SubscriptionType::KeyShared, None, MachineConfig::new(4));
    let t1 = start(&mut m, msg(a1, 1, Some("a"))).unwrap();
    assert_eq!(start(&mut m, msg(a2, 1, Some("a"))), None);
    m.handle(
        finished(t1, a1, 1, HandlerOutcome::ack().into(), 0, 1, key),
        at(0),
    );
    assert_eq!(
        started(&drain(&mut m, 0)),
        [a2],
        "the next of the key runs meanwhile"
    );
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
    let (a1, a2, a3, b1) = (one(1), one(2), one(3), one(4));
    let end = |m: &mut Machine, token, id: Id, outcome: HandlerOutcome, now| {
        let key = if id == b1 { "b" } else { "a" };
        m.handle(
            finished(
                token,
                id,
                1,
                outcome.into(),
                now,
                0,
                Some((Some(key), None)),
            ),
            at(now),
        );
        drain(m, now)
    };
    let t = start(&mut m, msg(a1, 1, Some("a"))).unwrap();
    assert_eq!(
        calls(&end(&mut m, t, a1, HandlerOutcome::retry(), 0)),
        [("nack", a1)]
    );
    assert_eq!(
        start(&mut m, msg(a2, 1, Some("a"))),
        None,
        "a2 held while a1 is away"
    );
    let t = start(&mut m, msg(b1, 1, Some("b"))).expect("other keys flow");
    assert_eq!(started(&end(&mut m, t, b1, HandlerOutcome::ack(), 0)), []);
    let t = start(&mut m, msg(a1, 1, Some("a"))).expect("a1 back: it takes its key again");
    let wait = HandlerOutcome::retry_after(Duration::from_secs(1));
    assert_eq!(started(&end(&mut m, t, a1, wait, 5)), []);
    assert_eq!(start(&mut m, msg(a3, 1, Some("a"))), None, "a3 held too");
    assert!(
        m.wants_delivery(),
        "held ones do not keep a1 from being received"
    );
    assert_eq!(
        m.poll_timeout(),
        Some(at(1005)),
        "the wait first; the key's after it"
    );
    let _ = drain(&mut m, 1005);
    let t = start(&mut m, msg(a1, 1, Some("a"))).unwrap();
    let now = end(&mut m, t, a1, HandlerOutcome::ack(), 1005);
    assert_eq!(started(&now), [a2], "then a2, parked meanwhile");
    assert!(now
        .iter()
        .any(|c| matches!(c, Command::Acquire(id) if *id == a2)));
    let t = match now.iter().find(|c| matches!(c, Command::Invoke(_))) {
        Some(Command::Invoke(invoke)) => invoke.token,
        _ => unreachable!(),
    };
    assert_eq!(
        started(&end(&mut m, t, a2, HandlerOutcome::ack(), 1005)),
        [a3],
        "then a3"
    );
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
    let (a1, a2) = (one(1), one(2));
    let t = start(&mut m, msg(a1, 1, Some("a"))).unwrap();
    m.handle(
        finished(
            t,
            a1,
            1,
            HandlerOutcome::retry().into(),
            0,
            0,
            Some((Some("a"), None)),
        ),
        at(0),
    );
    assert_eq!(start(&mut m, msg(a2, 1, Some("a"))), None);
    let grace = super::RETRY_RETURN_GRACE.as_millis() as u64;
    let _ = drain(&mut m, 0);
    assert_eq!(m.poll_timeout(), Some(at(grace)));
    assert_eq!(started(&drain(&mut m, grace - 1)), []);
    let now = drain(&mut m, grace);
    assert_eq!(started(&now), [a2], "a2 goes on without a1");
    assert!(
        now.contains(&Command::Notice(Notice::NotBack(a2))),
        "{now:?}"
    );
    assert_eq!(m.status().running, 1);
}

/// A transactional machine, one transaction per delivery unless `group`.
fn transactional(key_ordered: bool, group: Option<(u32, u64)>) -> Machine {
    let policy = match group {
        Some((max, wait)) => TransactionPolicy::new()
            .group(NonZeroU32::new(max).unwrap(), Duration::from_millis(wait)),
        None => TransactionPolicy::new(),
    };
    let config = MachineConfig {
        transactional: Some(policy),
        key_ordered,
        dead_letter_topic: true,
        ..MachineConfig::new(8)
    };
    machine(SubscriptionType::Shared, None, config)
}

/// A commit as a test reads it: the transaction, its handle, the ids it acknowledges.
type CommitSeen = (TxnId, Handle, Vec<Id>);

/// The transactions `commands` open, commit (with their acks) and abort.
fn txn_commands(commands: &[Cmd]) -> (Vec<TxnId>, Vec<CommitSeen>, Vec<Handle>) {
    let (mut opens, mut commits, mut aborts) = (Vec::new(), Vec::new(), Vec::new());
    for command in commands {
        match command {
            Command::Open { txn, .. } => opens.push(*txn),
            Command::Commit(commit) => commits.push((
                commit.txn,
                commit.handle,
                commit.acks.iter().map(|(id, _)| *id).collect(),
            )),
            Command::Abort(handle) => aborts.push(*handle),
            _ => {}
        }
    }
    (opens, commits, aborts)
}

/// Open transaction `txn` as handle `handle`: the invocations that waited for it.
fn open(m: &mut Machine, txn: TxnId, handle: Handle) -> Vec<Invoke<Msg, Handle>> {
    m.handle(
        Event::Opened {
            txn,
            result: Ok(handle),
        },
        at(0),
    );
    drain(m, 0)
        .into_iter()
        .filter_map(|c| match c {
            Command::Invoke(invoke) => Some(*invoke),
            _ => None,
        })
        .collect()
}

#[test]
fn a_delivery_waits_for_its_transaction_and_an_ack_commits_once_released() {
    let mut m = transactional(false, None);
    let id = one(7);
    assert_eq!(
        start(&mut m, msg(id, 1, None)),
        None,
        "waits for its transaction"
    );
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    assert_eq!(opens.len(), 1);
    let invoked = open(&mut m, opens[0], 40);
    assert!(matches!(
        &invoked[..],
        [Invoke {
            txn: Txn::In(40),
            ..
        }]
    ));
    let token = invoked[0].token;
    m.handle(
        finished(token, id, 1, HandlerOutcome::ack().into(), 0, 0, None),
        at(0),
    );
    let now = drain(&mut m, 0);
    let (_, commits, _) = txn_commands(&now);
    assert_eq!(commits, [(opens[0], 40, vec![id])]);
    assert!(
        now.contains(&Command::Acquire(id)),
        "in flight while the commit runs"
    );
    assert_eq!(releases(&now), [id], "out of the handlers' hands");
    m.handle(
        Event::Committed {
            txn: opens[0],
            result: Ok(()),
        },
        at(5),
    );
    let now = drain(&mut m, 5);
    assert_eq!(calls(&now), [], "no plain acknowledgement");
    assert_eq!(releases(&now), [id], "the commit's hold let go");
    assert_eq!(m.status().transactions, 0);
}

#[test]
fn a_transaction_that_does_not_open_runs_none_of_its_deliveries() {
    let mut m = transactional(false, None);
    let id = one(7);
    start(&mut m, msg(id, 1, None));
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    m.handle(
        Event::Opened {
            txn: opens[0],
            result: Err("the coordinator is down".into()),
        },
        at(0),
    );
    let invoked: Vec<_> = drain(&mut m, 0);
    assert!(
        matches!(&invoked[..], [Command::Invoke(invoke)] if matches!(&invoke.txn, Txn::NotOpened(why) if why.contains("down"))),
        "{invoked:?}"
    );
}

#[test]
fn a_retry_aborts_at_once_then_asks_for_the_message_again() {
    let mut m = transactional(false, None);
    let id = one(7);
    start(&mut m, msg(id, 1, None));
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    let token = open(&mut m, opens[0], 40)[0].token;
    m.handle(
        finished(token, id, 1, HandlerOutcome::retry().into(), 0, 0, None),
        at(0),
    );
    let now = drain(&mut m, 0);
    assert_eq!(txn_commands(&now).2, [40]);
    assert_eq!(calls(&now), [("nack", id)]);
    let abort = now.iter().position(|c| matches!(c, Command::Abort(_)));
    let nack = now.iter().position(|c| matches!(c, Command::Nack(_)));
    assert!(abort < nack, "the abort first");
}

#[test]
fn a_copy_aborts_the_handler_s_transaction_and_commits_its_own_once_confirmed() {
    let mut m = transactional(false, None);
    let (a, b) = (one(7), one(8));
    start(&mut m, msg(a, 1, None));
    start(&mut m, msg(b, 1, None));
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    let ta = open(&mut m, opens[0], 40)[0].token;
    let tb = open(&mut m, opens[1], 41)[0].token;
    let dead = HandlerOutcome::dead_letter("poison").into();
    m.handle(finished(ta, a, 1, dead, 0, 0, Some((None, Some(a)))), at(0));
    m.handle(finished(tb, b, 1, dead, 0, 0, Some((None, Some(b)))), at(0));
    let now = drain(&mut m, 0);
    let (copy_opens, _, aborts) = txn_commands(&now);
    assert_eq!(aborts, [40, 41], "what the handlers published goes at once");
    assert_eq!(copy_opens.len(), 2, "each copy in a transaction of its own");
    for (txn, handle) in copy_opens.iter().zip([50, 51]) {
        m.handle(
            Event::Opened {
                txn: *txn,
                result: Ok(handle),
            },
            at(1),
        );
    }
    let now = drain(&mut m, 1);
    let copies: Vec<(Token, Txn<Handle>)> = now
        .iter()
        .filter_map(|c| match c {
            Command::Republish(r) => Some((r.token, r.txn.clone())),
            _ => None,
        })
        .collect();
    assert!(
        matches!(&copies[..], [(t1, Txn::In(50)), (t2, Txn::In(51))] if *t1 == ta && *t2 == tb)
    );
    m.handle(
        Event::Answered {
            token: ta,
            origin: Origin::Republish,
            result: confirmed(),
        },
        at(1),
    );
    m.handle(
        Event::Answered {
            token: tb,
            origin: Origin::Republish,
            result: failed(),
        },
        at(1),
    );
    let (_, commits, aborts) = txn_commands(&drain(&mut m, 1));
    assert_eq!(
        commits,
        [(copy_opens[0], 50, vec![a])],
        "a confirmed copy commits"
    );
    assert_eq!(
        aborts,
        [51],
        "a failed one aborts, its message left to come back"
    );
}

#[test]
fn a_group_commits_once_full_and_every_delivery_acknowledged() {
    let mut m = transactional(false, Some((3, 1_000)));
    for entry in [7, 8, 9, 10] {
        start(&mut m, msg(one(entry), 1, None));
    }
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    assert_eq!(opens.len(), 2, "the first is full after three");
    let tokens: Vec<Token> = open(&mut m, opens[0], 40).iter().map(|i| i.token).collect();
    assert_eq!(tokens.len(), 3);
    for (token, entry) in tokens.iter().zip([7, 8, 9]).rev().skip(1) {
        m.handle(
            finished(
                *token,
                one(entry),
                1,
                HandlerOutcome::ack().into(),
                10,
                0,
                None,
            ),
            at(10),
        );
    }
    assert_eq!(txn_commands(&drain(&mut m, 11)).1, [], "one still runs");
    m.handle(
        finished(
            tokens[2],
            one(9),
            1,
            HandlerOutcome::ack().into(),
            12,
            0,
            None,
        ),
        at(12),
    );
    let (_, commits, _) = txn_commands(&drain(&mut m, 12));
    assert_eq!(commits, [(opens[0], 40, vec![one(8), one(7), one(9)])]);
}

#[test]
fn a_group_that_is_not_full_commits_once_its_wait_has_passed() {
    let mut m = transactional(false, Some((10, 1_000)));
    start(&mut m, msg(one(7), 1, None));
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    let token = open(&mut m, opens[0], 40)[0].token;
    m.handle(
        finished(token, one(7), 1, HandlerOutcome::ack().into(), 3, 0, None),
        at(3),
    );
    assert_eq!(m.poll_timeout(), Some(at(1_000)));
    assert_eq!(txn_commands(&drain(&mut m, 999)).1, []);
    assert_eq!(
        txn_commands(&drain(&mut m, 1_000)).1,
        [(opens[0], 40, vec![one(7)])]
    );
}

#[test]
fn a_delivery_that_does_not_acknowledge_aborts_its_group_and_the_others_come_back() {
    let mut m = transactional(false, Some((3, 1_000)));
    for entry in [7, 8, 9] {
        start(&mut m, msg(one(entry), 1, None));
    }
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    let tokens: Vec<Token> = open(&mut m, opens[0], 40).iter().map(|i| i.token).collect();
    m.handle(
        finished(
            tokens[0],
            one(7),
            1,
            HandlerOutcome::ack().into(),
            1,
            0,
            None,
        ),
        at(1),
    );
    m.handle(
        finished(
            tokens[1],
            one(8),
            1,
            HandlerOutcome::retry().into(),
            2,
            0,
            None,
        ),
        at(2),
    );
    let now = drain(&mut m, 2);
    assert_eq!(txn_commands(&now).2, [40], "aborted once");
    assert_eq!(
        calls(&now),
        [("nack", one(7)), ("nack", one(8))],
        "the acknowledged one too"
    );
    m.handle(
        finished(
            tokens[2],
            one(9),
            1,
            HandlerOutcome::ack().into(),
            3,
            0,
            None,
        ),
        at(3),
    );
    assert_eq!(
        calls(&drain(&mut m, 3)),
        [("nack", one(9))],
        "acknowledged in an aborted one"
    );
    assert_eq!(m.status().transactions, 0);
}

#[test]
fn a_failed_commit_asks_for_the_messages_again_and_aborts_where_nothing_was_committed() {
    let mut m = transactional(false, None);
    for entry in [7, 8] {
        start(&mut m, msg(one(entry), 1, None));
    }
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    for (txn, (handle, entry)) in opens.iter().zip([(40, 7), (41, 8)]) {
        let token = open(&mut m, *txn, handle)[0].token;
        m.handle(
            finished(
                token,
                one(entry),
                1,
                HandlerOutcome::ack().into(),
                0,
                0,
                None,
            ),
            at(0),
        );
    }
    let _ = drain(&mut m, 0);
    m.handle(
        Event::Committed {
            txn: opens[0],
            result: Err(CommitFailure::Failed),
        },
        at(10),
    );
    m.handle(
        Event::Committed {
            txn: opens[1],
            result: Err(CommitFailure::NotSent),
        },
        at(10),
    );
    let now = drain(&mut m, 10);
    assert_eq!(calls(&now), [("nack", one(7)), ("nack", one(8))]);
    assert_eq!(
        txn_commands(&now).2,
        [41],
        "a commit that sent nothing is aborted"
    );
}

#[test]
fn no_delivery_is_taken_while_commits_in_flight_are_unanswered() {
    let mut m = transactional(false, None);
    let bound = COMMITS_IN_FLIGHT as u64;
    for entry in 0..bound {
        assert!(m.wants_delivery(), "{entry} commits unanswered");
        start(&mut m, msg(one(entry), 1, None));
        let (opens, _, _) = txn_commands(&drain(&mut m, 0));
        let token = open(&mut m, opens[0], entry as u32)[0].token;
        m.handle(
            finished(
                token,
                one(entry),
                1,
                HandlerOutcome::ack().into(),
                0,
                0,
                None,
            ),
            at(0),
        );
        let _ = drain(&mut m, 0);
    }
    assert!(!m.wants_delivery(), "{bound} commits unanswered");
    m.handle(
        Event::Committed {
            txn: TxnId(2),
            result: Err(CommitFailure::Failed),
        },
        at(3),
    );
    assert!(m.wants_delivery(), "a failed commit is an answer too");
}

#[test]
fn a_transaction_acknowledging_a_whole_entry_acknowledges_it_once_without_an_index() {
    let policy = crate::batch::BatchPolicy::new(core::num::NonZeroUsize::new(3).unwrap());
    let config = MachineConfig {
        transactional: Some(TransactionPolicy::new()),
        batch: Some(policy),
        ..MachineConfig::new(4)
    };
    let mut m = machine(SubscriptionType::Shared, None, config);
    let (a, b, c) = (
        Id { entry: 2, index: 0 },
        Id { entry: 2, index: 1 },
        Id { entry: 3, index: 0 },
    );
    for delivery in [msg(a, 2, None), msg(b, 2, None), msg(c, 2, None)] {
        assert!(receive(&mut m, delivery, 0).is_none(), "gathered");
    }
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    let invoked = open(&mut m, opens[0], 40);
    let Some(Invoke {
        token,
        members: Members::Batch(batch),
        ..
    }) = invoked.into_iter().next()
    else {
        panic!("the batch runs once its transaction is open")
    };
    for (i, gathered) in batch.iter().enumerate() {
        let token = Token(token.0 + i as u32);
        m.handle(
            finished(
                token,
                gathered.delivery.id,
                2,
                HandlerOutcome::ack().into(),
                0,
                0,
                None,
            ),
            at(0),
        );
    }
    m.handle(Event::BatchDone(batch), at(0));
    let commits: Vec<_> = drain(&mut m, 0)
        .into_iter()
        .filter_map(|c| match c {
            Command::Commit(commit) => Some(commit.acks),
            _ => None,
        })
        .collect();
    assert_eq!(
        commits,
        [vec![(a, None), (c, slot(c, 2))]],
        "entry 2 whole, once; entry 3 at its index"
    );
}

#[test]
fn a_key_stays_with_its_delivery_until_its_transaction_ends() {
    let mut m = transactional(true, None);
    let (first, second) = (one(7), one(8));
    start(&mut m, msg(first, 1, Some("k")));
    start(&mut m, msg(second, 1, Some("k")));
    let (opens, _, _) = txn_commands(&drain(&mut m, 0));
    assert_eq!(opens.len(), 1, "the second waits for the key");
    let token = open(&mut m, opens[0], 40)[0].token;
    m.handle(
        finished(
            token,
            first,
            1,
            HandlerOutcome::ack().into(),
            0,
            0,
            Some((Some("k"), None)),
        ),
        at(0),
    );
    assert_eq!(
        txn_commands(&drain(&mut m, 0)).0,
        [],
        "the key is held while the commit runs"
    );
    m.handle(
        Event::Committed {
            txn: opens[0],
            result: Ok(()),
        },
        at(1),
    );
    assert_eq!(
        txn_commands(&drain(&mut m, 1)).0.len(),
        1,
        "the second's transaction"
    );
}

#[test]
fn a_stop_lets_held_deliveries_go_and_abandon_cuts_the_waits_short() {
    let mut m = machine(SubscriptionType::KeyShared, None, MachineConfig::new(4));
    let (a1, a2, b) = (one(1), one(2), one(3));
    let t1 = start(&mut m, msg(a1, 1, Some("a"))).unwrap();
    assert_eq!(start(&mut m, msg(a2, 1, Some("a"))), None);
    let tb = start(&mut m, msg(b, 1, Some("b"))).unwrap();
    let wait = HandlerOutcome::retry_after(Duration::from_secs(9)).into();
    m.handle(
        finished(tb, b, 1, wait, 0, 0, Some((Some("b"), None))),
        at(0),
    );
    m.handle(Event::Stop, at(0));
    let now = drain(&mut m, 0);
    assert!(releases(&now).contains(&a2), "a2 never starts");
    m.handle(
        finished(
            t1,
            a1,
            1,
            HandlerOutcome::ack().into(),
            0,
            0,
            Some((Some("a"), None)),
        ),
        at(0),
    );
    assert_eq!(
        started(&drain(&mut m, 0)),
        [],
        "nothing starts once stopping"
    );
    m.handle(Event::Abandon, at(0));
    assert_eq!(
        drain(&mut m, 0),
        [Command::Notice(Notice::WaitsAbandoned(1))]
    );
    assert!(m.status().is_settled());
}

impl PartialEq for Command<Id, Msg, Kept, Handle> {
    /// Enough of an equality for the tests' comparisons.
    fn eq(&self, other: &Self) -> bool {
        alloc::format!("{self:?}") == alloc::format!("{other:?}")
    }
}

#[test]
fn debug_of_a_machine_shows_its_status() {
    let m = machine(SubscriptionType::Shared, None, MachineConfig::new(1));
    assert!(alloc::format!("{m:?}").contains("Status"));
    let _ = "".to_string();
}
