//! OAuth2 client credentials (RFC 6749, section 4.4), as managed Pulsar clusters ask for:
//! the service trades its client id and secret at the issuer's token endpoint for a short-lived
//! JWT, and presents that as Pulsar's `token` authentication.
//!
//! The flow is the Java client's `AuthenticationOAuth2` (and pulsar-rs's, which runs on tokio
//! only): the credentials file in the Java client's key-file format (`client_id`,
//! `client_secret`), the token endpoint found in the issuer's OpenID metadata
//! (`/.well-known/openid-configuration`), `audience` and `scope` sent with the request. A token
//! is fetched when the service connects, and again whenever one is asked for (a new
//! connection, the broker's `AuthChallenge`) past 80 % of its life; a fetch that fails while
//! the last token is still valid keeps that one. The HTTP requests are blocking (`ureq`) and
//! run on a blocking thread (`blocking::unblock`), so the same code serves every runtime.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pulsar::authentication::Authentication;
use pulsar::error::AuthenticationError;
use serde::Deserialize;

/// OAuth2 client credentials for [`PulsarBroker::with_oauth2`](crate::PulsarBroker::with_oauth2).
///
/// ```
/// use ruststream_pulsar::OAuth2;
///
/// let oauth2 = OAuth2::client_credentials("https://auth.example.com", "/etc/pulsar/key.json")
///     .audience("urn:sn:pulsar:acme:prod")
///     .scope("pulsar");
/// assert!(!format!("{oauth2:?}").contains("secret"));
/// ```
#[derive(Clone)]
pub struct OAuth2 {
    issuer_url: String,
    credentials: PathBuf,
    audience: Option<String>,
    scope: Option<String>,
    /// The role of the last token fetched (its `sub`), for the errors that name it.
    role: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

impl std::fmt::Debug for OAuth2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2")
            .field("issuer_url", &self.issuer_url)
            .field("credentials", &self.credentials)
            .field("audience", &self.audience)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl OAuth2 {
    /// Client credentials from `credentials_file` (JSON: `client_id`, `client_secret`, as the
    /// Java client's key file), traded at the issuer `issuer_url`.
    pub fn client_credentials(
        issuer_url: impl Into<String>,
        credentials_file: impl Into<PathBuf>,
    ) -> Self {
        OAuth2 {
            issuer_url: issuer_url.into(),
            credentials: credentials_file.into(),
            audience: None,
            scope: None,
            role: Default::default(),
        }
    }

    /// The role of the last token fetched.
    pub(super) fn last_role(&self) -> Option<String> {
        self.role.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The audience the token is asked for (the `audience` parameter, as StreamNative Cloud
    /// and the Java client send it).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// The scope the token is asked for.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    pub(super) fn provider(&self) -> ClientCredentials {
        ClientCredentials {
            settings: self.clone(),
            cached: None,
        }
    }
}

/// The credentials file: the Java client's key-file format.
#[derive(Deserialize)]
struct KeyFile {
    client_id: String,
    client_secret: String,
}

/// The part of the issuer's OpenID metadata the flow needs.
#[derive(Deserialize)]
struct Metadata {
    token_endpoint: String,
}

/// The token endpoint's answer.
#[derive(Deserialize)]
struct Issued {
    access_token: String,
    /// Seconds; an answer without it is taken to last an hour.
    expires_in: Option<u64>,
}

/// The token endpoint's refusal.
#[derive(Deserialize)]
struct Refused {
    error: String,
    error_description: Option<String>,
}

/// A token fetched, and when to fetch the next.
struct Cached {
    token: String,
    refresh_at: Instant,
    expires_at: Instant,
}

/// The provider pulsar-rs asks for tokens.
pub(super) struct ClientCredentials {
    settings: OAuth2,
    cached: Option<Cached>,
}

/// Why a token could not be fetched, and whether another try may succeed.
struct Failed {
    why: String,
    retriable: bool,
}

impl From<Failed> for AuthenticationError {
    fn from(failed: Failed) -> Self {
        match failed.retriable {
            true => AuthenticationError::Retriable(failed.why),
            false => AuthenticationError::Custom(failed.why),
        }
    }
}

impl ClientCredentials {
    /// A token valid now: the cached one until 80 % of its life, a new one after.
    async fn token(&mut self) -> Result<String, Failed> {
        let now = Instant::now();
        if let Some(cached) = self.cached.as_ref().filter(|c| now < c.refresh_at) {
            return Ok(cached.token.clone());
        }
        let settings = self.settings.clone();
        match blocking::unblock(move || fetch(&settings)).await {
            Ok(issued) => {
                let life = Duration::from_secs(issued.expires_in.unwrap_or(3_600));
                let fetched = Instant::now();
                let token = issued.access_token;
                *self.settings.role.lock().unwrap_or_else(|e| e.into_inner()) =
                    super::role_of(&token);
                tracing::debug!(
                    issuer = %self.settings.issuer_url,
                    lifetime = ?life,
                    "fetched an OAuth2 token"
                );
                self.cached = Some(Cached {
                    token: token.clone(),
                    refresh_at: fetched + life.mul_f64(0.8),
                    expires_at: fetched + life,
                });
                Ok(token)
            }
            Err(failed) => match self.cached.as_ref().filter(|c| now < c.expires_at) {
                Some(cached) => {
                    tracing::warn!(
                        issuer = %self.settings.issuer_url,
                        error = %failed.why,
                        "could not refresh the OAuth2 token; the current one is still valid"
                    );
                    Ok(cached.token.clone())
                }
                None => Err(failed),
            },
        }
    }
}

#[async_trait::async_trait]
impl Authentication for ClientCredentials {
    fn auth_method_name(&self) -> String {
        "token".to_owned()
    }

    async fn initialize(&mut self) -> Result<(), AuthenticationError> {
        self.token().await.map(drop).map_err(Into::into)
    }

    async fn auth_data(&mut self) -> Result<Vec<u8>, AuthenticationError> {
        self.token()
            .await
            .map(String::into_bytes)
            .map_err(Into::into)
    }
}

/// Fetch a token: read the credentials, find the token endpoint, ask it. Blocking.
fn fetch(settings: &OAuth2) -> Result<Issued, Failed> {
    let fatal = |why: String| Failed {
        why,
        retriable: false,
    };
    let file = settings.credentials.display();
    let text = std::fs::read_to_string(&settings.credentials).map_err(|e| {
        fatal(format!(
            "cannot read the OAuth2 credentials file `{file}` given to `OAuth2::client_credentials`: {e}"
        ))
    })?;
    let key: KeyFile = serde_json::from_str(&text).map_err(|e| {
        // serde_json's message names a position, never the file's content.
        fatal(format!(
            "the OAuth2 credentials file `{file}` is not a key file with `client_id` and \
             `client_secret`: {e}"
        ))
    })?;
    let agent = agent();
    let issuer = settings.issuer_url.trim_end_matches('/');
    let discovery = format!("{issuer}/.well-known/openid-configuration");
    let unreachable = |what: &str, url: &str, e: ureq::Error| Failed {
        why: format!("cannot reach the OAuth2 issuer's {what} `{url}`: {e}"),
        retriable: true,
    };
    let mut answer = agent
        .get(&discovery)
        .call()
        .map_err(|e| unreachable("metadata", &discovery, e))?;
    if !answer.status().is_success() {
        return Err(fatal(format!(
            "the OAuth2 issuer `{issuer}` answered {} for its metadata `{discovery}`: check \
             the issuer URL",
            answer.status()
        )));
    }
    let metadata: Metadata = answer.body_mut().read_json().map_err(|e| {
        fatal(format!(
            "the OAuth2 issuer's metadata `{discovery}` names no token endpoint: {e}"
        ))
    })?;
    let endpoint = metadata.token_endpoint;
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_id", key.client_id.as_str()),
        ("client_secret", key.client_secret.as_str()),
    ];
    if let Some(audience) = &settings.audience {
        form.push(("audience", audience));
    }
    if let Some(scope) = &settings.scope {
        form.push(("scope", scope));
    }
    let mut answer = agent
        .post(&endpoint)
        .header("Accept", "application/json")
        .send_form(form)
        .map_err(|e| unreachable("token endpoint", &endpoint, e))?;
    let status = answer.status();
    if !status.is_success() {
        let refused = answer.body_mut().read_json::<Refused>().ok();
        let (error, description) = match &refused {
            Some(r) => (
                r.error.as_str(),
                r.error_description.as_deref().unwrap_or(""),
            ),
            None => ("(no OAuth2 error in the answer)", ""),
        };
        return Err(Failed {
            why: format!(
                "the OAuth2 token endpoint `{endpoint}` refused client `{}` with {status}: \
                 {error} {description}; check the client id and secret in `{file}`",
                key.client_id
            ),
            retriable: status.is_server_error(),
        });
    }
    answer.body_mut().read_json::<Issued>().map_err(|e| {
        fatal(format!(
            "the OAuth2 token endpoint `{endpoint}` answered without an access token: {e}"
        ))
    })
}

/// The HTTP client: native-tls (the TLS stack pulsar-rs uses here), the platform's roots,
/// answers of every status read rather than turned into errors, 10 s a request.
fn agent() -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::NativeTls)
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}
