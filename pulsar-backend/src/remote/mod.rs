//! The Pulsar server transport: pulsar-rs on the app's runtime.
//!
//! Connecting, one consumer per subscription (type, ack timeout as pulsar-rs's unacked-message
//! resend delay, dead-letter policy, receiver queue sized to the concurrency), one driver task
//! per consumer, and one producer per topic for publishing, each publish awaiting its receipt.

mod activity;
mod connect;
mod consumer;
mod executor;
mod publisher;

use std::any::Any;
use std::sync::Arc;

use pulsar::consumer::ConsumerOptions;
use pulsar::{Executor, Pulsar, TokioExecutor};
use ruststream::app::{BoxError, RunningBroker, StartError};
use ruststream::handler::BoxFuture;
use ruststream::message::{Headers, Record};
use ruststream::runtime::Runtime;

use activity::Activity;
use consumer::RemoteConsumer;
pub(crate) use executor::AppExecutor;
use publisher::Publisher;

use crate::broker::{Plan, Planned, PulsarBroker};
use crate::driver::DriverHandle;

/// How to reach the server, besides its URL.
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection {
    pub(crate) token: Option<String>,
    pub(crate) trust_certificates: Option<std::path::PathBuf>,
    pub(crate) allow_insecure_tls: bool,
}

/// Connect on `runtime` and start the drivers.
///
/// Inside a tokio runtime pulsar-rs runs on tokio; elsewhere (smol, async-std) on async-io
/// sockets with its tasks spawned on the app's runtime. Either way every `retry_after` wait
/// runs on `runtime`'s timer.
pub(crate) async fn start<S: Send + Sync + 'static>(
    broker: &PulsarBroker<S>,
    plan: Plan<S>,
    state: Arc<S>,
    runtime: Arc<dyn Runtime>,
) -> Result<Box<dyn RunningBroker>, StartError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        start_on(broker, plan, state, runtime, TokioExecutor).await
    } else {
        let exe = AppExecutor::new(runtime.clone());
        start_on(broker, plan, state, runtime, exe).await
    }
}

fn connect_error(url: &str, what: impl std::fmt::Display) -> StartError {
    StartError::Connect {
        broker: "pulsar",
        source: format!(
            "cannot connect to the Pulsar broker at {url}: {what}. Check that it runs and \
             listens there, or run with `--embedded` to use the in-process broker"
        )
        .into(),
    }
}

/// Why subscribing did not succeed within the startup bound, and what to do.
fn subscribe_timed_out<S>(planned: &Planned<S>, bound: std::time::Duration) -> String {
    let why = match planned.kind {
        ruststream::SubscriptionType::Exclusive => format!(
            "an Exclusive subscription takes one consumer and another one holds `{}` (another \
             instance of this service, or one that died and that the broker has not dropped \
             yet). Stop the other instance, or use Failover (one active, standbys take over) \
             or Shared",
            planned.subscription
        ),
        _ => "the broker kept refusing the consumer (see the warnings above: ServiceNotReady \
              or ConsumerBusy)"
            .to_owned(),
    };
    format!(
        "cannot subscribe `{}` to {} as {} within {bound:?} (`PulsarBroker::connect_timeout`): \
         {why}",
        planned.subscription, planned.topic, planned.kind
    )
}

async fn start_on<S: Send + Sync + 'static, Exe: Executor>(
    broker: &PulsarBroker<S>,
    plan: Plan<S>,
    state: Arc<S>,
    runtime: Arc<dyn Runtime>,
    exe: Exe,
) -> Result<Box<dyn RunningBroker>, StartError> {
    let url = plan.url.to_string();
    let pulsar: Pulsar<Exe> =
        connect::connect(&plan.url, &broker.connection, broker.connect_timeout, exe).await?;
    let activity = Activity::default();
    let publisher = Arc::new(Publisher::new(pulsar.clone(), broker.namespace.clone()));
    let mut drivers = Vec::with_capacity(plan.subscriptions.len());
    for planned in plan.subscriptions {
        let builder =
            pulsar
                .consumer()
                .with_topic(planned.topic.to_string())
                .with_subscription(planned.subscription.clone())
                .with_subscription_type(crate::sub_type(planned.kind).ok_or_else(|| {
                    connect_error(
                        &url,
                        format!("unsupported subscription type {}", planned.kind),
                    )
                })?)
                .with_consumer_name(format!("{}-{}", planned.handler.name(), std::process::id()))
                .with_options(ConsumerOptions::default().with_receiver_queue_size(
                    u32::try_from(planned.concurrency).unwrap_or(u32::MAX),
                ))
                .with_unacked_message_resend_delay(planned.ack_timeout);
        // pulsar-rs retries a refused subscription (ConsumerBusy, ServiceNotReady) every 5 s
        // without end; at startup the connect bound applies to it too.
        let subscribing = std::pin::pin!(builder.build::<Vec<u8>>());
        let timer = std::pin::pin!(runtime.sleep(broker.connect_timeout));
        let consumer = match futures::future::select(subscribing, timer).await {
            futures::future::Either::Left((built, _)) => {
                built.map_err(|e| StartError::Connect {
                    broker: "pulsar",
                    source: format!(
                        "cannot subscribe `{}` to {} as {}: {e}",
                        planned.subscription, planned.topic, planned.kind
                    )
                    .into(),
                })?
            }
            futures::future::Either::Right(_) => {
                return Err(StartError::Connect {
                    broker: "pulsar",
                    source: subscribe_timed_out(&planned, broker.connect_timeout).into(),
                })
            }
        };
        drivers.push(broker.launch(
            planned,
            RemoteConsumer::new(
                consumer,
                activity.clone(),
                runtime.clone(),
                broker.batch_index_acks,
            ),
            &state,
            &runtime,
            publisher.clone(),
        ));
    }
    Ok(Box::new(RunningRemote {
        publisher,
        drivers,
        activity,
    }))
}

/// A started broker on a Pulsar server.
struct RunningRemote<Exe: Executor> {
    publisher: Arc<Publisher<Exe>>,
    drivers: Vec<DriverHandle>,
    activity: Activity,
}

impl<Exe: Executor> RunningBroker for RunningRemote<Exe> {
    fn publish<'a>(
        &'a self,
        topic: &'a str,
        payload: Vec<u8>,
        headers: Headers,
        key: Option<String>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.publisher.publish(topic, payload, headers, key).await?;
            Ok(())
        })
    }

    fn publish_batch<'a>(
        &'a self,
        topic: &'a str,
        records: Vec<Record>,
    ) -> BoxFuture<'a, Result<Vec<String>, BoxError>> {
        Box::pin(self.publisher.publish_batch(topic, records))
    }

    fn idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.activity.idle())
    }

    fn in_flight(&self) -> usize {
        self.activity.count()
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            DriverHandle::stop_all(self.drivers).await;
            self.publisher.close().await;
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
