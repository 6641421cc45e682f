//! The `App` trait and starting an app.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{AppInfo, BoxError, Broker, RunningBroker, StartContext, StartError};
use crate::boxed::BoxFuture;
use crate::message::{IntoMessage, MessageId};
use crate::publish::PublishError;
use crate::publish::Publishing;

/// Builds the app state at startup.
pub type Startup<S> = Box<dyn FnOnce() -> BoxFuture<'static, Result<S, BoxError>> + Send>;

/// A complete service description: what `fn app() -> impl App<State = ..>` returns.
///
/// Implemented by [`RustStream`](super::RustStream). The same value runs in production (through
/// the `main` that `#[ruststream::app]` writes) and in tests (through a broker crate's
/// `TestApp`), with no configuration switch in it.
pub trait App: Send + 'static {
    /// The state handlers take their `State<T>` parameters from.
    type State: Send + Sync + 'static;

    /// Take the app apart, to start it or to adapt it for a test.
    fn into_parts(self) -> AppParts<Self::State>;
}

/// An app taken apart: its identity, its startup and its brokers.
#[non_exhaustive]
pub struct AppParts<S> {
    /// Name and version.
    pub info: AppInfo,
    /// Builds the state.
    pub startup: Startup<S>,
    /// The brokers with their handlers, in the order they were added.
    pub brokers: Vec<Box<dyn Broker<S>>>,
    /// The app's layers, around every broker's handlers (`RustStream::layer`). They reach
    /// each broker through the start context, as a [`Stack`](crate::middleware::Stack).
    pub layers: crate::middleware::Stack,
    /// A mistake in how the app was assembled, reported when it starts.
    pub misuse: Option<String>,
}

