//! Starting a checked broker: one consumer and one driver task per subscription.

use std::any::Any;
use std::sync::Arc;

use ruststream::app::{BoxError, RunningBroker, StartError};
use ruststream::handler::BoxFuture;
use ruststream::message::{Headers, Record};
use ruststream::runtime::Runtime;

use super::PulsarBroker;
use ruststream::handler::Publish;

use super::Planned;
use crate::driver::{ConsumerPort, DeadLetter, Driver, DriverConfig, DriverHandle};
use crate::inprocess::InProcessPulsar;

/// Where the broker's consumers and producers live.
pub(crate) enum Transport {
    /// A Pulsar server at the broker's URL, through pulsar-rs.
    Remote,
    /// The in-process Pulsar (tests, `run --embedded`).
    InProcess(InProcessPulsar),
}

pub(crate) async fn start<S: Send + Sync + 'static>(
    broker: PulsarBroker<S>,
    state: Arc<S>,
    runtime: Arc<dyn Runtime>,
) -> Result<Box<dyn RunningBroker>, StartError> {
    let plan = broker.plan()?;
    let pulsar = match &broker.transport {
        Transport::InProcess(pulsar) => pulsar.clone(),
        Transport::Remote => return crate::remote::start(&broker, plan, state, runtime).await,
    };
    pulsar.start_timer(runtime.clone());
    let mut drivers = Vec::with_capacity(plan.subscriptions.len());
    for planned in plan.subscriptions {
        let consumer = pulsar
            .subscribe(&planned, runtime.clone())
            .map_err(|source| StartError::Connect {
                broker: "pulsar",
                source,
            })?;
        let publisher: Arc<dyn Publish> = Arc::new(pulsar.clone());
        drivers.push(broker.launch(planned, consumer, &state, &runtime, publisher));
    }
    Ok(Box::new(RunningPulsar {
        pulsar,
        drivers: std::sync::Mutex::new(drivers),
    }))
}

impl<S: Send + Sync + 'static> PulsarBroker<S> {
    /// Start the driver of one subscription on its consumer: the step every transport shares.
    pub(crate) fn launch<C: ConsumerPort>(
        &self,
        planned: Planned<S>,
        consumer: C,
        state: &Arc<S>,
        runtime: &Arc<dyn Runtime>,
        publisher: Arc<dyn Publish>,
    ) -> DriverHandle {
        tracing::info!(
            handler = planned.handler.name(),
            topic = %planned.topic,
            subscription = %planned.subscription,
            kind = %planned.kind,
            broker = match self.transport {
                Transport::InProcess(_) => "in-process",
                Transport::Remote => self.url.as_str(),
            },
            "subscribed"
        );
        let dead_letter = planned
            .dead_letter
            .as_ref()
            .map(|(max_attempts, topic)| DeadLetter {
                max_attempts: max_attempts.get(),
                topic: topic.as_str().into(),
                publisher: publisher.clone(),
            });
        let driver = Driver::new(
            consumer,
            DriverConfig {
                handler: planned.handler,
                state: state.clone(),
                runtime: runtime.clone(),
                rules: planned.rules,
                concurrency: planned.concurrency,
                observer: self.observer.clone(),
                shutdown_grace: self.shutdown_grace,
                publisher: Some(publisher),
                dead_letter,
            },
        );
        DriverHandle::spawn(runtime, driver)
    }
}

/// A started Pulsar broker.
pub(crate) struct RunningPulsar {
    pub(crate) pulsar: InProcessPulsar,
    drivers: std::sync::Mutex<Vec<DriverHandle>>,
}

impl RunningPulsar {
    fn take_drivers(&self) -> Vec<DriverHandle> {
        std::mem::take(&mut *self.drivers.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// End the drivers as a process that dies does (see [`DriverHandle::kill_all`]).
    pub(crate) async fn kill(&self) {
        DriverHandle::kill_all(self.take_drivers()).await;
    }
}

impl RunningBroker for RunningPulsar {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        headers: Headers,
        key: Option<String>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.pulsar.publish(topic, payload, headers, key)?;
            Ok(())
        })
    }

    fn publish_batch<'a>(
        &'a self,
        topic: &'a str,
        records: Vec<Record>,
    ) -> BoxFuture<'a, Result<Vec<String>, BoxError>> {
        Box::pin(async move { self.pulsar.publish_batch(topic, records) })
    }

    fn idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.pulsar.idle())
    }

    fn in_flight(&self) -> usize {
        self.pulsar.in_flight()
    }

    fn next_deadline(&self) -> Option<ruststream::Instant> {
        self.pulsar.next_deadline()
    }

    fn fire_due(&self) {
        self.pulsar.handle_timeouts();
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            DriverHandle::stop_all(self.take_drivers()).await;
            self.pulsar.stop_timer();
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
