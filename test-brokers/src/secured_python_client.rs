//! The official Python client on a secured broker: over TLS, with a token, a client
//! certificate or OAuth2, run as a child process by
//! `tests/brokers/pulsar-standalone/secured_client.py`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::other_clients::{python_helper, PYTHON_CLIENT};
use crate::secret::{redact, Secret};
use crate::{BrokerError, ClientCertificate};

/// The helper script, under `tests/brokers/`.
const SCRIPT: &str = "pulsar-standalone/secured_client.py";

/// How the Python client authenticates. `Debug` never shows a token.
#[derive(Clone)]
pub enum PythonAuth {
    /// No credentials (a secured broker refuses the client).
    None,
    /// A token (`AuthenticationToken`).
    Token(String),
    /// A client certificate (`AuthenticationTLS`): the broker takes its CN as the role.
    Tls(ClientCertificate),
    /// OAuth2 client credentials (`AuthenticationOauth2`): the client asks `issuer_url` for
    /// tokens with the key file `credentials_file` (for instance an
    /// [`crate::IssuerStandIn`]'s).
    OAuth2 {
        /// The issuer URL.
        issuer_url: String,
        /// The credentials file, Java key-file format.
        credentials_file: PathBuf,
        /// `audience`, if any.
        audience: Option<String>,
        /// `scope`, if any.
        scope: Option<String>,
    },
}

impl PythonAuth {
    /// The settings' `auth` object for the helper.
    fn to_json(&self) -> serde_json::Value {
        match self {
            PythonAuth::None => serde_json::json!({ "kind": "none" }),
            PythonAuth::Token(token) => serde_json::json!({ "kind": "token", "token": token }),
            PythonAuth::Tls(certificate) => serde_json::json!({
                "kind": "tls",
                "certificate": certificate.certificate(),
                "key": certificate.key(),
            }),
            PythonAuth::OAuth2 {
                issuer_url,
                credentials_file,
                audience,
                scope,
            } => serde_json::json!({
                "kind": "oauth2",
                "issuer_url": issuer_url,
                "credentials_file": credentials_file,
                "audience": audience,
                "scope": scope,
            }),
        }
    }

    /// The secret it holds, if any, to keep out of error messages.
    fn secret(&self) -> Option<&str> {
        match self {
            PythonAuth::Token(token) => Some(token),
            _ => None,
        }
    }
}

impl fmt::Debug for PythonAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PythonAuth::None => f.write_str("None"),
            PythonAuth::Token(_) => f.debug_tuple("Token").field(&Secret::new("")).finish(),
            PythonAuth::Tls(certificate) => f.debug_tuple("Tls").field(certificate).finish(),
            PythonAuth::OAuth2 {
                issuer_url,
                credentials_file,
                audience,
                scope,
            } => f
                .debug_struct("OAuth2")
                .field("issuer_url", issuer_url)
                .field("credentials_file", credentials_file)
                .field("audience", audience)
                .field("scope", scope)
                .finish(),
        }
    }
}

/// What the Python client did: its result, or the broker's (or the TLS layer's) refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PythonOutcome<T> {
    /// It did it.
    Done(T),
    /// A Pulsar exception stopped it.
    Refused(PythonRefusal),
}

/// A Pulsar exception the Python client raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonRefusal {
    /// Where: `client`, `producer`, `send`, `subscribe` or `receive`.
    pub stage: String,
    /// The exception's class: `AuthorizationError`, `AuthenticationError`, `Timeout`,
    /// `ConnectError`, ...
    pub error: String,
    /// Its message.
    pub message: String,
}

/// The official Python client (pulsar-client 3.13.0) pointed at a (secured) broker: its URL,
/// the CA it trusts (host names verified) and how it authenticates. Each call runs one
/// client in a child process: `python3 tests/brokers/pulsar-standalone/secured_client.py`,
/// the credentials on its stdin, never on its command line.
#[derive(Debug, Clone)]
pub struct SecuredPythonClient {
    url: String,
    trust: Option<PathBuf>,
    auth: PythonAuth,
    operation_timeout: Duration,
}

impl SecuredPythonClient {
    /// A client of `url` (`pulsar+ssl://..` or `pulsar://..`) that trusts the CA certificate
    /// `trust` (PEM) if given, and authenticates with `auth`; operations time out after 30 s.
    pub fn new(url: impl Into<String>, trust: Option<&Path>, auth: PythonAuth) -> Self {
        SecuredPythonClient {
            url: url.into(),
            trust: trust.map(Path::to_owned),
            auth,
            operation_timeout: Duration::from_secs(30),
        }
    }

