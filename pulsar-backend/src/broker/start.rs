//! Starting a checked broker on the transport its start context asks for.

use std::sync::Arc;

use ruststream::app::{RunningBroker, Settings, StartContext, StartError};

use super::{PulsarBroker, PulsarOverrides};
use crate::inprocess::{InProcessPulsar, InProcessTransport};
use crate::layers::HarnessLayer;
use crate::registration::{check, BrokerSettings, Checked};
use crate::remote::RemoteSettings;
use crate::transport::{start_on, LaunchSettings};
use crate::Retention;

impl<S: Send + Sync + 'static> PulsarBroker<S> {
    /// Every registration checked, names resolved.
    pub(crate) fn checked(&self) -> Result<Checked<S>, StartError> {
        check(
            &BrokerSettings {
                url: &self.url,
                default_subscription: &self.default_subscription,
                namespace: self.namespace.as_deref(),
                connect_timeout: self.connect_timeout,
            },
            &self.registrations,
        )
    }

    pub(super) fn apply(&mut self, overrides: &PulsarOverrides) {
        if let Some(url) = &overrides.url {
            self.url.clone_from(url);
        }
        use crate::credentials::{ClientCertificate, Credentials, Secret};
        if let Some(token) = &overrides.token {
            let token = Secret(token.as_str().into());
            self.connection.credentials = Some(Credentials::Token(token));
        }
        if let Some(path) = &overrides.token_file {
            self.connection.credentials = Some(Credentials::TokenFile(path.clone()));
        }
        if let Some(oauth2) = &overrides.oauth2 {
            self.connection.credentials = Some(Credentials::OAuth2(oauth2.clone()));
        }
        if let Some(path) = &overrides.trust_certificates {
            self.connection.trust_certificates = Some(path.clone());
        }
        if let Some((certificate, private_key)) = &overrides.client_certificate {
            self.connection.client_certificate = Some(ClientCertificate {
                certificate: certificate.clone(),
                private_key: private_key.clone(),
            });
        }
        if let Some(namespace) = &overrides.namespace {
            self.namespace = Some(namespace.clone());
        }
        if let Some(enabled) = overrides.batch_index_acknowledgement {
            self.batch_index_acks = enabled;
        }
        if let Some(bound) = overrides.connect_timeout {
            self.connect_timeout = bound;
        }
    }
}

/// Start `broker`: on the in-process Pulsar when the context asks for stand-ins (the one it
/// carries, or a new one), else on the server at its URL.
///
/// A context that carries no in-process Pulsar is `run --embedded`'s (a test harness brings
/// its own, which keeps everything for the test to read back): the new one frees each message
/// once every subscription acknowledged it ([`Retention::until_acknowledged`]), as Pulsar
/// drops acknowledged ledgers, so that a long embedded run holds flat memory.
pub(super) async fn start<S: Send + Sync + 'static>(
    mut broker: PulsarBroker<S>,
    state: Arc<S>,
    context: StartContext,
) -> Result<Box<dyn RunningBroker>, StartError> {
    if let Some(settings) = context.get::<Settings>() {
        broker.apply(&PulsarOverrides::from_settings(settings));
    }
    if let Some(overrides) = context.get::<PulsarOverrides>() {
        broker.apply(overrides);
    }
    let checked = broker.checked()?;
    // Outermost first: the built-ins, a harness's recorder, the app's layers, the broker's.
    let mut layers = broker.builtins.clone();
    if let Some(HarnessLayer(layer)) = context.get::<HarnessLayer>() {
        layers = layers.around(&ruststream::middleware::Stack::new().push_shared(layer.clone()));
    }
    if let Some(app) = context.get::<ruststream::middleware::Stack>() {
        layers = layers.around(app);
    }
    let launch = LaunchSettings {
        runtime: context.runtime().clone(),
        layers: layers.around(&broker.layers),
        shutdown_grace: broker.shutdown_grace,
    };
    if context.is_in_process() {
        let pulsar = context
            .get::<InProcessPulsar>()
            .cloned()
            .unwrap_or_else(|| InProcessPulsar::with_retention(Retention::until_acknowledged()));
        let transport = InProcessTransport::start(
            pulsar,
            launch.runtime.clone(),
            broker.namespace.clone(),
            broker.key_hashing,
            broker.chunk_over,
        );
        return start_on(transport, checked, state, launch).await;
    }
    crate::remote::start(remote_settings(broker), checked, state, launch).await
}

/// What pulsar-rs's transport takes from a broker's settings, to start it or to replay its
/// dead letters.
pub(super) fn remote_settings<S>(broker: PulsarBroker<S>) -> RemoteSettings {
    RemoteSettings {
        connection: broker.connection,
        namespace: broker.namespace,
        connect_timeout: broker.connect_timeout,
        batch_index_acks: broker.batch_index_acks,
        key_hashing: broker.key_hashing,
        chunk_over: broker.chunk_over,
        batching: broker.batching,
        pending: broker.pending,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::DEFAULT_CONNECT_TIMEOUT;

    #[test]
    fn overrides_replace_only_what_they_name() {
        let mut broker = PulsarBroker::<()>::new("pulsar://127.0.0.1:6650").namespace("a/b");
        broker.apply(&PulsarOverrides::new());
        assert_eq!(broker.url, "pulsar://127.0.0.1:6650");
        assert_eq!(broker.namespace.as_deref(), Some("a/b"));
        assert_eq!(broker.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert!(!broker.batch_index_acks);

        broker.apply(
            &PulsarOverrides::new()
                .url("pulsar://127.0.0.1:6651")
                .namespace("c/d")
                .batch_index_acknowledgement(true)
                .connect_timeout(Duration::from_secs(60)),
        );
        assert_eq!(broker.url, "pulsar://127.0.0.1:6651");
        assert_eq!(broker.namespace.as_deref(), Some("c/d"));
        assert_eq!(broker.connect_timeout, Duration::from_secs(60));
        assert!(broker.batch_index_acks);
    }
}
