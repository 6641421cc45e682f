//! The subscription machine driven through events only, against a model of a broker, its
//! transaction coordinator and a driver, for any interleaving: deliveries of batched entries,
//! one-message and batch handlers, keys, outcomes, copies, publishes confirmed, failed or never
//! answered, transactions opened or not, committed, aborted or timed out, crashes and time.
//!
//! After every run: nothing is acknowledged before everything its run published (and its copy)
//! is confirmed; nothing is lost (every message ends acknowledged); every delivery received is
//! released exactly once; and, under transactions, every input's output is seen exactly once
//! and only with its input acknowledged.

extern crate std;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use proptest::prelude::*;

use super::tests::{entry_of, slot, Handle, Id, Kept, Machine, Msg};
use super::*;
use crate::broker::{Origin, Token};
use crate::completion::Completion;
use crate::publish::PublishError;
use crate::transaction::TransactionPolicy;
use crate::{HandlerOutcome, MessageId};

/// What a handler run answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Ack,
    Drop,
    Retry,
    RetryAfter(u64),
    Panic,
    DeadLetter,
    RetryLater,
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        6 => Just(Answer::Ack),
        1 => Just(Answer::Drop),
        2 => Just(Answer::Retry),
        1 => (1u64..50).prop_map(Answer::RetryAfter),
        1 => Just(Answer::Panic),
        1 => Just(Answer::DeadLetter),
        1 => Just(Answer::RetryLater),
    ]
}

/// How the broker answers one request (a publish, an open, a commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Yes,
    No,
    /// Not before the service crashes (a publish fails 300 ms later, as a producer's
    /// operation timeout fails it).
    Never,
}

fn said() -> impl Strategy<Value = Said> {
    prop_oneof![7 => Just(Said::Yes), 2 => Just(Said::No), 1 => Just(Said::Never)]
}

/// How a run of the test's service is set up.
#[derive(Debug, Clone, Copy)]
struct Setup {
    concurrency: usize,
    /// A batch handler's max messages, for a batch handler.
    batch: Option<usize>,
    /// How many keys the messages spread over (0: no keys).
    keys: u64,
    transactional: bool,
    /// With transactions: up to so many deliveries in one.
    group: u32,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        1usize..5,
        prop::option::of(1usize..5),
        0u64..3,
        any::<bool>(),
        1u32..4,
    )
        .prop_map(|(concurrency, batch, keys, transactional, group)| Setup {
            concurrency,
            batch,
            keys,
            transactional,
            group,
        })
}

/// The broker's view of one subscription: entries sent whole, acknowledged by entry (or, in
/// a transaction, by message), redelivered on a negative acknowledgement or after the ack
/// timeout, counting each redelivery.
#[derive(Debug, Default)]
struct Broker {
    sizes: Vec<u32>,
    acked: BTreeSet<Id>,
    to_send: VecDeque<u64>,
    out: BTreeMap<u64, u64>,
    sent: BTreeMap<u64, u32>,
}

impl Broker {
    fn entry_done(&self, entry: u64) -> bool {
        (0..self.sizes[entry as usize]).all(|index| self.acked.contains(&Id { entry, index }))
    }

    fn send(&mut self, now: u64, queue: &mut VecDeque<Msg>, keys: u64) {
        while let Some(entry) = self.to_send.pop_front() {
            if self.entry_done(entry) || self.out.contains_key(&entry) {
                continue;
            }
            self.out.insert(entry, now);
            let count = self.sent.entry(entry).or_default();
            let size = self.sizes[entry as usize];
            for index in 0..size {
                let id = Id { entry, index };
                if self.acked.contains(&id) {
                    continue;
                }
                queue.push_back(Msg {
                    id,
                    slot: slot(id, size),
                    count: Some(*count),
                    key: (keys > 0).then(|| format!("k{}", entry % keys)),
                    republished: 0,
                });
            }
            *count += 1;
        }
    }

    fn ack_entry(&mut self, id: Id) {
        for index in 0..self.sizes[id.entry as usize] {
            self.acked.insert(Id {
                entry: id.entry,
                index,
            });
        }
        self.settled(id.entry);
    }

    fn settled(&mut self, entry: u64) {
        if self.entry_done(entry) {
            self.out.remove(&entry);
        }
    }