    /// The same with another operation timeout (whole seconds, at least 1): how long the
    /// client retries before it gives up, for instance on a broker whose TLS it refuses.
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Send `payloads` to `topic` through one producer, each waited for: how many were sent.
    pub fn produce(
        &self,
        topic: &str,
        payloads: &[String],
    ) -> Result<PythonOutcome<usize>, BrokerError> {
        let answer = self.run(&["produce", &self.url, topic], Some(payloads))?;
        self.outcome(answer, |done| {
            done.as_u64().and_then(|sent| usize::try_from(sent).ok())
        })
    }

    /// Receive up to `count` messages of `topic` (a Shared subscription `subscription` from the
    /// earliest message) within `timeout`, acknowledging each: their payloads, in order.
    pub fn consume(
        &self,
        topic: &str,
        subscription: &str,
        count: usize,
        timeout: Duration,
    ) -> Result<PythonOutcome<Vec<String>>, BrokerError> {
        let count = count.to_string();
        let timeout = format!("{:.3}", timeout.as_secs_f64());
        let answer = self.run(
            &["consume", &self.url, topic, subscription, &count, &timeout],
            None,
        )?;
        self.outcome(answer, |done| serde_json::from_value(done.clone()).ok())
    }

    /// Run the helper with `args`, and the settings (with `payloads`) on its stdin; what it
    /// printed, as JSON.
    fn run(
        &self,
        args: &[&str],
        payloads: Option<&[String]>,
    ) -> Result<serde_json::Value, BrokerError> {
        let mut settings = serde_json::json!({
            "trust": self.trust,
            "auth": self.auth.to_json(),
            "operation_timeout_seconds": self.operation_timeout.as_secs().max(1),
        });
        if let Some(payloads) = payloads {
            settings["payloads"] = serde_json::json!(payloads);
        }
        let input = settings.to_string().into_bytes();
        let stdout = python_helper(SCRIPT, args, input, |code| {
            (!matches!(code, Some(2 | 3))).then(|| {
                format!(
                    "see its traceback below: is a broker serving {}, and are the CA and \
                     credentials files readable?",
                    self.url
                )
            })
        })
        .map_err(|error| self.redacted(error))?;
        serde_json::from_str(stdout.trim()).map_err(|error| BrokerError::OtherClient {
            client: PYTHON_CLIENT,
            detail: self.scrub(&format!(
                "secured_client.py printed {:?}, not the JSON object it is written to print \
                 ({error})",
                stdout.chars().take(300).collect::<String>()
            )),
        })
    }

    /// The helper's `answer` read as an outcome whose `done` value `read` takes.
    fn outcome<T>(
        &self,
        answer: serde_json::Value,
        read: impl FnOnce(&serde_json::Value) -> Option<T>,
    ) -> Result<PythonOutcome<T>, BrokerError> {
        if let Some(refused) = answer.get("refused") {
            let field =
                |name: &str| self.scrub(refused.get(name).and_then(|v| v.as_str()).unwrap_or(""));
            return Ok(PythonOutcome::Refused(PythonRefusal {
                stage: field("stage"),
                error: field("error"),
                message: field("message"),
            }));
        }
        answer
            .get("done")
            .and_then(read)
            .map(PythonOutcome::Done)
            .ok_or_else(|| BrokerError::OtherClient {
                client: PYTHON_CLIENT,
                detail: self.scrub(&format!(
                    "secured_client.py answered {answer}, with neither a `done` of the \
                     expected type nor `refused`"
                )),
            })
    }

    /// `text` without this client's secret.
    fn scrub(&self, text: &str) -> String {
        redact(text, self.auth.secret())
    }

    /// `error` without this client's secret (a child's stderr could echo it).
    fn redacted(&self, error: BrokerError) -> BrokerError {
        match error {
            BrokerError::OtherClient { client, detail } => BrokerError::OtherClient {
                client,
                detail: self.scrub(&detail),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_token_and_the_helper_exists() {
        let client = SecuredPythonClient::new(
            "pulsar+ssl://127.0.0.1:1",
            None,
            PythonAuth::Token("eyJ.secret.token".to_owned()),
        );
        assert!(!format!("{client:?}").contains("secret"));
        assert_eq!(client.scrub("a eyJ.secret.token b"), "a <redacted> b");
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/brokers")
            .join(SCRIPT);
        assert!(script.is_file(), "{}", script.display());
    }
}
