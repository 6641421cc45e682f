//! `LiveApp`: the app under test on a real Pulsar broker.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::{App, AppParts, RunningApp, StartContext, StartError};
use ruststream::message::IntoMessage;
use ruststream::runtime::Runtime;
use ruststream::MessageId;
use ruststream::PublishError;
use ruststream::Timer;

use super::recorder::Recorder;
use super::Call;
use crate::layers::HarnessLayer;
use crate::PulsarOverrides;

/// The app's own `app()`, connected to a real broker, with every handler call recorded.
///
/// Time is real here: use [`LiveApp::wait_until`] to wait for what should happen, with a bound.
/// The in-process [`TestApp`](super::TestApp) is the place for exact timings.
pub struct LiveApp {
    app: Option<RunningApp>,
    runtime: Arc<dyn Runtime>,
    calls: Arc<Recorder>,
}

/// How long a [`LiveApp`] may take to connect and subscribe unless
/// [`LiveAppBuilder::connect_timeout`] says otherwise. Longer than the production default
/// ([`DEFAULT_CONNECT_TIMEOUT`](crate::DEFAULT_CONNECT_TIMEOUT)) because live tests subscribe
/// to topics that do not exist yet on a broker that has just started, often on a loaded
/// machine: Apache Pulsar standalone answers `ServiceNotReady` while it creates a topic's
/// ledger, which took more than 10 s in CI, and pulsar-rs asks again only every 5 s.
pub const LIVE_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds a [`LiveApp`]; `.await` it to connect.
pub struct LiveAppBuilder<A: App> {
    app: A,
    state: Option<A::State>,
    runtime: Arc<dyn Runtime>,
    /// What replaces the app's own broker settings.
    overrides: PulsarOverrides,
}

impl LiveApp {
    /// Run `app` with `state` (skipping `on_startup`) on `runtime`.
    pub fn with_state<A: App>(
        app: A,
        state: A::State,
        runtime: Arc<dyn Runtime>,
    ) -> LiveAppBuilder<A> {
        LiveAppBuilder {
            app,
            state: Some(state),
            runtime,
            overrides: PulsarOverrides::new().connect_timeout(LIVE_CONNECT_TIMEOUT),
        }
    }

    fn running(&self) -> &RunningApp {
        self.app
            .as_ref()
            .expect("the live app is running until stop()")
    }

    /// Publish `message` (a [`Message`](ruststream::message::Message) with its options, or
    /// `&value` of an `#[outgoing]` type, to its topic) through the app's broker, waiting for
    /// the broker's receipt; the message id.
    pub async fn publish(&self, message: impl IntoMessage) -> Result<MessageId, PublishError> {
        self.running().publish(message).await
    }

    /// Publish `messages`, all to one topic, as one batch through a batching producer (they
    /// share one entry on the broker), waiting for the receipts; the message ids.
    pub async fn publish_batch<M: IntoMessage>(
        &self,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<Vec<MessageId>, PublishError> {
        self.running().publish_batch(messages).await
    }

    /// Every handler call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.calls()
    }

    /// The calls of handler `name`.
    pub fn calls_of(&self, name: &str) -> Vec<Call> {
        self.calls.calls_of(name)
    }

    /// Wait until `done` holds, checking every 20 ms on the app's runtime, for at most
    /// `within`. Whether it came true.
    pub async fn wait_until(
        &self,
        within: Duration,
        mut done: impl FnMut(&LiveApp) -> bool,
    ) -> bool {
        let deadline = self.runtime.now().saturating_add(within);
        loop {
            if done(self) {
                return true;
            }
            if self.runtime.now() >= deadline {
                return false;
            }
            self.runtime.sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sleep on the app's runtime.
    pub async fn sleep(&self, duration: Duration) {
        self.runtime.sleep(duration).await;
    }

    /// Stop the app gracefully.
    pub async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
    }
}

impl<A: App> LiveAppBuilder<A> {
    /// Connect every Pulsar broker of the app to `url` instead of the URL in `app()`.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.overrides = self.overrides.url(url);
        self
    }

    /// Resolve short topic names in `tenant/namespace` (see [`PulsarBroker::namespace`](crate::PulsarBroker::namespace)).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.overrides = self.overrides.namespace(namespace);
        self
    }

    /// Acknowledge batched messages at batch-index level too (see
    /// [`PulsarBroker::batch_index_acknowledgement`](crate::PulsarBroker::batch_index_acknowledgement)).
    pub fn batch_index_acknowledgement(mut self, enabled: bool) -> Self {
        self.overrides = self.overrides.batch_index_acknowledgement(enabled);
        self
    }

    /// Bound connecting and subscribing at start by `bound` instead of
    /// [`LIVE_CONNECT_TIMEOUT`].
    pub fn connect_timeout(mut self, bound: Duration) -> Self {
        self.overrides = self.overrides.connect_timeout(bound);
        self
    }

    /// Replace more of the app's broker settings (credentials, TLS): `change` is given the
    /// overrides so far.
    pub fn overrides(mut self, change: impl FnOnce(PulsarOverrides) -> PulsarOverrides) -> Self {
        self.overrides = change(self.overrides);
        self
    }

    async fn build(self) -> Result<LiveApp, StartError> {
        let calls = Arc::new(Recorder::default());
        let parts: AppParts<A::State> = self.app.into_parts();
        let context = StartContext::new(self.runtime.clone())
            .with(self.overrides)
            .with(HarnessLayer(calls.clone()));
        let app = parts.start(context, self.state).await?;
        Ok(LiveApp {
            app: Some(app),
            runtime: self.runtime,
            calls,
        })
    }
}

impl<A: App> IntoFuture for LiveAppBuilder<A> {
    type Output = Result<LiveApp, StartError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.build())
    }
}
