//! What a secured standalone checks, as the test asks for it.

use std::time::Duration;

/// The description of a secured Apache Pulsar standalone
/// ([`crate::ApacheStandalone::start_secured`]).
///
/// Such a broker always has TLS listeners beside its plaintext ones (a certificate for
/// `127.0.0.1` and `localhost` signed by a CA made for the test), authenticates by token (RS256
/// JWTs, role = `sub`) and by client certificate (role = the certificate's CN), and authorizes:
/// the [`SecuritySetup::superuser`] may do anything, any other role only what it was granted
/// ([`crate::SecuredStandalone::grant`]). A client that presents nothing is refused. What can be
/// chosen is below; `SecuritySetup::default()` is what most tests want.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecuritySetup {
    /// The superuser role (`superUserRoles`): the admin calls of the returned handle and the
    /// standalone's own clients use a token for it. Default `superuser`.
    pub superuser: String,
    /// How long the superuser's token lives. Default 24 hours: the standalone's own clients
    /// hold it for the whole run.
    pub superuser_token_lifetime: Duration,
    /// How often the broker checks its connections' credentials for expiry
    /// (`authenticationRefreshCheckSeconds`, whole seconds, at least 1). Default 1 s, so that
    /// a test with tokens of some seconds sees the broker act on their expiry within a second
    /// (the broker's own default is 60 s).
    pub refresh_check: Duration,
    /// Whether the transaction coordinator runs (as
    /// [`crate::ApacheStandalone::start_with_transactions`]). Default off.
    pub transactions: bool,
}

impl Default for SecuritySetup {
    fn default() -> Self {
        SecuritySetup {
            superuser: "superuser".to_owned(),
            superuser_token_lifetime: Duration::from_secs(24 * 60 * 60),
            refresh_check: Duration::from_secs(1),
            transactions: false,
        }
    }
}
