//! One test body, two worlds: the in-process Pulsar on a virtual clock, or a real broker in
//! real time.
//!
//! A case receives an [`Env`], starts the scripted app with [`Env::start`] and drives it through
//! [`Running`]: publish, let time pass, wait for what should happen, read the handler calls.
//! In process, time is exact and `until` advances the virtual clock by the whole bound; on a
//! real broker it polls until the condition holds or the bound passes.
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use ruststream::app::App;
use ruststream::handler::BoxFuture;
use ruststream::message::Message;
use ruststream::runtime::{ManualClock, Runtime, Spawn};
use ruststream::{MessageId, Timer};
use ruststream_pulsar::testing::{Call, LiveApp, TestApp};

use crate::scenario::{Plan, Script};

/// Creates a partitioned topic on a real broker (its admin API): the fully qualified topic
/// and the partition count.
pub type CreatePartitioned = Arc<dyn Fn(&str, u32) -> Result<(), String> + Send + Sync>;

/// Where a case runs.
#[derive(Clone)]
pub enum Env {
    /// The in-process Pulsar, tasks on this spawner, virtual time.
    InProcess { spawn: Arc<dyn Spawn> },
    /// A real broker at `url`, short topic names in `namespace`, on `runtime`; partitioned
    /// topics created with `create_partitioned` where the broker has an admin API.
    Live {
        url: String,
        namespace: String,
        runtime: Arc<dyn Runtime>,
        create_partitioned: Option<CreatePartitioned>,
    },
}

/// A started scripted app.
pub trait Running: Send + Sync {
    /// Publish and wait for the broker's receipt (in process: and settle).
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        properties: Vec<(String, String)>,
        key: Option<String>,
    ) -> BoxFuture<'a, ()>;

    /// Publish and wait for the broker's receipt only, not for the app to settle (in process
    /// the message is stored and the call returns: several publishes can all be there before
    /// the handlers take them, and a held handler does not hold up the publish).
    fn publish_unsettled<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        properties: Vec<(String, String)>,
        key: Option<String>,
    ) -> BoxFuture<'a, ()>;

    /// Publish `message`, with its options, and wait for the receipt (in process: and
    /// settle).
    fn publish_message(&self, message: Message) -> BoxFuture<'_, MessageId>;

    /// Publish `messages` (to one topic) as one batch (one entry on the broker) and wait for
    /// the receipts; the message ids (in process: and settle).
    fn publish_batch(&self, messages: Vec<Message>) -> BoxFuture<'_, Vec<MessageId>>;

    /// Publish `messages` as one batch without waiting for the app to settle (in process the
    /// other publishes wait until nothing is in flight, which a held handler never allows).
    fn publish_batch_unsettled(&self, messages: Vec<Message>) -> BoxFuture<'_, ()>;

    /// Publish `payload` to `topic` as a message the app's client cannot read (in process:
    /// the model's unreadable message, stored as `payload`; live: Snappy in the framed format
    /// that crates.io's pulsar-rs 6.9.1 writes), and wait for the receipt (in process: and
    /// settle); the bytes the broker stores.
    fn publish_unreadable<'a>(&'a self, topic: &'a str, payload: Vec<u8>)
        -> BoxFuture<'a, Vec<u8>>;

    /// Wait at most `within` for `done` to hold, without waiting for the app to settle (in
    /// process: letting the app's tasks run, time standing still); whether it held.
    fn wait_for<'a>(
        &'a self,
        within: Duration,
        done: &'a (dyn Fn() -> bool + Send + Sync),
    ) -> BoxFuture<'a, bool>;

    /// Let `d` pass.
    fn pass(&self, d: Duration) -> BoxFuture<'_, ()>;

    /// Let `d` pass while a handler is held. On a real broker that is [`Running::pass`]. In
    /// process, where `pass` would wait for the held handler forever, the clock moves from
    /// deadline to deadline, and at each the app's tasks take their turns until what fired
    /// has been seen, without waiting for the handlers in flight to finish.
    fn pass_while_held(&self, d: Duration) -> BoxFuture<'_, ()> {
        self.pass(d)
    }

    /// Wait at most `within` for the calls of `handler` to reach `count`; the calls then.
    fn until_calls<'a>(
        &'a self,
        handler: &'a str,
        count: usize,
        within: Duration,
    ) -> BoxFuture<'a, Vec<Call>>;

    /// The calls of `handler` so far.
    fn calls_of(&self, handler: &str) -> Vec<Call>;

    /// How many entries of `topic` `subscription` has not acknowledged; `None` where it
    /// cannot be asked (a real broker: the cases then check that nothing comes back).
    fn backlog<'a>(&'a self, topic: &'a str, subscription: &'a str)
        -> BoxFuture<'a, Option<usize>>;

    /// Stop the app.
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()>;

    /// The in-process test app, where it is one.
    fn in_process(&self) -> Option<&TestApp> {
        None
    }
}

impl Env {
    /// Whether time is virtual and exact.
    pub fn exact(&self) -> bool {
        matches!(self, Env::InProcess { .. })
    }

