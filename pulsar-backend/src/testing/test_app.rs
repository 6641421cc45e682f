//! `TestApp`.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::{
    App, AppParts, BoxError, RunningApp, Stalled, StalledCall, StartContext, StartError,
    VirtualTime, DEFAULT_MAX_HANDLED_PER_INSTANT,
};
use ruststream::message::IntoMessage;
use ruststream::runtime::{Runtime, Spawn, WithClock};
use ruststream::{ManualClock, MessageId, Timer};

use super::recorder::Recorder;
use super::{Call, TestPublishError, TopicMessage};
use crate::inprocess::InProcessPulsar;
use crate::layers::HarnessLayer;
use crate::Retention;

/// The app under test, on the in-process Pulsar and a virtual clock.
///
/// ```text
/// let tb = TestApp::with_state(app(), clients).await?;
/// tb.publish(&refund).await?;
/// tb.advance(BACKOFF).await;
/// assert_eq!(tb.calls_of("process_refund").len(), 2);
/// ```
///
/// (`docs/testing.md` has a complete, compiled example.)
///
/// Time starts stopped at zero and moves only by [`TestApp::advance`], which fires everything
/// due on the way in deadline order and lets the app settle after each step. Tasks run on the
/// runtime the test runs on (tokio by default; [`TestAppBuilder::on`] chooses another).
pub struct TestApp {
    app: Option<RunningApp>,
    pulsar: InProcessPulsar,
    time: VirtualTime,
    clock: ManualClock,
    calls: Arc<Recorder>,
}

/// Builds a [`TestApp`]; `.await` it to start the app.
pub struct TestAppBuilder<A: App> {
    app: A,
    state: Option<A::State>,
    spawn: Option<Arc<dyn Spawn>>,
    max_handled_per_instant: usize,
    /// The in-process Pulsar and clock of another test app, to run alongside it.
    alongside: Option<(InProcessPulsar, ManualClock)>,
    /// Partitioned topics to create before the app subscribes.
    partitioned: Vec<(String, u32)>,
    /// What the in-process Pulsar keeps, when the app does not run alongside another.
    retention: Retention,
}

impl TestApp {
    /// Run `app` with `state` instead of running its `on_startup`.
    pub fn with_state<A: App>(app: A, state: A::State) -> TestAppBuilder<A> {
        TestAppBuilder {
            app,
            state: Some(state),
            spawn: None,
            max_handled_per_instant: DEFAULT_MAX_HANDLED_PER_INSTANT,
            alongside: None,
            partitioned: Vec::new(),
            retention: Retention::KeepAll,
        }
    }

    /// Run `app` as it is, `on_startup` included.
    pub fn start<A: App>(app: A) -> TestAppBuilder<A> {
        TestAppBuilder {
            app,
            state: None,
            spawn: None,
            max_handled_per_instant: DEFAULT_MAX_HANDLED_PER_INSTANT,
            alongside: None,
            partitioned: Vec::new(),
            retention: Retention::KeepAll,
        }
    }

    fn running(&self) -> &RunningApp {
        self.app
            .as_ref()
            .expect("the test app is running until stop()")
    }

    /// Publish `message` (a [`Message`](ruststream::message::Message) with its options, or
    /// `&value` of an `#[outgoing]` type, to its topic) through the app's broker, then settle;
    /// the message id. A delivery time is on the virtual clock.
    pub async fn publish(&self, message: impl IntoMessage) -> Result<MessageId, TestPublishError> {
        let id = self.running().publish(message).await?;
        self.settle().await?;
        Ok(id)
    }

