//! Settings that replace those an app was written with.

/// Replaces, for every Pulsar broker of an app, settings given in its code: how one binary is
/// pointed at another cluster (a staging broker, a live test) without editing `app()`.
///
/// Handed to the app at start with `StartContext::with(overrides)`. A `None` keeps the app's
/// own value.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct PulsarOverrides {
    /// The broker URL instead of the one given to `PulsarBroker::new`.
    pub url: Option<String>,
    /// The JWT token (`PulsarBroker::with_token`).
    pub token: Option<String>,
    /// A file holding the JWT token (`PulsarBroker::with_token_file`).
    pub token_file: Option<std::path::PathBuf>,
    /// OAuth2 client credentials (`PulsarBroker::with_oauth2`).
    pub oauth2: Option<crate::OAuth2>,
    /// The CA certificates to trust (`PulsarBroker::with_trust_certificates`).
    pub trust_certificates: Option<std::path::PathBuf>,
    /// The client certificate and its key (`PulsarBroker::with_client_certificate`).
    pub client_certificate: Option<(std::path::PathBuf, std::path::PathBuf)>,
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
            .field("token_file", &self.token_file)
            .field("oauth2", &self.oauth2)
            .field("trust_certificates", &self.trust_certificates)
            .field("client_certificate", &self.client_certificate)
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
            token_file: settings.get("pulsar.token_file").map(Into::into),
            oauth2: match (
                settings.get("pulsar.oauth2_issuer_url"),
                settings.get("pulsar.oauth2_credentials"),
            ) {
                (Some(issuer), Some(credentials)) => {
                    let mut oauth2 = crate::OAuth2::client_credentials(issuer, credentials);
                    if let Some(audience) = settings.get("pulsar.oauth2_audience") {
                        oauth2 = oauth2.audience(audience);
                    }
                    if let Some(scope) = settings.get("pulsar.oauth2_scope") {
                        oauth2 = oauth2.scope(scope);
                    }
                    Some(oauth2)
                }
                _ => None,
            },
            trust_certificates: settings.get("pulsar.tls_trust_certs").map(Into::into),
            client_certificate: match (
                settings.get("pulsar.tls_cert"),
                settings.get("pulsar.tls_key"),
            ) {
                (Some(cert), Some(key)) => Some((cert.into(), key.into())),
                _ => None,
            },
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

    /// Authenticate with the token in the file at `path` instead (read again whenever one is
    /// needed).
    pub fn token_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.token_file = Some(path.into());
        self
    }

    /// Authenticate with OAuth2 client credentials instead.
    pub fn oauth2(mut self, oauth2: crate::OAuth2) -> Self {
        self.oauth2 = Some(oauth2);
        self
    }

    /// Trust the CA certificates in this PEM file instead.
    pub fn trust_certificates(mut self, pem_file: impl Into<std::path::PathBuf>) -> Self {
        self.trust_certificates = Some(pem_file.into());
        self
    }

    /// Present this client certificate (PEM) and key (PEM, PKCS#8) instead.
    pub fn client_certificate(
        mut self,
        certificate_pem: impl Into<std::path::PathBuf>,
        private_key_pem: impl Into<std::path::PathBuf>,
    ) -> Self {
        self.client_certificate = Some((certificate_pem.into(), private_key_pem.into()));
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
