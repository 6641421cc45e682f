//! One request the OAuth2 issuer stand-in answered at its token endpoint.

/// What a client asked the [`crate::IssuerStandIn`]'s token endpoint, and whether it got a
/// token (never the secret it sent, nor the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// `client_id`, from the form or JSON body or from HTTP Basic authentication; empty if none
    /// was sent.
    pub client_id: String,
    /// `grant_type`; empty if none was sent.
    pub grant_type: String,
    /// `audience`, if sent (the token then carries it as `aud`).
    pub audience: Option<String>,
    /// `scope`, if sent (the token then carries it as `scope`).
    pub scope: Option<String>,
    /// Whether the secret came by HTTP Basic authentication rather than in the body.
    pub basic_auth: bool,
    /// `None` if a token was issued, else the OAuth2 error answered (`invalid_client`,
    /// `unsupported_grant_type`, `invalid_request`).
    pub refused: Option<&'static str>,
}