    /// Publish `messages`, all to one topic, as one batch, as a batching producer does (the
    /// default of the Java, Python and Go clients): one entry, acknowledged and redelivered as
    /// a whole by the broker, each message with its batch index. Then settle; the message ids
    /// (`ledger:entry:partition:index`).
    pub async fn publish_batch<M: IntoMessage>(
        &self,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<Vec<MessageId>, TestPublishError> {
        let ids = self.running().publish_batch(messages).await?;
        self.settle().await?;
        Ok(ids)
    }

    /// Wait until nothing is in flight: every delivery that can be handled now was handled and
    /// settled, and every timer that fired was reacted to. Time does not move.
    ///
    /// Fails with [`Stalled`] once the app has handed more deliveries to handlers in this
    /// step than the bound ([`DEFAULT_MAX_HANDLED_PER_INSTANT`] unless the builder set
    /// another): on a virtual clock such an app would never settle. The error names the last
    /// handler call.
    pub async fn settle(&self) -> Result<(), Stalled> {
        self.time
            .settle(self.running())
            .await
            .map_err(|e| self.with_last_call(e))
    }

    fn with_last_call(&self, mut stalled: Stalled) -> Stalled {
        stalled.last_call = self
            .calls
            .last()
            .map(|c| StalledCall::new(c.subscription(), c.handler(), c.message_id()));
        stalled
    }

    /// Move the virtual clock forward by `by`, firing everything due on the way in deadline
    /// order and settling after each step. Fails with [`Stalled`] as [`TestApp::settle`]
    /// does, at the instant where the app stopped making progress.
    pub async fn advance(&self, by: Duration) -> Result<(), Stalled> {
        self.time
            .advance(self.running(), by)
            .await
            .map_err(|e| self.with_last_call(e))
    }

    /// Time since the test app started.
    pub fn now(&self) -> Duration {
        self.clock.now().elapsed_since_origin()
    }

    /// The virtual clock.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Every handler call so far, in the order they were made.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.calls()
    }

    /// The calls of handler `name`.
    pub fn calls_of(&self, name: &str) -> Vec<Call> {
        self.calls.calls_of(name)
    }

    /// What reached `topic` (short or fully qualified), in order.
    pub fn topic(&self, topic: &str) -> Vec<TopicMessage> {
        self.pulsar
            .topic_messages(topic)
            .unwrap_or_else(|e| panic!("TestApp::topic: {e}"))
    }

    /// Create `topic` as a partitioned topic of `partitions` partitions now (see
    /// [`TestAppBuilder::partitioned_topic`] for one the app reads from its start): a pattern
    /// subscription picks it up at its next refresh. Refused where a topic of that name
    /// exists.
    pub fn create_partitioned_topic(&self, topic: &str, partitions: u32) -> Result<(), BoxError> {
        self.pulsar.create_partitioned_topic(topic, partitions)
    }

    /// The in-process Pulsar, for tests that need the model itself.
    pub fn pulsar(&self) -> &InProcessPulsar {
        &self.pulsar
    }

    /// End the app as a process that dies does (SIGKILL): its handlers and `retry_after`
    /// waits vanish, nothing is flushed, and its consumers go as lost connections go, so their
    /// unacknowledged messages return to the subscription (to the other instances on Shared
    /// and KeyShared; on Failover a standby takes over). Then settle, on the apps that remain.
    pub async fn kill(mut self) -> Result<(), Stalled> {
        if let Some(app) = self.app.take() {
            app.kill().await;
        }
        // Like `settle`, without an app of its own: wait for the others to take over.
        loop {
            self.pulsar.idle().await;
            if self.clock.unobserved() == 0 && self.pulsar.in_flight() == 0 {
                return Ok(());
            }
            ruststream::runtime::yield_now().await;
        }
    }

    /// Stop the app gracefully.
    pub async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
    }
}

impl std::fmt::Debug for TestApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestApp")
            .field("now", &self.clock.now())
            .field("pulsar", &self.pulsar)
            .finish()
    }
}

