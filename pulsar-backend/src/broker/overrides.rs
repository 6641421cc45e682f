//! Settings that replace those an app was written with.

/// Replaces, for every Pulsar broker of an app, settings given in its code: how one binary is
/// pointed at another cluster (a staging broker, a live test) without editing `app()`.
///
/// Handed to the app at start with `StartContext::with(overrides)`. A `None` keeps the app's
/// own value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PulsarOverrides {
    /// The broker URL instead of the one given to `PulsarBroker::new`.
    pub url: Option<String>,
    /// The namespace short topic names resolve in (`PulsarBroker::namespace`).
    pub namespace: Option<String>,
    /// Batch-index acknowledgement (`PulsarBroker::batch_index_acknowledgement`).
    pub batch_index_acknowledgement: Option<bool>,
}

impl PulsarOverrides {
    /// Nothing replaced.
    pub fn new() -> Self {
        Self::default()
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
}
