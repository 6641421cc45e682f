//! A scripted service for the in-process and live behaviour tests.
//!
//! Each handler answers from a [`Script`]: a queue of steps (return an outcome, or panic),
//! then a default step once the queue is empty. Handlers differ only in where they are
//! mounted, so each subscription type and option has its own.
#![allow(missing_docs)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::oneshot;
use ruststream::app::App;
use ruststream::batch::{Batch, BatchOutcome};
use ruststream::codec::MsgPack;
use ruststream::params::{
    EventTime, MessageId, MessageKey, Properties, PublishTime, RedeliveryCount, Topic,
};
use ruststream::{
    subscriber, Answer, AppInfo, FromRef, HandlerOutcome, Publisher, RustStream, State,
    SubscriptionType,
};
use ruststream_pulsar::{InitialPosition, PulsarBroker, PulsarSubscription};
use serde::{Deserialize, Serialize};

/// The ack timeout of the scripted subscriptions that have one: short, so that the same
/// scenarios also run on a real broker in real time.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(3);

/// The `retry_after` delay of the scenarios: shorter than [`ACK_TIMEOUT`].
pub const DELAY: Duration = Duration::from_secs(1);

/// The payload of every scripted topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: u64,
}

/// What a handler does on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Return(HandlerOutcome),
    Panic,
    /// Return `Err` with this message (the `fallible` handler only; the others panic).
    Fail(&'static str),
}

/// An outcome chosen by job id and attempt (0 for the first call with that id).
pub type ByJob = Box<dyn Fn(u64, u32) -> HandlerOutcome + Send + Sync>;

/// The steps handlers take, shared by all of them.
pub struct Script {
    steps: Mutex<VecDeque<Step>>,
    then: Step,
    gate: Mutex<Option<oneshot::Receiver<()>>>,
    by_job: Option<ByJob>,
    attempts: Mutex<HashMap<u64, u32>>,
    /// What the `inspect` and `raw_reader` handlers were given, in call order.
    seen: Mutex<Vec<Seen>>,
    /// The overlap handlers: how many run now, the most that ever ran at once, and the job
    /// ids in the order their handlers started.
    overlap: Mutex<Overlap>,
    /// The batches the batch handlers were given: each job's id and key, in order.
    batches: Mutex<Vec<SeenBatch>>,
}

/// A batch a batch handler was given: each job's id and key, in order.
pub type SeenBatch = Vec<(u64, Option<String>)>;

/// What the overlap handlers record.
#[derive(Debug, Default, Clone)]
pub struct Overlap {
    pub running: usize,
    pub most: usize,
    pub started: Vec<u64>,
    /// While set, every overlap handler that starts waits (with its waker here) until
    /// [`Script::release`].
    held: Option<Vec<std::task::Waker>>,
}

/// The parts of a message a handler took as parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `Properties`, as `(name, value)`.
    pub properties: Vec<(String, String)>,
    pub key: Option<String>,
    pub message_id: String,
    pub redelivery_count: Option<u32>,
    pub publish_time: Duration,
    pub event_time: Option<Duration>,
    pub topic: String,
    /// The raw payload (`&[u8]` handlers), or the decoded job's id as text.
    pub payload: Vec<u8>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script").field("then", &self.then).finish()
    }
}

impl Script {
    /// `steps` in order, then `then` forever.
    pub fn new(steps: impl IntoIterator<Item = Step>, then: Step) -> Arc<Script> {
        Arc::new(Script {
            steps: Mutex::new(steps.into_iter().collect()),
            then,
            gate: Mutex::new(None),
            by_job: None,
            attempts: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            overlap: Mutex::new(Overlap::default()),
            batches: Mutex::new(Vec::new()),
        })
    }

    /// What the `inspect` and `raw_reader` handlers were given so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The handlers answer `rule(job id, attempt)` (the `gated` one and the dead-letter
    /// readers excepted).
    pub fn by_job(
        rule: impl Fn(u64, u32) -> HandlerOutcome + Send + Sync + 'static,
    ) -> Arc<Script> {
        Arc::new(Script {
            steps: Mutex::new(VecDeque::new()),
            then: Step::Return(HandlerOutcome::ack()),
            gate: Mutex::new(None),
            by_job: Some(Box::new(rule)),
            attempts: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            overlap: Mutex::new(Overlap::default()),
            batches: Mutex::new(Vec::new()),
        })
    }