    fn redeliver(&mut self, entry: u64) {
        if self.out.remove(&entry).is_some() {
            self.to_send.push_back(entry);
        }
    }

    fn expire(&mut self, now: u64) {
        let expired: Vec<u64> = (self.out.iter())
            .filter(|(_, sent)| now >= **sent + 100)
            .map(|(entry, _)| *entry)
            .collect();
        for entry in expired {
            self.redeliver(entry);
        }
    }

    fn done(&self) -> bool {
        (0..self.sizes.len() as u64).all(|entry| self.entry_done(entry))
    }
}

/// One transaction at the coordinator.
#[derive(Debug, Default)]
struct TxnRecord {
    opened_at: u64,
    /// The outputs published in it: each run's one message, or a copy, by input.
    published: Vec<Id>,
    /// A send in it failed.
    failed_send: bool,
    ended: bool,
}

/// The transaction coordinator: it aborts a transaction left open 500 ms.
#[derive(Debug, Default)]
struct Coordinator {
    txns: BTreeMap<Handle, TxnRecord>,
    /// The outputs seen by a reader of the output topics, by input.
    visible: BTreeMap<Id, u32>,
    next: Handle,
}

impl Coordinator {
    fn open(&mut self, now: u64) -> Handle {
        self.next += 1;
        self.txns.insert(
            self.next,
            TxnRecord {
                opened_at: now,
                ..TxnRecord::default()
            },
        );
        self.next
    }

    fn timed_out(&self, handle: Handle, now: u64) -> bool {
        self.txns[&handle].ended || now >= self.txns[&handle].opened_at + 500
    }
}

/// One handler run as the test follows it (outside transactions).
#[derive(Debug, Default, Clone)]
struct Attempt {
    message: Option<Id>,
    issued: u32,
    confirmed: u32,
    failed: bool,
    /// The copy ordered: `Some(true)` once confirmed.
    copy: Option<bool>,
    acknowledging: bool,
    incarnation: u32,
}

impl Attempt {
    fn all_confirmed(&self) -> bool {
        self.acknowledging
            && !self.failed
            && self.confirmed == self.issued
            && self.copy != Some(false)
    }
}

/// An invocation running.
#[derive(Debug)]
struct Running {
    token: Token,
    members: Vec<(Msg, Plan)>,
    storage: Option<Vec<Gathered<Msg>>>,
    txn: Txn<Handle>,
}

/// A request not answered yet: a publish (its delivery, origin, input, transaction), an
/// open, or a commit.
#[derive(Debug)]
enum Pending {
    Publish(Token, Origin, Id, Said, u64),
    Open(TxnId, Said),
    Commit(TxnId, Handle, Vec<(Id, Option<BatchSlot>)>),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn nothing_is_lost_or_acknowledged_early_and_transactions_are_exactly_once(
        setup in setup(),
        sizes in proptest::collection::vec(1u32..4, 1..9),
        answers in proptest::collection::vec(answer(), 64),
        publishes in proptest::collection::vec(0u32..3, 64),
        replies in proptest::collection::vec(said(), 64),
        picks in proptest::collection::vec(any::<u8>(), 512),
    ) {
        run(setup, sizes, answers, publishes, replies, picks)?;
    }
}

fn config(setup: &Setup) -> MachineConfig {
    let policy = setup.batch.map(|max| {
        crate::batch::BatchPolicy::new(core::num::NonZeroUsize::new(max).unwrap())
            .max_wait(Duration::from_millis(20))
    });
    let group = core::num::NonZeroU32::new(setup.group).unwrap();
    MachineConfig {
        dead_letter_topic: true,
        retry_topic: !setup.transactional,
        max_attempts: Some(6),
        batch: policy,
        key_ordered: setup.keys > 0,
        transactional: setup
            .transactional
            .then(|| TransactionPolicy::new().group(group, Duration::from_millis(30))),
        ..MachineConfig::new(setup.concurrency)
    }
}

fn fresh(setup: &Setup) -> Machine {
    let rules = SubscriptionRules::new(
        "s",
        SubscriptionType::Shared,
        Some(Duration::from_millis(100)),
    );
    SubscriptionMachine::new(rules, config(setup), entry_of)
}