impl<A: App> TestAppBuilder<A> {
    /// Run this app as another instance beside `other`: on the same in-process Pulsar and the
    /// same virtual clock, as several instances of a service share a broker. Both see each
    /// other's consumers (round-robin on Shared, a standby on Failover, a refusal on
    /// Exclusive, keys split on KeyShared); `advance` on either moves the one clock.
    pub fn alongside(mut self, other: &TestApp) -> Self {
        self.alongside = Some((other.pulsar.clone(), other.clock.clone()));
        self
    }

    /// Create `topic` (short or fully qualified) as a partitioned topic of `partitions`
    /// partitions before the app starts, as an operator creates it with Pulsar's admin API
    /// before a service runs: handlers mounted on its name then read every partition, and
    /// publishing to its name routes each message by its key. A topic that exists already
    /// (created by another test app this one runs alongside) is refused when the app starts.
    pub fn partitioned_topic(mut self, topic: impl Into<String>, partitions: u32) -> Self {
        self.partitioned.push((topic.into(), partitions));
        self
    }

    /// How many deliveries one step may hand to handlers without time moving before it fails
    /// with [`Stalled`] (default [`DEFAULT_MAX_HANDLED_PER_INSTANT`]).
    pub fn max_handled_per_instant(mut self, deliveries: usize) -> Self {
        self.max_handled_per_instant = deliveries;
        self
    }

    /// Run on an in-process Pulsar whose topics keep what `retention` says, instead of every
    /// message ever published ([`Retention::KeepAll`], so that [`TestApp::topic`] reads back
    /// what reached a topic). [`Retention::until_acknowledged`] is what `run --embedded` runs
    /// on: a test with it checks that the service behaves the same when acknowledged messages
    /// are freed. An app started [`alongside`](Self::alongside) another shares its Pulsar
    /// and this is ignored.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Run the app's tasks with `spawn` (for instance `SmolRuntime::global()`), instead of the
    /// tokio runtime the test runs in.
    pub fn on(mut self, spawn: impl Spawn + 'static) -> Self {
        self.spawn = Some(Arc::new(spawn));
        self
    }

    async fn build(self) -> Result<TestApp, StartError> {
        let spawn = match self.spawn {
            Some(s) => s,
            None => default_spawn()?,
        };
        let (pulsar, clock) = self.alongside.unwrap_or_else(|| {
            (
                InProcessPulsar::with_retention(self.retention),
                ManualClock::new(),
            )
        });
        for (topic, partitions) in &self.partitioned {
            pulsar
                .create_partitioned_topic(topic, *partitions)
                .map_err(|e| StartError::Misuse(e.to_string()))?;
        }
        let runtime: Arc<dyn Runtime> = Arc::new(WithClock::new(spawn, clock.clone()));
        let calls = Arc::new(Recorder::default());
        let parts: AppParts<A::State> = self.app.into_parts();
        let context = StartContext::new(runtime)
            .in_process()
            .with(pulsar.clone())
            .with(HarnessLayer(calls.clone()));
        let app = parts.start(context, self.state).await?;
        let test_app = TestApp {
            app: Some(app),
            pulsar,
            time: VirtualTime::new(clock.clone())
                .max_handled_per_instant(self.max_handled_per_instant),
            clock,
            calls,
        };
        test_app
            .settle()
            .await
            .map_err(|e| StartError::Misuse(e.to_string()))?;
        Ok(test_app)
    }
}

impl<A: App> IntoFuture for TestAppBuilder<A> {
    type Output = Result<TestApp, StartError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.build())
    }
}

fn default_spawn() -> Result<Arc<dyn Spawn>, StartError> {
    #[cfg(feature = "tokio")]
    if let Ok(rt) = ruststream_tokio::TokioRuntime::try_current() {
        return Ok(Arc::new(rt));
    }
    Err(StartError::Misuse(
        "TestApp needs a runtime for the app's tasks: run the test under tokio \
         (`#[tokio::test]`), or name one with `.on(..)`, e.g. \
         `TestApp::with_state(app(), state).on(SmolRuntime::global())`"
            .into(),
    ))
}