    fn for_job(&self, job: &Job) -> HandlerOutcome {
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap();
            let n = attempts.entry(job.id).or_default();
            *n += 1;
            *n - 1
        };
        match &self.by_job {
            Some(rule) => rule(job.id, attempt),
            None => self.next(),
        }
    }

    /// Always `step`.
    pub fn always(step: Step) -> Arc<Script> {
        Script::new([], step)
    }

    /// The batches the batch handlers were given so far: each job's id and key.
    pub fn batches(&self) -> Vec<SeenBatch> {
        self.batches.lock().unwrap().clone()
    }

    /// Record a batch, wait at the gate of [`Script::with_gate`] if job 1 is in it, and
    /// answer each of its jobs as `for_job` does.
    async fn batch(&self, jobs: &[Job], batch: Batch<'_>) -> BatchOutcome {
        let seen = (jobs.iter().enumerate())
            .map(|(i, job)| (job.id, batch.key(i).map(str::to_owned)))
            .collect();
        self.batches.lock().unwrap().push(seen);
        for job in jobs {
            self.hold_job_one(job).await;
        }
        BatchOutcome::each(jobs.iter().map(|job| self.for_job(job)))
    }

    /// What the overlap handlers recorded.
    pub fn overlap(&self) -> Overlap {
        self.overlap.lock().unwrap().clone()
    }

    /// Hold every overlap handler that starts from now on, until [`Script::release`].
    pub fn hold(&self) {
        self.overlap.lock().unwrap().held = Some(Vec::new());
    }

    /// Let the held overlap handlers go on, and those that start later run through.
    pub fn release(&self) {
        let held = self.overlap.lock().unwrap().held.take();
        for waker in held.into_iter().flatten() {
            waker.wake();
        }
    }

    /// Run `job`'s handler as an overlap handler: counted as running from its start to its
    /// end, held meanwhile while [`Script::hold`] says so; then it answers as `for_job`.
    async fn overlapping(&self, job: &Job) -> HandlerOutcome {
        {
            let mut o = self.overlap.lock().unwrap();
            o.running += 1;
            o.most = o.most.max(o.running);
            o.started.push(job.id);
        }
        std::future::poll_fn(|cx| {
            let mut o = self.overlap.lock().unwrap();
            match &mut o.held {
                Some(waiting) => {
                    waiting.push(cx.waker().clone());
                    std::task::Poll::Pending
                }
                None => std::task::Poll::Ready(()),
            }
        })
        .await;
        self.overlap.lock().unwrap().running -= 1;
        self.for_job(job)
    }

    /// The `gated` and `held_one_at_a_time` handlers hold job 1 until the returned sender is
    /// used or dropped.
    pub fn with_gate(self: &Arc<Self>) -> oneshot::Sender<()> {
        let (tx, rx) = oneshot::channel();
        *self.gate.lock().unwrap() = Some(rx);
        tx
    }

    /// Whether a handler has taken the gate of [`Script::with_gate`]: job 1's handler is
    /// running and waits at it.
    pub fn gate_taken(&self) -> bool {
        self.gate.lock().unwrap().is_none()
    }

    /// Wait at the gate of [`Script::with_gate`] if `job` is job 1 and the gate is still
    /// there (a redelivered job 1 finds it taken and goes on).
    async fn hold_job_one(&self, job: &Job) {
        if job.id == 1 {
            let gate = self.gate.lock().unwrap().take();
            if let Some(gate) = gate {
                let _ = gate.await;
            }
        }
    }

    fn next_step(&self) -> Step {
        self.steps.lock().unwrap().pop_front().unwrap_or(self.then)
    }

    fn next(&self) -> HandlerOutcome {
        match self.next_step() {
            Step::Return(outcome) => outcome,
            Step::Panic => panic!("scripted panic"),
            Step::Fail(_) => panic!("only the `fallible` handler can return an error"),
        }
    }
}

/// Shorthands for steps.
pub fn ret(outcome: HandlerOutcome) -> Step {
    Step::Return(outcome)
}