#[allow(clippy::too_many_lines)]
fn run(
    setup: Setup,
    sizes: Vec<u32>,
    answers: Vec<Answer>,
    publishes: Vec<u32>,
    replies: Vec<Said>,
    picks: Vec<u8>,
) -> Result<(), TestCaseError> {
    let mut m = fresh(&setup);
    let mut broker = Broker {
        to_send: (0..sizes.len() as u64).collect(),
        sizes: sizes.clone(),
        ..Broker::default()
    };
    let mut coordinator = Coordinator::default();
    let mut queue: VecDeque<Msg> = VecDeque::new();
    let mut running: Vec<Running> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut attempts: BTreeMap<Token, Attempt> = BTreeMap::new();
    let mut runs_of: BTreeMap<Id, usize> = BTreeMap::new();
    let mut dead_lettered: BTreeSet<Id> = BTreeSet::new();
    let (mut received, mut acquired, mut released) = (0i64, 0i64, 0i64);
    let (mut crashes, mut next_reply, mut now, mut opens) = (0u32, 0usize, 0u64, 0u32);
    let mut picks = picks.iter().cycle();
    let mut reply = |late: bool| {
        next_reply += 1;
        if late {
            Said::Yes
        } else {
            replies[next_reply % replies.len()]
        }
    };
    for _step in 0..4_000 {
        broker.send(now, &mut queue, setup.keys);
        while m.wants_delivery() {
            let Some(delivery) = queue.pop_front() else {
                break;
            };
            received += 1;
            if let Some(invoke) = super::tests::receive(&mut m, delivery, now) {
                running.push(invoked(invoke));
            }
        }
        // Carry out what the machine asks.
        while let Some(command) = m.poll(at(now)) {
            match command {
                Command::Invoke(invoke) => running.push(invoked(*invoke)),
                Command::Ack(id) => {
                    if setup.transactional {
                        prop_assert!(
                            broker.acked.contains(&id),
                            "{:?} acknowledged outside its transaction",
                            id
                        );
                    } else {
                        let ok = attempts.values().any(|a| {
                            a.message == Some(id) && a.incarnation == crashes && a.all_confirmed()
                        });
                        prop_assert!(
                            ok,
                            "{:?} acknowledged before its publishes were confirmed",
                            id
                        );
                    }
                    broker.ack_entry(id);
                }
                Command::AckIndex { .. } => prop_assert!(false, "index acks are off"),
                Command::Nack(id) => broker.redeliver(id.entry),
                Command::Republish(copy) => {
                    let late = runs_of.get(&copy.kept).copied().unwrap_or(0) > 4;
                    let said = match &copy.txn {
                        Txn::NotOpened(_) => Said::No,
                        _ => reply(late),
                    };
                    if let Some(attempt) = attempts.get_mut(&copy.token) {
                        attempt.copy = Some(false);
                    }
                    if let Txn::In(handle) = copy.txn {
                        coordinator
                            .txns
                            .get_mut(&handle)
                            .unwrap()
                            .published
                            .push(copy.kept);
                    }
                    pending.push(Pending::Publish(
                        copy.token,
                        Origin::Republish,
                        copy.kept,
                        said,
                        now,
                    ));
                }
                Command::Completed(_) | Command::Notice(_) => {}
                Command::Open { txn, .. } => {
                    opens += 1;
                    pending.push(Pending::Open(txn, reply(opens > 30)));
                }
                Command::Commit(commit) => {
                    pending.push(Pending::Commit(commit.txn, commit.handle, commit.acks));
                }
                Command::Abort(handle) => {
                    coordinator.txns.get_mut(&handle).unwrap().ended = true;
                }
                Command::Acquire(_) => acquired += 1,
                Command::Release(_) => released += 1,
            }
        }
        prop_assert!(
            released <= received + acquired,
            "released more than received"
        );
        let pick = *picks.next().unwrap() as usize;
        match pick % 9 {
            // A running invocation ends, each delivery by its own answer.
            0..=3 if !running.is_empty() => {
                let Running {
                    token,
                    members,
                    storage,
                    txn,
                } = running.swap_remove(pick % running.len());
                for (i, (delivery, plan)) in members.into_iter().enumerate() {
                    let token = Token(token.0 + i as u32);
                    let id = delivery.id;
                    let n = runs_of.entry(id).or_default();
                    let late = *n >= 4;
                    let answer = match late {
                        true => Answer::Ack,
                        false => {
                            answers[(id.entry as usize * 7 + id.index as usize * 3 + *n)
                                % answers.len()]
                        }
                    };
                    *n += 1;
                    let step = plan.step(txn.not_opened(), None, false);
                    let completion = match step {
                        Step::Call => match answer {
                            Answer::Ack => HandlerOutcome::ack().into(),
                            Answer::Drop => HandlerOutcome::drop().into(),
                            Answer::Retry => HandlerOutcome::retry().into(),
                            Answer::RetryAfter(ms) => {
                                HandlerOutcome::retry_after(Duration::from_millis(ms)).into()
                            }
                            Answer::Panic => Completion::Panicked,
                            Answer::DeadLetter => HandlerOutcome::dead_letter("poison").into(),
                            Answer::RetryLater => {
                                HandlerOutcome::retry_later(Duration::from_secs(60)).into()
                            }
                        },
                        Step::OutOfAttempts => Completion::OutOfAttempts,
                        Step::NotOpened(_) => HandlerOutcome::retry().into(),
                        other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
                    };
                    let mut issued = 0;
                    if matches!(step, Step::Call) {
                        match &txn {
                            // In a transaction: one output a run, sent into it.
                            Txn::In(handle) => {
                                let record = coordinator.txns.get_mut(handle).unwrap();
                                record.published.push(id);
                                record.failed_send |= !late && reply(late) == Said::No;
                            }
                            // A batch handler's publishes are counted per call: none here.
                            _ if storage.is_some() => {}
                            _ => {
                                issued = if late {
                                    1
                                } else {
                                    publishes[(id.entry as usize + *n) % publishes.len()]
                                };
                                for _ in 0..issued {
                                    let said = reply(late);
                                    pending.push(Pending::Publish(
                                        token,
                                        Origin::Handler,
                                        id,
                                        said,
                                        now,
                                    ));
                                }
                            }
                        }
                    }
                    let acknowledging = matches!(
                        completion,
                        Completion::Returned(HandlerOutcome::Ack | HandlerOutcome::Drop)
                    ) || (completion.may_republish());
                    attempts.insert(
                        token,
                        Attempt {
                            message: Some(id),
                            issued,
                            acknowledging,
                            incarnation: crashes,
                            ..Attempt::default()
                        },
                    );
                    let kept = (!completion.is_final()).then_some(id);
                    let key = delivery.key.clone().filter(|_| m.config().key_ordered);
                    let tail =
                        (key.is_some() || kept.is_some()).then(|| Box::new(Tail { key, kept }));
                    let attempt = delivery.count.unwrap_or(0);
                    m.handle(
                        Event::Finished(Finished {
                            token,
                            delivered: Delivered {
                                id,
                                batch: delivery.slot.map(BatchSlot::place),
                            },
                            completion,
                            at: at(now),
                            publishes: issued,
                            attempt,
                            tail,
                        }),
                        at(now),
                    );
                }
                if let Some(storage) = storage {
                    m.handle(Event::BatchDone(storage), at(now));
                }
            }
            // The broker answers a request.
            4..=6 if !pending.is_empty() => {
                let index = pick % pending.len();
                let due = match &pending[index] {
                    Pending::Publish(_, _, _, Said::Never, made) => now >= made + 300,
                    _ => true,
                };
                if due {
                    match pending.swap_remove(index) {
                        Pending::Publish(token, origin, input, said, _) => {
                            let ok = said == Said::Yes;
                            if let Some(attempt) = attempts.get_mut(&token) {
                                match origin {
                                    Origin::Republish => attempt.copy = Some(ok),
                                    _ => {
                                        attempt.confirmed += u32::from(ok);
                                        attempt.failed |= !ok;
                                    }
                                }
                            }
                            if origin == Origin::Republish && ok && !setup.transactional {
                                dead_lettered.insert(input);
                            }
                            let result = match ok {
                                true => Ok(MessageId::new(&[1, 0, -1])),
                                false => Err(PublishError::NoBroker),
                            };
                            m.handle(
                                Event::Answered {
                                    token,
                                    origin,
                                    result,
                                },
                                at(now),
                            );
                        }
                        Pending::Open(txn, said) => {
                            let result = match said {
                                Said::Yes | Said::Never => Ok(coordinator.open(now)),
                                Said::No => Err("the coordinator refused".into()),
                            };
                            m.handle(Event::Opened { txn, result }, at(now));
                        }
                        Pending::Commit(txn, handle, acks) => {
                            let result = commit(&mut coordinator, &mut broker, handle, &acks, now);
                            m.handle(Event::Committed { txn, result }, at(now));
                        }
                    }
                }
            }
            // The service crashes: its machine, handlers and requests go; the broker sends
            // again what was not acknowledged; open transactions time out.
            7 if pick.is_multiple_of(5) && crashes < 3 => {
                crashes += 1;
                m = fresh(&setup);
                running.clear();
                pending.clear();
                queue.clear();
                for (entry, _) in core::mem::take(&mut broker.out) {
                    broker.to_send.push_back(entry);
                }
                (received, acquired, released) = (0, 0, 0);
                continue;
            }
            _ => now += 10,
        }
        broker.expire(now);
        let idle = running.is_empty()
            && pending.is_empty()
            && m.status().is_settled()
            && m.status().gathered == 0;
        if broker.done() && queue.is_empty() && idle {
            break;
        }
    }
    prop_assert!(
        broker.done(),
        "every message acknowledged ({:?} of {:?})",
        broker.acked,
        sizes
    );
    // Every delivery received since the last crash was released once (those still queued
    // were never received); and nothing stays acquired.
    while let Some(command) = m.poll(at(now)) {
        if let Command::Release(_) = command {
            released += 1;
        }
    }
    prop_assert_eq!(released, received + acquired, "every arrival released once");
    if setup.transactional {
        for (entry, size) in sizes.iter().enumerate() {
            for index in 0..*size {
                let id = Id {
                    entry: entry as u64,
                    index,
                };
                prop_assert_eq!(
                    coordinator.visible.get(&id).copied(),
                    Some(1),
                    "{:?}'s output seen exactly once",
                    id
                );
            }
        }
    }
    let _ = dead_lettered;
    Ok(())
}