    /// Start `app` with `script`.
    pub async fn start<A: App<State = Plan>>(
        &self,
        app: A,
        script: Arc<Script>,
    ) -> Box<dyn Running> {
        self.start_with(app, script, &[], None).await
    }

    /// Start `app` with `script` after creating `partitioned` topics (short name, partitions),
    /// as an operator creates them before a service runs.
    pub async fn start_partitioned<A: App<State = Plan>>(
        &self,
        app: A,
        script: Arc<Script>,
        partitioned: &[(&str, u32)],
    ) -> Box<dyn Running> {
        self.start_with(app, script, partitioned, None).await
    }

    /// Start `app` with `script` as another instance beside `first`: on the same in-process
    /// Pulsar and clock, or the same real broker and namespace.
    pub async fn start_beside<A: App<State = Plan>>(
        &self,
        first: &dyn Running,
        app: A,
        script: Arc<Script>,
    ) -> Box<dyn Running> {
        self.start_with(app, script, &[], Some(first)).await
    }

    /// Create `topic` (short) as a partitioned topic while `running` runs.
    pub async fn create_partitioned_topic(
        &self,
        running: &dyn Running,
        topic: &str,
        partitions: u32,
    ) {
        match self {
            Env::InProcess { .. } => running
                .in_process()
                .expect("an in-process case runs a TestApp")
                .create_partitioned_topic(topic, partitions)
                .expect("the partitioned topic is created"),
            Env::Live { .. } => self.create_live_partitioned(topic, partitions),
        }
    }

    fn create_live_partitioned(&self, topic: &str, partitions: u32) {
        let Env::Live {
            namespace,
            create_partitioned,
            ..
        } = self
        else {
            unreachable!("live only")
        };
        let create = create_partitioned
            .as_ref()
            .expect("this broker has no admin API to create partitioned topics with");
        create(&format!("persistent://{namespace}/{topic}"), partitions)
            .expect("the partitioned topic is created");
    }

    async fn start_with<A: App<State = Plan>>(
        &self,
        app: A,
        script: Arc<Script>,
        partitioned: &[(&str, u32)],
        beside: Option<&dyn Running>,
    ) -> Box<dyn Running> {
        match self {
            Env::InProcess { spawn } => {
                let mut builder = TestApp::with_state(app, Plan::new(script)).on(spawn.clone());
                if let Some(first) = beside {
                    builder = builder.alongside(first.in_process().expect("an in-process app"));
                }
                for (topic, partitions) in partitioned {
                    builder = builder.partitioned_topic(*topic, *partitions);
                }
                Box::new(builder.await.expect("the scripted app starts in process"))
            }
            Env::Live {
                url,
                namespace,
                runtime,
                ..
            } => {
                for (topic, partitions) in partitioned {
                    self.create_live_partitioned(topic, *partitions);
                }
                Box::new(Live {
                    app: LiveApp::with_state(app, Plan::new(script), runtime.clone())
                        .url(url.clone())
                        .namespace(namespace.clone())
                        .await
                        .expect("the scripted app connects to the live broker"),
                    url: url.clone(),
                    namespace: namespace.clone(),
                })
            }
        }
    }

    /// A time between two calls: exactly `expected` in process; at least `expected` live
    /// (a real broker and a loaded machine only ever add delay).
    pub fn assert_gap(&self, earlier: &Call, later: &Call, expected: Duration) {
        let gap = later.at().saturating_sub(earlier.at());
        if self.exact() {
            assert_eq!(gap, expected, "time between the calls");
        } else {
            assert!(
                gap >= expected,
                "the calls were {gap:?} apart, less than {expected:?}"
            );
        }
    }
}

/// The most turns the app's tasks get to reach a state, time standing still.
const TURNS: usize = 100_000;

/// The turns the app's tasks get to react to what a fired sleep released: far more than the
/// few task hops a redelivery takes.
const REACT_TURNS: usize = 1_000;

/// Let the app's tasks run, time standing still, until every fired sleep has been seen, then
/// [`REACT_TURNS`] more for what it released to be handled (a held handler never finishes,
/// so waiting for nothing in flight would never end).
async fn take_turns(clock: &ManualClock) {
    for _ in 0..TURNS {
        if clock.unobserved() == 0 {
            break;
        }
        ruststream::runtime::yield_now().await;
    }
    for _ in 0..REACT_TURNS {
        ruststream::runtime::yield_now().await;
    }
}

/// A message of `topic` with these parts.
fn message(
    topic: &str,
    payload: Vec<u8>,
    properties: Vec<(String, String)>,
    key: Option<String>,
) -> Message {
    let mut message = Message::new(topic.to_owned(), payload);
    message.properties = properties;
    message.key = key;
    message
}