/// Return `Err(message)`, boxed.
pub fn fail(message: &'static str) -> Step {
    Step::Fail(message)
}

/// The app state.
#[derive(Debug, Clone, FromRef)]
pub struct Plan {
    pub script: Arc<Script>,
}

impl Plan {
    pub fn new(script: Arc<Script>) -> Plan {
        Plan { script }
    }
}

#[subscriber(PulsarSubscription::new("jobs", "shared").ack_timeout(ACK_TIMEOUT))]
pub async fn shared(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// A handler that returns `Result`, to use `?`: an error it returns is settled as `IntoOutcome`
/// says for a boxed error.
#[subscriber(PulsarSubscription::new("jobs-fallible", "fallible").ack_timeout(ACK_TIMEOUT))]
pub async fn fallible(
    _job: &Job,
    State(script): State<Arc<Script>>,
) -> Result<HandlerOutcome, Box<dyn std::error::Error + Send + Sync>> {
    match script.next_step() {
        Step::Return(outcome) => Ok(outcome),
        Step::Panic => panic!("scripted panic"),
        Step::Fail(message) => Err(message.into()),
    }
}

#[subscriber(PulsarSubscription::new("jobs-nt", "no-timeout"))]
pub async fn no_timeout(_job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.next()
}

#[subscriber(
    PulsarSubscription::new("jobs-ex", "exclusive")
        .subscription_type(SubscriptionType::Exclusive)
        .ack_timeout(ACK_TIMEOUT)
)]
pub async fn exclusive(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

#[subscriber(
    PulsarSubscription::new("jobs-fo", "failover")
        .subscription_type(SubscriptionType::Failover)
        .ack_timeout(ACK_TIMEOUT)
)]
pub async fn failover(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

#[subscriber(
    PulsarSubscription::new("jobs-ks", "key-shared")
        .subscription_type(SubscriptionType::KeyShared)
        .ack_timeout(ACK_TIMEOUT)
)]
pub async fn key_shared(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

#[subscriber("jobs-bare")]
pub async fn bare(_job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.next()
}

#[subscriber(PulsarSubscription::new("jobs-gate", "gate").concurrency(4))]
pub async fn gated(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.hold_job_one(job).await;
    HandlerOutcome::ack()
}

/// One handler at a time, with an ack timeout: job 1 is held at the gate of
/// [`Script::with_gate`] while the next jobs wait for the handler.
#[subscriber(PulsarSubscription::new("jobs-held", "held").concurrency(1).ack_timeout(ACK_TIMEOUT))]
pub async fn held_one_at_a_time(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.hold_job_one(job).await;
    HandlerOutcome::ack()
}

/// Takes every part of the message as a parameter and records them, then answers from the
/// script.
#[subscriber(PulsarSubscription::new("jobs-parts", "inspect"))]
#[allow(clippy::too_many_arguments)]
pub async fn inspect(
    job: &Job,
    State(script): State<Arc<Script>>,
    properties: Properties,
    MessageKey(key): MessageKey,
    id: MessageId,
    RedeliveryCount(redelivery_count): RedeliveryCount,
    PublishTime(publish_time): PublishTime,
    EventTime(event_time): EventTime,
    Topic(topic): Topic,
) -> HandlerOutcome {
    script.seen.lock().unwrap().push(Seen {
        properties: properties
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        key,
        message_id: id.to_string(),
        redelivery_count,
        publish_time,
        event_time,
        topic,
        payload: job.id.to_string().into_bytes(),
    });
    script.next()
}

/// Takes the payload undecoded (`&[u8]`): it reads messages that are not JSON.
#[subscriber(PulsarSubscription::new("jobs-raw", "raw"))]
pub async fn raw_reader(
    payload: &[u8],
    State(script): State<Arc<Script>>,
    id: MessageId,
) -> HandlerOutcome {
    script.seen.lock().unwrap().push(Seen {
        properties: Vec::new(),
        key: None,
        message_id: id.to_string(),
        redelivery_count: None,
        publish_time: Duration::ZERO,
        event_time: None,
        topic: String::new(),
        payload: payload.to_vec(),
    });
    HandlerOutcome::ack()
}

/// A job published in MessagePack (`#[outgoing(codec = "msgpack")]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ruststream::Outgoing)]
#[outgoing(name = "jobs-packed", codec = "msgpack")]
pub struct PackedJob {
    pub id: u64,
}

/// Decodes MessagePack payloads (`&MsgPack<T>`) and records the job id.
#[subscriber(PulsarSubscription::new("jobs-packed", "packed"))]
pub async fn packed_reader(
    job: &MsgPack<PackedJob>,
    State(script): State<Arc<Script>>,
) -> HandlerOutcome {
    script.seen.lock().unwrap().push(Seen {
        properties: Vec::new(),
        key: None,
        message_id: String::new(),
        redelivery_count: None,
        publish_time: Duration::ZERO,
        event_time: None,
        topic: String::new(),
        payload: job.id.to_string().into_bytes(),
    });
    HandlerOutcome::ack()
}

/// Forwards each job to `jobs-out`, then acknowledges: publishing from inside a handler.
#[subscriber(PulsarSubscription::new("jobs-fwd", "forwarder"))]
pub async fn forwarder(job: &Job, publisher: Publisher) -> HandlerOutcome {
    match publisher.publish(&Forwarded { id: job.id }).await {
        Ok(_) => HandlerOutcome::ack(),
        Err(_) => HandlerOutcome::retry(),
    }
}

/// Sends each job on to `jobs-out` without waiting for the broker's answer, and acknowledges
/// at once: the acknowledgement waits for the send. Job 1's first delivery sends to a name
/// that is not a topic (the error ignored): that delivery is not acknowledged, and comes
/// back.
#[subscriber(PulsarSubscription::new("jobs-send", "sender"))]
pub async fn sender(
    job: &Job,
    publisher: Publisher,
    RedeliveryCount(count): RedeliveryCount,
) -> HandlerOutcome {
    let to = match (job.id, count) {
        (1, Some(0) | None) => "not/a-topic",
        _ => "jobs-out",
    };
    let forwarded = ruststream::message::Message::json(to, &Forwarded { id: job.id })
        .expect("a Forwarded encodes");
    let _ = publisher.publish(forwarded).await;
    HandlerOutcome::ack()
}

/// The forwarding service of the live crash tests (`tests/tests/live_instances.rs`): the
/// script decides each delivery's outcome (and prints it); where it is `ack`, the job is first
/// sent on to `jobs-forwarded` without waiting (the delivery is acknowledged once the copy is
/// confirmed). Mounted with a dead-letter and a retry topic: the script may dead-letter a job,
/// so it declares `dead_letter`, and the topic alone is what that declaration needs.
#[subscriber(
    PulsarSubscription::new("jobs-fwd-in", "forwarder").ack_timeout(ACK_TIMEOUT),
    dead_letter
)]
pub async fn forward_jobs(
    job: &Job,
    publisher: Publisher,
    State(script): State<Arc<Script>>,
) -> Result<HandlerOutcome, ruststream::PublishError> {
    let outcome = script.for_job(job);
    if outcome == HandlerOutcome::ack() {
        let copy = ruststream::message::Message::json("jobs-forwarded", &Forwarded { id: job.id })?
            .key(job.id.to_string());
        publisher.publish(copy).await?;
    }
    Ok(outcome)
}