/// An invocation the machine started, as the test runs it.
fn invoked(invoke: Invoke<Msg, Handle>) -> Running {
    match invoke.members {
        Members::One(delivery, plan) => Running {
            token: invoke.token,
            members: Vec::from([(delivery, plan)]),
            storage: None,
            txn: invoke.txn,
        },
        Members::Batch(mut batch) => Running {
            token: invoke.token,
            members: batch.drain(..).map(|g| (g.delivery, g.plan)).collect(),
            storage: Some(batch),
            txn: invoke.txn,
        },
    }
}

/// Commit `handle` with `acks` at `now`: what the coordinator answers, having made its
/// outputs visible and its acknowledgements taken where it committed.
fn commit(
    coordinator: &mut Coordinator,
    broker: &mut Broker,
    handle: Handle,
    acks: &[(Id, Option<BatchSlot>)],
    now: u64,
) -> Result<(), CommitFailure> {
    if coordinator.txns[&handle].failed_send {
        return Err(CommitFailure::NotSent);
    }
    // Acknowledging what is acknowledged already conflicts: the broker refuses the commit.
    let conflict = acks.iter().any(|(id, _)| broker.acked.contains(id));
    if coordinator.timed_out(handle, now) || conflict {
        coordinator.txns.get_mut(&handle).unwrap().ended = true;
        return Err(CommitFailure::Failed);
    }
    let record = coordinator.txns.get_mut(&handle).unwrap();
    record.ended = true;
    for input in core::mem::take(&mut record.published) {
        *coordinator.visible.entry(input).or_default() += 1;
    }
    for (id, slot) in acks {
        match slot {
            Some(_) => {
                broker.acked.insert(*id);
                broker.settled(id.entry);
            }
            None => broker.ack_entry(*id),
        }
    }
    Ok(())
}

fn at(ms: u64) -> Instant {
    super::tests::at(ms)
}

#[allow(dead_code)]
fn unused(_: Kept, _: String) {}