impl Running for TestApp {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        properties: Vec<(String, String)>,
        key: Option<String>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            TestApp::publish(self, message(topic, payload, properties, key))
                .await
                .expect("published");
        })
    }

    fn publish_unsettled<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        properties: Vec<(String, String)>,
        key: Option<String>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.pulsar()
                .publish(message(topic, payload, properties, key))
                .expect("published");
        })
    }

    fn publish_message(&self, message: Message) -> BoxFuture<'_, MessageId> {
        Box::pin(async move { TestApp::publish(self, message).await.expect("published") })
    }

    fn publish_batch(&self, messages: Vec<Message>) -> BoxFuture<'_, Vec<MessageId>> {
        Box::pin(async move {
            TestApp::publish_batch(self, messages)
                .await
                .expect("published")
        })
    }

    fn publish_batch_unsettled(&self, messages: Vec<Message>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.pulsar().publish_batch(messages).expect("published");
        })
    }

    fn publish_unreadable<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
    ) -> BoxFuture<'a, Vec<u8>> {
        Box::pin(async move {
            self.pulsar()
                .publish_unreadable(
                    Message::new(topic.to_owned(), payload.clone()),
                    "the model's unreadable message",
                )
                .expect("published");
            self.settle().await.expect("the app settles");
            payload
        })
    }

    fn wait_for<'a>(
        &'a self,
        _within: Duration,
        done: &'a (dyn Fn() -> bool + Send + Sync),
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            // Time stands still: the app's tasks get this many turns to get there.
            for _ in 0..TURNS {
                if done() {
                    return true;
                }
                ruststream::runtime::yield_now().await;
            }
            done()
        })
    }

    fn pass(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.advance(d).await.expect("the app makes progress") })
    }

    fn pass_while_held(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let clock = self.clock();
            let target = clock.now().saturating_add(d);
            loop {
                take_turns(clock).await;
                match clock.next_deadline().filter(|at| *at <= target) {
                    Some(at) => clock.advance_to(at),
                    None => break,
                }
            }
            clock.advance_to(target);
            take_turns(clock).await;
        })
    }

    fn until_calls<'a>(
        &'a self,
        handler: &'a str,
        _count: usize,
        within: Duration,
    ) -> BoxFuture<'a, Vec<Call>> {
        Box::pin(async move {
            self.advance(within).await.expect("the app makes progress");
            self.calls_of(handler)
        })
    }

    fn calls_of(&self, handler: &str) -> Vec<Call> {
        TestApp::calls_of(self, handler)
    }

    fn backlog<'a>(
        &'a self,
        topic: &'a str,
        subscription: &'a str,
    ) -> BoxFuture<'a, Option<usize>> {
        Box::pin(async move {
            self.pulsar()
                .backlog(topic, subscription)
                .expect("a valid topic name")
        })
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(TestApp::stop(*self))
    }

    fn in_process(&self) -> Option<&TestApp> {
        Some(self)
    }
}

/// A scripted app on a real broker, and where that broker is (for the writers of other
/// clients).
struct Live {
    app: LiveApp,
    url: String,
    /// Where short topic names live.
    namespace: String,
}

impl Running for Live {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        properties: Vec<(String, String)>,
        key: Option<String>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            LiveApp::publish(&self.app, message(topic, payload, properties, key))
                .await
                .expect("published");
        })
    }

    fn publish_unsettled<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        properties: Vec<(String, String)>,
        key: Option<String>,
    ) -> BoxFuture<'a, ()> {
        // A real broker's receipt never waited for the app.
        Running::publish(self, topic, payload, properties, key)
    }

    fn publish_message(&self, message: Message) -> BoxFuture<'_, MessageId> {
        Box::pin(async move {
            LiveApp::publish(&self.app, message)
                .await
                .expect("published")
        })
    }

    fn publish_batch(&self, messages: Vec<Message>) -> BoxFuture<'_, Vec<MessageId>> {
        Box::pin(async move {
            LiveApp::publish_batch(&self.app, messages)
                .await
                .expect("published")
        })
    }

    fn publish_batch_unsettled(&self, messages: Vec<Message>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            LiveApp::publish_batch(&self.app, messages)
                .await
                .expect("published");
        })
    }

    fn publish_unreadable<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
    ) -> BoxFuture<'a, Vec<u8>> {
        Box::pin(async move {
            let topic = format!("persistent://{}/{topic}", self.namespace);
            crate::unreadable_writer::publish_framed_snappy(&self.url, &topic, payload).await
        })
    }

    fn wait_for<'a>(
        &'a self,
        within: Duration,
        done: &'a (dyn Fn() -> bool + Send + Sync),
    ) -> BoxFuture<'a, bool> {
        Box::pin(self.app.wait_until(within, move |_| done()))
    }

    fn pass(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(self.app.sleep(d))
    }

    fn until_calls<'a>(
        &'a self,
        handler: &'a str,
        count: usize,
        within: Duration,
    ) -> BoxFuture<'a, Vec<Call>> {
        Box::pin(async move {
            self.app
                .wait_until(within, |app| app.calls_of(handler).len() >= count)
                .await;
            self.app.calls_of(handler)
        })
    }

    fn calls_of(&self, handler: &str) -> Vec<Call> {
        self.app.calls_of(handler)
    }

    fn backlog<'a>(
        &'a self,
        _topic: &'a str,
        _subscription: &'a str,
    ) -> BoxFuture<'a, Option<usize>> {
        Box::pin(async { None })
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(self.app.stop())
    }
}
