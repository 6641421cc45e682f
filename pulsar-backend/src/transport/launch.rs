//! Starting a broker on a transport: one consumer and one driver task per subscription.

use std::sync::Arc;

use ruststream::app::{RunningBroker, StartError};
use ruststream::middleware::{LayeredPort, Mounting, Stack};
use ruststream::publish::Publish;
use ruststream::runtime::Runtime;

use ruststream::broker::machine::MachineConfig;
use ruststream_driver::{DriverConfig, DriverHandle, Handled, Wrap};

use super::compressing::Compressing;
use super::{RunningPulsar, Transport};
use crate::registration::{Checked, CheckedSubscription};
use crate::republish::PulsarCopies;

/// What every driver of a broker shares.
pub(crate) struct LaunchSettings {
    pub(crate) runtime: Arc<dyn Runtime>,
    /// The layers around every handler of the broker, outermost first (built-ins, a
    /// harness's, the app's, the broker's), before each is mounted for its registration.
    pub(crate) layers: Stack,
    pub(crate) shutdown_grace: std::time::Duration,
}

/// Subscribe every checked subscription on `transport` and start its driver. If one
/// subscription fails, the drivers already started are stopped again.
pub(crate) async fn start_on<T: Transport, S: Send + Sync + 'static>(
    transport: T,
    checked: Checked<S>,
    state: Arc<S>,
    settings: LaunchSettings,
) -> Result<Box<dyn RunningBroker>, StartError> {
    let transport = Arc::new(transport);
    let handled = Arc::new(Handled::default());
    let transactional =
        (checked.subscriptions.iter()).find(|subscription| subscription.transaction.is_some());
    if let (Some(subscription), Some(opener)) = (transactional, transport.transactions()) {
        // Opened (and aborted) once now, so that a broker without transactions stops the
        // service at startup rather than failing every delivery.
        let probe = match opener.begin(std::time::Duration::from_secs(30)).await {
            Ok(txn) => txn.handle.abort().await,
            Err(error) => Err(error),
        };
        if let Err(error) = probe {
            let problem = format!(
                "handler `{}` is registered `.transactional()`, and {} could not open a \
                 transaction: {error}",
                subscription.handler.name(),
                transport.label()
            );
            transport.close().await;
            return Err(StartError::Connect {
                broker: "pulsar",
                source: problem.into(),
            });
        }
    }
    if let (Some(subscription), None) = (transactional, transport.transactions()) {
        let problem = format!(
            "handler `{}` is registered `.transactional()`, and {} offers no transactions; \
             register it without `.transactional()`, or run it on a broker that has them",
            subscription.handler.name(),
            transport.label()
        );
        transport.close().await;
        return Err(StartError::Invalid {
            broker: "pulsar",
            problems: vec![problem.into()],
        });
    }
    let mut drivers = Vec::with_capacity(checked.subscriptions.len());
    for subscription in checked.subscriptions {
        let consumer = match transport.subscribe(&subscription).await {
            Ok(consumer) => consumer,
            Err(e) => {
                DriverHandle::stop_all(drivers).await;
                transport.close().await;
                return Err(e);
            }
        };
        drivers.push(launch(
            &*transport,
            subscription,
            consumer,
            &state,
            &settings,
            &handled,
        ));
    }
    Ok(Box::new(RunningPulsar::new(
        settings.layers,
        transport,
        drivers,
        handled,
    )))
}

/// Start the driver of one subscription on its consumer.
fn launch<T: Transport, S: Send + Sync + 'static>(
    transport: &T,
    subscription: CheckedSubscription<S>,
    consumer: T::Consumer,
    state: &Arc<S>,
    settings: &LaunchSettings,
    handled: &Arc<Handled>,
) -> DriverHandle {
    tracing::info!(
        handler = subscription.handler.name(),
        topics = %subscription.topics,
        subscription = %subscription.subscription,
        kind = %subscription.kind,
        broker = %transport.label(),
        "subscribed"
    );
    let publisher = transport.publisher();
    let copies = PulsarCopies {
        dead_letter: (subscription.dead_letter.as_ref()).map(|(_, topic)| topic.as_str().into()),
        retry: (subscription.retry_topic.as_ref()).map(|topic| topic.as_str().into()),
    };
    let topics = subscription.topics.to_string();
    let mounting = Mounting::new(
        subscription.handler.name(),
        &subscription.subscription,
        &topics,
    )
    .with_dead_letter(copies.dead_letter.as_deref());
    let stack = settings
        .layers
        .around(&subscription.layers)
        .mount(&mounting);
    let handler_port = match subscription.compression {
        Some(codec) => Arc::new(Compressing::new(publisher.clone(), codec)) as Arc<dyn Publish>,
        None => publisher.clone(),
    };
    // A transactional registration's handler publishes over each transaction's port, wrapped
    // as it is over the broker's.
    let compression = subscription.compression;
    let txn_stack = stack.clone();
    let wrap: Wrap = Arc::new(move |port: Arc<dyn Publish>| {
        let port = match compression {
            Some(codec) => Arc::new(Compressing::new(port, codec)) as Arc<dyn Publish>,
            None => port,
        };
        LayeredPort::wrap(&txn_stack, port)
    });
    let machine = MachineConfig {
        key_ordered: subscription.key_ordered,
        ordered_retries: subscription.ordered_retries,
        max_attempts: (subscription.dead_letter.as_ref())
            .and_then(|(max_attempts, _)| max_attempts.map(|n| n.get())),
        dead_letter_topic: copies.dead_letter.is_some(),
        retry_topic: copies.retry.is_some(),
        batch: subscription.batch,
        transactional: subscription.transaction,
        ..MachineConfig::new(subscription.concurrency)
    };
    let transactions = match subscription.transaction {
        Some(_) => transport.transactions().map(|opener| (opener, wrap)),
        None => None,
    };
    subscription.handler.launch(
        consumer,
        DriverConfig {
            state: state.clone(),
            runtime: settings.runtime.clone(),
            rules: subscription.rules,
            machine,
            handled: handled.clone(),
            shutdown_grace: settings.shutdown_grace,
            publisher: Some(LayeredPort::wrap(&stack, handler_port)),
            stack,
            copies: publisher,
            republisher: Arc::new(copies),
            topic: topics.into(),
            transactions,
        },
    )
}
