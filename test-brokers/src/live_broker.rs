//! The one broker handle a live test holds.

use crate::{BrokerError, DeliveryLog, LiteBridge, PulsarLite};

/// The environment variable naming an already running broker (`pulsar://host:port`), for
/// checking the live tests against Apache Pulsar instead of pulsar-lite.
pub const EXTERNAL_URL_ENV: &str = "RUSTSTREAM_PULSAR_URL";

/// A real broker for one test: its URL for pulsar-rs and a name for reports.
///
/// Live tests are written once against this handle, whichever broker backs it: pulsar-lite
/// started for the test behind a [`LiteBridge`], or an external broker from
/// [`EXTERNAL_URL_ENV`]. Dropping it stops what it started (bridge first, then the broker
/// process, killed by PID and waited for); an external broker is left alone.
#[derive(Debug)]
pub struct LiveBroker {
    url: String,
    name: String,
    // Field order is drop order: the bridge closes its connections before the broker dies.
    bridge: Option<LiteBridge>,
    lite: Option<PulsarLite>,
}

impl LiveBroker {
    /// Starts a fresh pulsar-lite and a bridge in front of it.
    ///
    /// The blocking start runs on a thread of its own, so this future works on any async
    /// runtime and does not stall the caller's executor.
    pub async fn pulsar_lite() -> Result<Self, BrokerError> {
        let (answer, answered) = futures::channel::oneshot::channel();
        std::thread::Builder::new()
            .name(String::from("pulsar-lite-start"))
            .spawn(move || {
                // An Err means the caller stopped waiting; the broker is then dropped (killed).
                let _ = answer.send(Self::pulsar_lite_blocking());
            })
            .map_err(|source| BrokerError::Bridge {
                what: "spawn the thread that starts pulsar-lite",
                source,
            })?;
        answered.await.map_err(|_| BrokerError::StartupPanicked)?
    }

    /// [`LiveBroker::pulsar_lite`] for callers outside any async runtime; blocks until the
    /// broker listens.
    pub fn pulsar_lite_blocking() -> Result<Self, BrokerError> {
        let lite = PulsarLite::start()?;
        let bridge = LiteBridge::start(lite.addr())?;
        Ok(Self {
            url: bridge.url(),
            name: format!("pulsar-lite {} (via bridge)", lite.version()),
            bridge: Some(bridge),
            lite: Some(lite),
        })
    }

    /// The broker named by [`EXTERNAL_URL_ENV`], or `None` when it is unset or empty.
    ///
    /// Nothing is started and nothing is checked beyond the URL's form: the first client
    /// connection tells whether it runs.
    pub fn from_env() -> Result<Option<Self>, BrokerError> {
        match std::env::var(EXTERNAL_URL_ENV) {
            Ok(url) if !url.trim().is_empty() => Self::external(url.trim()).map(Some),
            _ => Ok(None),
        }
    }

    /// An already running broker at `url` (`pulsar://host:port` or `pulsar+ssl://host:port`).
    pub fn external(url: &str) -> Result<Self, BrokerError> {
        let rest = url
            .strip_prefix("pulsar://")
            .or_else(|| url.strip_prefix("pulsar+ssl://"));
        match rest {
            Some(host_port) if !host_port.is_empty() => Ok(Self {
                url: url.to_owned(),
                name: String::from("external"),
                bridge: None,
                lite: None,
            }),
            _ => Err(BrokerError::BadExternalUrl {
                url: url.to_owned(),
            }),
        }
    }

    /// The URL to hand to `pulsar::Pulsar::builder`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Which broker this is, for test output: `pulsar-lite 0.2.0 (via bridge)` or `external`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The deliveries the bridge saw, with redelivery counts; `None` for an external broker,
    /// where no bridge sits on the wire.
    pub fn deliveries(&self) -> Option<&DeliveryLog> {
        self.bridge.as_ref().map(LiteBridge::deliveries)
    }

    /// The pulsar-lite process, when this broker is one (its data folder and log help when a
    /// test fails).
    pub fn pulsar_lite_process(&self) -> Option<&PulsarLite> {
        self.lite.as_ref()
    }
}
