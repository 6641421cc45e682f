//! How a service proves who it is to a secured cluster (`docs/connecting.md`): a token
//! (given, or read from a file or an environment variable each time one is needed), OAuth2
//! client credentials, or a client certificate (mutual TLS).
//!
//! A token is asked for on every connection and on every `AuthChallenge` the broker sends
//! once the last one expired (pulsar-rs's `Authentication` provider, which the broker's
//! connection answers without dropping its consumers and producers). None of these types
//! prints a secret, in `Debug` or in an error.

mod oauth2;
mod reloading;
mod role;

use std::path::PathBuf;
use std::sync::Arc;

pub use oauth2::OAuth2;
pub(crate) use role::role_of;

/// A token as configured: the value itself never shows in `Debug`.
#[derive(Clone)]
pub(crate) struct Secret(pub(crate) Arc<str>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<hidden>")
    }
}

/// How the service authenticates, as configured on `PulsarBroker`.
#[derive(Debug, Clone)]
pub(crate) enum Credentials {
    /// A token given as it is.
    Token(Secret),
    /// A token read from this file each time one is needed (so a file rotated by a sidecar
    /// is picked up).
    TokenFile(PathBuf),
    /// A token read from this environment variable each time one is needed.
    TokenEnv(String),
    /// OAuth2 client credentials.
    OAuth2(OAuth2),
}

impl Credentials {
    /// The role the credentials carry, where they tell it: the `sub` claim of the token now
    /// (what the broker takes the role from by default). What an authorization error names.
    pub(crate) fn role(&self) -> Option<String> {
        match self {
            Credentials::Token(token) => role_of(&token.0),
            Credentials::TokenFile(path) => role_of(std::fs::read_to_string(path).ok()?.trim()),
            Credentials::TokenEnv(var) => role_of(std::env::var(var).ok()?.trim()),
            Credentials::OAuth2(settings) => settings.last_role(),
        }
    }

    /// The provider pulsar-rs asks for the credentials.
    pub(crate) fn provider(&self) -> Box<dyn pulsar::authentication::Authentication> {
        match self {
            Credentials::Token(token) => Box::new(reloading::Token::given(token.clone())),
            Credentials::TokenFile(path) => Box::new(reloading::Token::file(path.clone())),
            Credentials::TokenEnv(var) => Box::new(reloading::Token::env(var.clone())),
            Credentials::OAuth2(settings) => Box::new(settings.provider()),
        }
    }
}

/// A client certificate for mutual TLS, as files (read when the service connects).
#[derive(Debug, Clone)]
pub(crate) struct ClientCertificate {
    /// PEM: the client's certificate first, then any intermediates.
    pub(crate) certificate: PathBuf,
    /// PEM, PKCS#8 (`BEGIN PRIVATE KEY`).
    pub(crate) private_key: PathBuf,
}