/// What [`forwarder`] publishes, to its `#[outgoing]` topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ruststream::Outgoing)]
#[outgoing(name = "jobs-out")]
pub struct Forwarded {
    pub id: u64,
}

#[subscriber(PulsarSubscription::new("jobs-out", "outbox"))]
pub async fn outbox(_job: &Forwarded) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// The ack timeout of [`tx_forwarder`]: longer than the transaction timeouts its tests give
/// (a delivery held past its transaction's timeout is not also redelivered meanwhile), short
/// enough that a panic's delivery comes back soon on a real broker.
pub const TX_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// Transactional consume-transform-produce (mounted `.transactional()`): each job is sent on
/// to `tx-out` in the delivery's transaction, then job 1 waits at the gate of
/// [`Script::with_gate`] if there is one, and the script answers (by job id and attempt, or
/// its steps, panics included).
#[subscriber(PulsarSubscription::new("tx-in", "tx").ack_timeout(TX_ACK_TIMEOUT))]
pub async fn tx_forwarder(
    job: &Job,
    publisher: Publisher,
    State(script): State<Arc<Script>>,
) -> HandlerOutcome {
    let out = ruststream::message::Message::json("tx-out", job).expect("a job encodes");
    if publisher.publish(out).await.is_err() {
        return HandlerOutcome::retry();
    }
    script.hold_job_one(job).await;
    script.for_job(job)
}