impl<S: Send + Sync + 'static> AppParts<S> {
    /// Check every registration, build the state (with `on_startup`, unless `state` is given),
    /// then start the brokers in order with `context`.
    ///
    /// Nothing connects unless every registration of every broker is valid, and `on_startup`
    /// does not run either: a mistake is reported before any side effect.
    pub async fn start(
        self,
        context: StartContext,
        state: Option<S>,
    ) -> Result<RunningApp, StartError> {
        if let Some(misuse) = self.misuse {
            return Err(StartError::Misuse(misuse));
        }
        for broker in &self.brokers {
            broker.check()?;
        }
        let state = match state {
            Some(state) => state,
            None => (self.startup)().await.map_err(StartError::Startup)?,
        };
        let state = Arc::new(state);
        let context = match self.layers.is_empty() {
            true => context,
            false => context.with(self.layers),
        };
        let mut running = Vec::with_capacity(self.brokers.len());
        for broker in self.brokers {
            match broker.start(state.clone(), context.clone()).await {
                Ok(b) => running.push(b),
                Err(e) => {
                    for b in running {
                        b.stop().await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(RunningApp {
            info: self.info,
            brokers: running,
        })
    }
}

/// A started app.
pub struct RunningApp {
    info: AppInfo,
    brokers: Vec<Box<dyn RunningBroker>>,
}

impl RunningApp {
    /// Name and version.
    pub fn info(&self) -> &AppInfo {
        &self.info
    }

    /// The started brokers, in the order they were added.
    pub fn brokers(&self) -> &[Box<dyn RunningBroker>] {
        &self.brokers
    }

    /// Publish `message` (a [`Message`](crate::message::Message), or `&value` of an
    /// `#[outgoing]` type, to its topic) through the app's first broker, waiting for the
    /// broker's receipt; the message id.
    ///
    /// # Errors
    ///
    /// The value does not encode, the broker refuses, or [`PublishError::NoBroker`].
    ///
    /// A plain function returning the broker's [`Publishing`] rather than an `async fn`: the
    /// message goes straight to the broker, not into one more future first.
    pub fn publish(&self, message: impl IntoMessage) -> Publishing<'_, MessageId> {
        let message = match message.into_message() {
            Ok(message) => message,
            Err(error) => return Publishing::done(Err(error.into())),
        };
        match self.first_broker() {
            Ok(broker) => broker.publish(message),
            Err(error) => Publishing::done(Err(error)),
        }
    }

    /// Hand `message` to the app's first broker without waiting for its answer, which
    /// `receipt` is told: many messages in flight at once, as a producer batches them. Waits
    /// only while the producer holds as many unanswered messages as it may. A
    /// [`Pipeline`](crate::publish::Pipeline) counts the answers of many sends.
    ///
    /// # Errors
    ///
    /// The value does not encode, the topic is invalid, the producer could not open, or
    /// [`PublishError::NoBroker`]; `receipt` is told the same.
    pub fn send(
        &self,
        message: impl IntoMessage,
        receipt: crate::publish::Receipt,
    ) -> Publishing<'_, ()> {
        let message = match message.into_message() {
            Ok(message) => message,
            Err(error) => {
                let error = PublishError::from(error);
                receipt.tell(Err(error.clone()));
                return Publishing::done(Err(error));
            }
        };
        match self.first_broker() {
            Ok(broker) => broker.send(message, receipt),
            Err(error) => {
                receipt.tell(Err(error.clone()));
                Publishing::done(Err(error))
            }
        }
    }

    /// The broker the app's publish calls go through.
    fn first_broker(&self) -> Result<&dyn RunningBroker, PublishError> {
        self.brokers
            .first()
            .map(|b| &**b)
            .ok_or_else(|| PublishError::NoBroker)
    }

    /// Publish `messages`, all to one topic, as one batch through the app's first broker (see
    /// [`RunningBroker::publish_batch`](super::RunningBroker::publish_batch)); their ids.
    ///
    /// # Errors
    ///
    /// A value does not encode, the messages name more than one topic, the broker refuses, or
    /// [`PublishError::NoBroker`].
    pub async fn publish_batch<M: IntoMessage>(
        &self,
        messages: impl IntoIterator<Item = M>,
    ) -> Result<Vec<MessageId>, PublishError> {
        let messages = messages
            .into_iter()
            .map(IntoMessage::into_message)
            .collect::<Result<Vec<_>, _>>()?;
        crate::message::batch_topic(&messages)?;
        self.first_broker()?.publish_batch(messages).await
    }

    /// Completes once no broker has anything in flight.
    pub async fn idle(&self) {
        // One pass is not enough: settling on one broker may publish to another.
        loop {
            for b in &self.brokers {
                b.idle().await;
            }
            if self.brokers.iter().all(|b| b.in_flight() == 0) {
                return;
            }
        }
    }

    /// How many deliveries in flight, over every broker.
    pub fn in_flight(&self) -> usize {
        self.brokers.iter().map(|b| b.in_flight()).sum()
    }

    /// How many deliveries were handed to handlers since start, over every broker.
    pub fn handled(&self) -> u64 {
        self.brokers.iter().map(|b| b.handled()).sum()
    }

    /// Wake `waker` at the next delivery any broker hands to a handler.
    pub fn wake_on_handled(&self, waker: &core::task::Waker) {
        for b in &self.brokers {
            b.wake_on_handled(waker);
        }
    }

    /// Whether every broker can do its work now: a check to keep and ask while the app runs
    /// (the runner's `/readyz`).
    pub fn health(&self) -> super::HealthCheck {
        super::HealthCheck::all(self.brokers.iter().map(|b| b.health()).collect())
    }

    /// End every broker at once, as a process that dies does (see
    /// [`RunningBroker::kill`]).
    pub async fn kill(self) {
        for b in self.brokers.into_iter().rev() {
            b.kill().await;
        }
    }

    /// Stop every broker gracefully, in reverse order.
    pub async fn stop(self) {
        for b in self.brokers.into_iter().rev() {
            b.stop().await;
        }
    }
}

impl core::fmt::Debug for RunningApp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RunningApp")
            .field("info", &self.info)
            .field("brokers", &self.brokers.len())
            .finish()
    }
}
