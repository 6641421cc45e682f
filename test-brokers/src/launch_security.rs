//! What `start.sh` is given to start a secured standalone: its security variables.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;

use crate::secret::Secret;

/// Every security variable of `start.sh` (its header says what each turns on): removed from
/// the environment of an open standalone's launcher, so that none leaks in from the test's.
const VARIABLES: [&str; 10] = [
    "PULSAR_TLS_CERT_FILE",
    "PULSAR_TLS_KEY_FILE",
    "PULSAR_TLS_TRUST_CERTS_FILE",
    "PULSAR_TLS_PORT",
    "PULSAR_HTTPS_PORT",
    "PULSAR_TOKEN_PUBLIC_KEY_FILE",
    "PULSAR_TLS_AUTH",
    "PULSAR_ADMIN_TOKEN_FILE",
    "PULSAR_SUPERUSER_ROLES",
    "PULSAR_AUTH_REFRESH_CHECK_SECONDS",
];

/// The TLS ports, files and roles a secured standalone is launched with (kept for restarts),
/// and the superuser's token its admin calls send.
#[derive(Debug)]
pub(crate) struct LaunchSecurity {
    /// The binary protocol over TLS (`brokerServicePortTls`).
    pub(crate) tls: SocketAddr,
    /// The admin API over TLS (`webServicePortTls`).
    pub(crate) https: SocketAddr,
    pub(crate) broker_certificate: PathBuf,
    pub(crate) broker_key: PathBuf,
    pub(crate) ca_certificate: PathBuf,
    /// The JWT public key, DER.
    pub(crate) token_public_key: PathBuf,
    /// The file holding the superuser's token, for the broker's own clients.
    pub(crate) admin_token_file: PathBuf,
    pub(crate) superuser: String,
    /// `authenticationRefreshCheckSeconds`.
    pub(crate) refresh_check_seconds: u64,
    pub(crate) admin_token: Secret,
}

impl LaunchSecurity {
    /// The superuser's token.
    pub(crate) fn admin_token(&self) -> &Secret {
        &self.admin_token
    }

    /// Set `start.sh`'s security variables on `command` for `security`, or remove them all
    /// for an open broker.
    pub(crate) fn apply(security: Option<&Self>, command: &mut Command) {
        for variable in VARIABLES {
            command.env_remove(variable);
        }
        let Some(security) = security else { return };
        command
            .env("PULSAR_TLS_CERT_FILE", &security.broker_certificate)
            .env("PULSAR_TLS_KEY_FILE", &security.broker_key)
            .env("PULSAR_TLS_TRUST_CERTS_FILE", &security.ca_certificate)
            .env("PULSAR_TLS_PORT", security.tls.port().to_string())
            .env("PULSAR_HTTPS_PORT", security.https.port().to_string())
            .env("PULSAR_TOKEN_PUBLIC_KEY_FILE", &security.token_public_key)
            .env("PULSAR_TLS_AUTH", "1")
            .env("PULSAR_ADMIN_TOKEN_FILE", &security.admin_token_file)
            .env("PULSAR_SUPERUSER_ROLES", &security.superuser)
            .env(
                "PULSAR_AUTH_REFRESH_CHECK_SECONDS",
                security.refresh_check_seconds.to_string(),
            );
    }
}
