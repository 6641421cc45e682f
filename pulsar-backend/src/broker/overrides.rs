//! Settings that replace those an app was written with.

/// Replaces, for every Pulsar broker of an app, settings given in its code: how one binary is
/// pointed at another cluster (a staging broker, a live test) without editing `app()`.
///
/// Handed to the app at start with `StartContext::with(overrides)`. A `None` keeps the app's
/// own value.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PulsarOverrides {
    /// The broker URL instead of the one given to `PulsarBroker::new`.
    pub url: Option<String>,
    /// The JWT token (`PulsarBroker::with_token`).
    pub token: Option<String>,
    /// The namespace short topic names resolve in (`PulsarBroker::namespace`).
    pub namespace: Option<String>,
    /// Batch-index acknowledgement (`PulsarBroker::batch_index_acknowledgement`).
    pub batch_index_acknowledgement: Option<bool>,
    /// How long connecting and subscribing at start may take (`PulsarBroker::connect_timeout`).
    pub connect_timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for PulsarOverrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PulsarOverrides")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<secret>"))
            .field("namespace", &self.namespace)
            .field(
                "batch_index_acknowledgement",
                &self.batch_index_acknowledgement,
            )
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl PulsarOverrides {
    /// Nothing replaced.
    pub fn new() -> Self {
        Self::default()
    }

    /// The values the process gave for [`SETTINGS`](crate::SETTINGS) (flags or
    /// environment, through the runner).
    pub fn from_settings(settings: &ruststream::app::Settings) -> Self {
        PulsarOverrides {
            url: settings.get("pulsar.url").map(str::to_owned),
            token: settings.get("pulsar.token").map(str::to_owned),
            namespace: settings.get("pulsar.namespace").map(str::to_owned),
            batch_index_acknowledgement: None,
            connect_timeout: None,
        }
    }

    /// Authenticate with `token` instead.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Connect to `url` instead.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Resolve short topic names in `namespace` instead.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Turn batch-index acknowledgement on or off.
    pub fn batch_index_acknowledgement(mut self, enabled: bool) -> Self {
        self.batch_index_acknowledgement = Some(enabled);
        self
    }

    /// Give connecting and subscribing at start `bound` instead.
    pub fn connect_timeout(mut self, bound: std::time::Duration) -> Self {
        self.connect_timeout = Some(bound);
        self
    }
}
