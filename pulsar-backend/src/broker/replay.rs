//! A configured broker's dead-letter replay: the same settings as starting it, no handler.

use ruststream::app::{Settings, StartContext};
use ruststream::replay::{Replay, ReplayError, ReplaySummary};

use super::{PulsarBroker, PulsarOverrides};
use crate::inprocess::InProcessPulsar;
use crate::url::BrokerUrl;
use crate::Retention;

/// Run `replay` with `broker`'s URL, credentials, TLS and namespace as `context` overrides
/// them (the runner's `--pulsar-url` and the rest), or on the context's in-process Pulsar when
/// it asks for stand-ins (a new, empty one if it carries none). The handlers mounted on
/// `broker` are not started, and their registrations are not checked: the replay reads with a
/// subscription of its own.
pub(crate) async fn replay<S: Send + Sync + 'static>(
    mut broker: PulsarBroker<S>,
    replay: Replay,
    context: StartContext,
) -> Result<ReplaySummary, ReplayError> {
    if let Some(settings) = context.get::<Settings>() {
        broker.apply(&PulsarOverrides::from_settings(settings));
    }
    if let Some(overrides) = context.get::<PulsarOverrides>() {
        broker.apply(overrides);
    }
    let runtime = context.runtime().clone();
    if context.is_in_process() {
        let pulsar = context
            .get::<InProcessPulsar>()
            .cloned()
            .unwrap_or_else(|| InProcessPulsar::with_retention(Retention::until_acknowledged()));
        return crate::inprocess::replay(
            pulsar,
            broker.namespace,
            broker.key_hashing,
            replay,
            runtime,
        )
        .await;
    }
    let url = BrokerUrl::parse(&broker.url).map_err(|e| ReplayError::Connect {
        broker: "pulsar",
        source: e.into(),
    })?;
    if broker.connect_timeout.is_zero() {
        return Err(ReplayError::Connect {
            broker: "pulsar",
            source: "`PulsarBroker::connect_timeout` is zero, so no attempt to connect could be \
                     made; give it a bound such as 10 s"
                .into(),
        });
    }
    crate::remote::replay(super::start::remote_settings(broker), url, replay, runtime).await
}