/// A batch handler that sends each job of its batch on to `tx-out` through its `Publisher`,
/// then answers each by the script: every message it was called for waits for all of the
/// batch's sends. A job numbered from [`FAILING_SEND`] sends its first attempt to a name that
/// is not a topic (the error ignored), so its batch's sends do not all succeed. Mounted
/// `.transactional()` in the transaction cases: the batch is one transaction.
#[subscriber(PulsarSubscription::new("bh-fwd-in", "bh-fwd").ack_timeout(TX_ACK_TIMEOUT))]
pub async fn batch_forwarder(
    jobs: &[Job],
    batch: Batch<'_>,
    publisher: Publisher,
    State(script): State<Arc<Script>>,
) -> BatchOutcome {
    for (i, job) in jobs.iter().enumerate() {
        let to = match (job.id >= FAILING_SEND, batch.redelivery_count(i)) {
            (true, Some(0) | None) => "not/a-topic",
            _ => "tx-out",
        };
        let out = ruststream::message::Message::json(to, job).expect("a job encodes");
        let _ = publisher.publish(out).await;
    }
    script.batch(jobs, batch).await
}

/// The first job number whose first attempt in [`batch_forwarder`] sends to a name that is
/// not a topic.
pub const FAILING_SEND: u64 = 1_000;

/// Reads what [`tx_forwarder`] publishes: only what was committed reaches it.
#[subscriber(PulsarSubscription::new("tx-out", "tx-reader"))]
pub async fn tx_reader(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// The output topic of [`exactly_once_forward`]; the live cases create it with
/// [`PARTITIONS`] partitions.
pub const EXACTLY_ONCE_OUT: &str = "eo-out";

/// The consume-transform-produce service of the live exactly-once cases
/// (`tests/tests/live_exactly_once.rs`): each job is sent on to [`EXACTLY_ONCE_OUT`], keyed by
/// its id, then the script answers (and the `instance` binary's script prints the call). The
/// same code is mounted `.transactional()` or not: only the registration differs.
#[subscriber(PulsarSubscription::new("eo-in", "eo-forward"))]
pub async fn exactly_once_forward(
    job: &Job,
    publisher: Publisher,
    State(script): State<Arc<Script>>,
) -> HandlerOutcome {
    let out = ruststream::message::Message::json(EXACTLY_ONCE_OUT, job)
        .expect("a job encodes")
        .key(job.id.to_string());
    if publisher.publish(out).await.is_err() {
        return HandlerOutcome::retry();
    }
    script.for_job(job)
}

/// Mounted where `retry_later` is used (Shared; the registrations add a retry topic), with
/// the scenarios' short ack timeout, far below the delays: answers by job id.
#[subscriber(PulsarSubscription::new("jobs-later", "later").ack_timeout(ACK_TIMEOUT))]
pub async fn later(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// KeyShared with ordered retries: a key's later messages wait while one of its messages is
/// away for a retry. Answers by job id.
#[subscriber(
    PulsarSubscription::new("jobs-ordered", "ordered")
        .subscription_type(SubscriptionType::KeyShared)
        .ack_timeout(ACK_TIMEOUT)
        .ordered_retries()
)]
pub async fn retries_in_order(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// Reads the dead-letter topic of the Failover `retry_later` case.
#[subscriber(PulsarSubscription::new("jobs-fo-dlq", "fo-dlq-reader"))]
pub async fn failover_dead_letters(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// Reads the dead-letter topic of the `later` cases.
#[subscriber(PulsarSubscription::new("jobs-later-dlq", "later-dlq-reader"))]
pub async fn later_dead_letters(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// Why the `poison` handler dead-letters a job: the detail of one message, beside the
/// outcome's stable reason.
#[derive(Debug)]
pub struct Poisoned(pub u64);

impl std::fmt::Display for Poisoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job {} cannot be processed", self.0)
    }
}

impl std::error::Error for Poisoned {}

/// Declares that it dead-letters messages itself; answers by the script, and a
/// `dead_letter(reason)` comes with the error [`Poisoned`].
#[subscriber(
    PulsarSubscription::new("jobs-poison", "poison").ack_timeout(ACK_TIMEOUT),
    dead_letter
)]
pub async fn poison(job: &Job, State(script): State<Arc<Script>>) -> Answer {
    let outcome = script.for_job(job);
    match outcome {
        HandlerOutcome::DeadLetter(_) => Answer::new(outcome).because(Poisoned(job.id)),
        _ => Answer::new(outcome),
    }
}

