//! A client the OAuth2 issuer stand-in knows: its id, its secret and the role its tokens name.

use std::fmt;

use crate::secret::Secret;

/// An OAuth2 client registered with an [`crate::IssuerStandIn`]: who may ask for tokens with
/// the client-credentials grant, and the role (`sub`) of the tokens it gets. `Debug` never
/// shows the secret.
#[derive(Clone)]
pub struct OAuthClient {
    client_id: String,
    client_secret: Secret,
    role: String,
}

impl OAuthClient {
    /// A client `client_id` with `client_secret`, whose tokens are for `role`.
    pub fn new(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        role: impl Into<String>,
    ) -> Self {
        OAuthClient {
            client_id: client_id.into(),
            client_secret: Secret::new(client_secret),
            role: role.into(),
        }
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The client secret.
    pub fn client_secret(&self) -> &str {
        self.client_secret.expose()
    }

    /// The role its tokens name (`sub`).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// Whether `secret` is this client's secret.
    pub(crate) fn accepts(&self, secret: &str) -> bool {
        self.client_secret.expose() == secret
    }
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("role", &self.role)
            .finish()
    }
}