#[subscriber(PulsarSubscription::new("jobs-dlq", "dlq-reader"))]
pub async fn dead_letters(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// Reads `jobs-dlq` undecoded (`&[u8]`): what reaches it need not be a job.
#[subscriber(PulsarSubscription::new("jobs-dlq", "dlq-raw-reader"))]
pub async fn raw_dead_letters(_payload: &[u8]) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// Reads the dead-letter topic of [`no_timeout`], `jobs-nt-dlq`, undecoded.
#[subscriber(PulsarSubscription::new("jobs-nt-dlq", "dlq-raw-reader"))]
pub async fn raw_no_timeout_dead_letters(_payload: &[u8]) -> HandlerOutcome {
    HandlerOutcome::ack()
}

#[subscriber(PulsarSubscription::new("jobs-bare-dlq", "dlq-reader"))]
pub async fn bare_dead_letters(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// How often the pattern subscription lists its namespace again: short, so that the live
/// cases wait little.
pub const PATTERN_REFRESH: Duration = Duration::from_secs(2);

/// How many partitions the partitioned topics of the cases have.
pub const PARTITIONS: u32 = 4;

/// On a partitioned topic (`jobs-part`, created with [`PARTITIONS`]), Shared: answers by job.
#[subscriber(PulsarSubscription::new("jobs-part", "part-shared").ack_timeout(ACK_TIMEOUT))]
pub async fn part_shared(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// On a partitioned topic, KeyShared: answers by job.
#[subscriber(
    PulsarSubscription::new("jobs-part-ks", "part-key-shared")
        .subscription_type(SubscriptionType::KeyShared)
        .ack_timeout(ACK_TIMEOUT)
)]
pub async fn part_key_shared(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// On a partitioned topic, Failover: answers by job.
#[subscriber(
    PulsarSubscription::new("jobs-part-fo", "part-failover")
        .subscription_type(SubscriptionType::Failover)
        .ack_timeout(ACK_TIMEOUT)
)]
pub async fn part_failover(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// Reads the partitioned subscription's dead-letter topic.
#[subscriber(PulsarSubscription::new("jobs-part-dlq", "part-review"))]
pub async fn part_dead_letters(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// One handler on two topics.
#[subscriber(PulsarSubscription::topics(["jobs-a", "jobs-b"], "several"))]
pub async fn several(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// Every topic named `jobs-pat-…`, those created later included, from their first message.
#[subscriber(
    PulsarSubscription::pattern("jobs-pat-.*", "pattern")
        .initial_position(InitialPosition::Earliest)
        .pattern_refresh(PATTERN_REFRESH)
)]
pub async fn pattern_reader(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// A subscription of `jobs-start` that starts at the earliest message.
#[subscriber(
    PulsarSubscription::new("jobs-start", "from-earliest").initial_position(InitialPosition::Earliest)
)]
pub async fn from_earliest(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// A subscription of `jobs-start` with the default start, the latest message.
#[subscriber(PulsarSubscription::new("jobs-start", "from-latest"))]
pub async fn from_latest(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// Failover with the default concurrency: records how many of its handlers overlap.
#[subscriber(
    PulsarSubscription::new("jobs-fo-order", "fo-order").subscription_type(SubscriptionType::Failover)
)]
pub async fn ordered_failover(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.overlapping(job).await
}

/// Failover with four handlers at once, chosen explicitly: they overlap.
#[subscriber(
    PulsarSubscription::new("jobs-fo-conc", "fo-concurrent")
        .subscription_type(SubscriptionType::Failover)
        .concurrency(4)
)]
pub async fn concurrent_failover(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.overlapping(job).await
}

/// Failover with four handlers at once and each key's messages in order.
#[subscriber(
    PulsarSubscription::new("jobs-fo-keys", "fo-keys")
        .subscription_type(SubscriptionType::Failover)
        .concurrency(4)
        .key_ordered()
)]
pub async fn key_ordered_failover(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.overlapping(job).await
}

/// An app whose Pulsar broker mounts what `mount` includes.
/// Mounted where batches are published (Shared, with an ack timeout): answers by job id.
#[subscriber(PulsarSubscription::new("jobs-batch", "batched").ack_timeout(ACK_TIMEOUT))]
pub async fn batched(job: &Job, State(script): State<Arc<Script>>) -> HandlerOutcome {
    script.for_job(job)
}

/// Reads the batch subscription's dead-letter topic.
#[subscriber(PulsarSubscription::new("jobs-batch-dlq", "batch-review"))]
pub async fn batch_dead_letters(_job: &Job) -> HandlerOutcome {
    HandlerOutcome::ack()
}

/// [`app`] publishing a message over `max_message_size` bytes in chunks
/// (`PulsarBroker::chunk_messages_over`), its dead-letter and retry copies included.
pub fn chunking_app(
    max_message_size: usize,
    mount: impl FnOnce(&mut PulsarBroker<Plan>),
) -> impl App<State = Plan> {
    RustStream::new(AppInfo::new("scripted", "0.0.0"))
        .on_startup(async move |()| {
            Ok::<_, std::convert::Infallible>(Plan::new(Script::always(Step::Return(
                HandlerOutcome::ack(),
            ))))
        })
        .with_broker(
            PulsarBroker::new("pulsar://localhost:6650").chunk_messages_over(max_message_size),
            mount,
        )
}

pub fn app(mount: impl FnOnce(&mut PulsarBroker<Plan>)) -> impl App<State = Plan> {
    layered_app(|app| app, |broker| broker, mount)
}

/// [`app`], with the app's layers added by `app_layers` and the broker's by `broker_layers`.
pub fn layered_app(
    app_layers: impl FnOnce(RustStream<Plan>) -> RustStream<Plan>,
    broker_layers: impl FnOnce(PulsarBroker<Plan>) -> PulsarBroker<Plan>,
    mount: impl FnOnce(&mut PulsarBroker<Plan>),
) -> impl App<State = Plan> {
    let app = RustStream::new(AppInfo::new("scripted", "0.0.0")).on_startup(async move |()| {
        Ok::<_, std::convert::Infallible>(Plan::new(Script::always(Step::Return(
            HandlerOutcome::ack(),
        ))))
    });
    app_layers(app).with_broker(
        broker_layers(PulsarBroker::new("pulsar://localhost:6650")),
        mount,
    )
}

/// The max wait of the batch handlers' batches.
pub const BATCH_WAIT: Duration = Duration::from_millis(250);

/// A batch handler on a KeyShared subscription (4 partitions in its cases): records each
/// batch, answers each job by the script.
#[subscriber(
    PulsarSubscription::new("jobs-bh", "bh-ks")
        .subscription_type(SubscriptionType::KeyShared)
        .ack_timeout(ACK_TIMEOUT)
)]
pub async fn batch_handler(
    jobs: &[Job],
    batch: Batch<'_>,
    State(script): State<Arc<Script>>,
) -> BatchOutcome {
    script.batch(jobs, batch).await
}

/// A batch handler on KeyShared with ordered retries: a key's retried message holds the
/// key's later messages out of the following batches. Answers by job id.
#[subscriber(
    PulsarSubscription::new("jobs-bh-ordered", "bh-ordered")
        .subscription_type(SubscriptionType::KeyShared)
        .ack_timeout(ACK_TIMEOUT)
        .ordered_retries()
)]
pub async fn batch_retries_in_order(
    jobs: &[Job],
    batch: Batch<'_>,
    State(script): State<Arc<Script>>,
) -> BatchOutcome {
    script.batch(jobs, batch).await
}

/// Reads the batch handler's dead-letter topic.
#[subscriber(PulsarSubscription::new("jobs-bh-dlq", "bh-review"))]
pub async fn batch_handler_dead_letters(_payload: &[u8]) -> HandlerOutcome {
    HandlerOutcome::ack()
}
