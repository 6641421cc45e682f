//! An OAuth2 issuer stand-in on 127.0.0.1: OpenID discovery, a JWKS and a client-credentials
//! token endpoint whose JWTs a secured standalone accepts.

use std::collections::HashMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, Server};

use crate::secret::redact;
use crate::token_signer::unix_now;
use crate::{BrokerError, OAuthClient, TokenRequest, TokenSigner};

/// The token endpoint's path.
const TOKEN_PATH: &str = "/oauth/token";
/// The JWKS's path.
const JWKS_PATH: &str = "/.well-known/jwks.json";
/// The (unused) authorization endpoint's path, which discovery requires.
const AUTHORIZE_PATH: &str = "/oauth/authorize";
/// The largest token request body read.
const MAX_BODY: u64 = 64 * 1024;

/// An OAuth2 authorization server stand-in on `127.0.0.1:<free port>`, for clients that
/// authenticate to Pulsar with OAuth2 client credentials (pulsar-rs's `auth-oauth2`, the Java,
/// C++ and Python clients). It serves, over plain HTTP:
///
/// - `GET /.well-known/openid-configuration`: discovery, with `issuer` exactly
///   [`IssuerStandIn::issuer_url`] (`http://127.0.0.1:PORT/`, with the trailing slash that a
///   parsed URL gets, which openidconnect compares it with), `authorization_endpoint`,
///   `token_endpoint`, `jwks_uri`, `response_types_supported` `["code"]`,
///   `subject_types_supported` `["public"]`, `id_token_signing_alg_values_supported`
///   `["RS256"]`, `grant_types_supported` `["client_credentials"]`;
/// - `GET` its `jwks_uri`: the signer's public key as a JWKS;
/// - `POST` its `token_endpoint`: the client-credentials grant. The form body (or a JSON one)
///   has `grant_type=client_credentials`, `client_id`, `client_secret` (or both by HTTP Basic
///   authentication), and optionally `audience` and `scope`. A known client with its secret
///   gets `{"access_token": JWT, "token_type": "Bearer", "expires_in": N}`, the JWT signed by
///   the [`TokenSigner`] with `sub` = the client's role and `exp` = now + N s (and `aud`,
///   `scope` if asked); anything else gets HTTP 400 with `{"error": "invalid_client"}` (or
///   `unsupported_grant_type`, `invalid_request`).
///
/// Given the secured standalone's signer ([`crate::SecuredStandalone::token_signer`]), the
/// broker accepts its tokens. It counts them ([`IssuerStandIn::tokens_issued`]) and keeps every
/// request ([`IssuerStandIn::requests`]). For each client it writes a credentials file in the
/// Java client's key-file format ([`IssuerStandIn::credentials_file`]).
///
/// Dropping it stops the server (its thread is joined) and removes the credentials files.
/// `Debug` shows no secret.
pub struct IssuerStandIn {
    addr: SocketAddr,
    server: Arc<Server>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    credentials: Vec<(String, PathBuf)>,
    /// Numbers the files of [`IssuerStandIn::credentials_file_with`].
    extra: AtomicUsize,
    dir: tempfile::TempDir,
}

/// What the server thread and the handle share.
struct Shared {
    /// `http://127.0.0.1:PORT/`.
    issuer: String,
    clients: Vec<OAuthClient>,
    signer: TokenSigner,
    lifetime_seconds: u64,
    requests: Mutex<Vec<TokenRequest>>,
    stopping: AtomicBool,
}

impl IssuerStandIn {
    /// Start one on a free port of 127.0.0.1 that signs with `signer` tokens that live
    /// `token_lifetime` (whole seconds, rounded up, at least 1), for `clients`.
    pub fn start(
        signer: TokenSigner,
        clients: impl IntoIterator<Item = OAuthClient>,
        token_lifetime: Duration,
    ) -> Result<Self, BrokerError> {
        let clients: Vec<OAuthClient> = clients.into_iter().collect();
        let failed = |detail: String| BrokerError::Security {
            detail: format!("the OAuth2 issuer stand-in: {detail}"),
        };
        let server = Server::http("127.0.0.1:0")
            .map_err(|error| failed(format!("listening on 127.0.0.1 failed: {error}")))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| failed("its listener has no IP address".to_owned()))?;
        let issuer = format!("http://{addr}/");
        let dir = tempfile::Builder::new()
            .prefix("ruststream-oauth2-issuer-")
            .tempdir()
            .map_err(|error| failed(format!("creating its folder failed: {error}")))?;
        let mut credentials = Vec::new();
        for (n, client) in clients.iter().enumerate() {
            let path = dir.path().join(format!("credentials-{n}.json"));
            write_credentials(&path, client.client_id(), client.client_secret(), &issuer)?;
            credentials.push((client.client_id().to_owned(), path));
        }
        let lifetime_seconds =
            (token_lifetime.as_secs() + u64::from(token_lifetime.subsec_nanos() > 0)).max(1);
        let shared = Arc::new(Shared {
            issuer,
            clients,
            signer,
            lifetime_seconds,
            requests: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        });
        let server = Arc::new(server);
        let thread = std::thread::Builder::new()
            .name("oauth2-issuer-stand-in".to_owned())
            .spawn({
                let server = Arc::clone(&server);
                let shared = Arc::clone(&shared);
                move || serve(&server, &shared)
            })
            .map_err(|error| failed(format!("starting its thread failed: {error}")))?;
        Ok(IssuerStandIn {
            addr,
            server,
            shared,
            thread: Some(thread),
            credentials,
            extra: AtomicUsize::new(0),
            dir,
        })
    }

    /// `http://127.0.0.1:PORT/`: the issuer URL, as clients are configured with it and as
    /// discovery names it.
    pub fn issuer_url(&self) -> &str {
        &self.shared.issuer
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/oauth/token`: the token endpoint.
    pub fn token_endpoint(&self) -> String {
        format!("http://{}{TOKEN_PATH}", self.addr)
    }

    /// How long its tokens live (`expires_in`), in whole seconds.
    pub fn token_lifetime(&self) -> Duration {
        Duration::from_secs(self.shared.lifetime_seconds)
    }

    /// The credentials file of client `client_id`, in the Java client's key-file format:
    /// `{"type": "client_credentials", "client_id", "client_secret", "issuer_url"}` (what
    /// `AuthenticationOAuth2`'s `privateKey` and pulsar-rs's `credentials_url` point at, as
    /// `file:///...`); `None` for a client it does not know.
    pub fn credentials_file(&self, client_id: &str) -> Option<&Path> {
        self.credentials
            .iter()
            .find(|(id, _)| id == client_id)
            .map(|(_, path)| path.as_path())
    }

    /// A new credentials file for `client_id` with `client_secret` (known or not), in the same
    /// format: for a client configured with a wrong secret.
    pub fn credentials_file_with(
        &self,
        client_id: &str,
        client_secret: &str,
    ) -> Result<PathBuf, BrokerError> {
        let n = self.extra.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("credentials-extra-{n}.json"));
        write_credentials(&path, client_id, client_secret, &self.shared.issuer)?;
        Ok(path)
    }

    /// How many tokens it has issued.
    pub fn tokens_issued(&self) -> usize {
        self.lock_requests()
            .iter()
            .filter(|request| request.refused.is_none())
            .count()
    }

    /// Every request its token endpoint answered, in order.
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.lock_requests().clone()
    }

    fn lock_requests(&self) -> std::sync::MutexGuard<'_, Vec<TokenRequest>> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for IssuerStandIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuerStandIn")
            .field("issuer", &self.shared.issuer)
            .field("clients", &self.shared.clients)
            .field("token_lifetime_seconds", &self.shared.lifetime_seconds)
            .field("tokens_issued", &self.tokens_issued())
            .finish_non_exhaustive()
    }
}

impl Drop for IssuerStandIn {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The server thread: answer requests until stopped.
fn serve(server: &Server, shared: &Shared) {
    while !shared.stopping.load(Ordering::SeqCst) {
        match server.recv() {
            Ok(request) => answer(request, shared),
            // Unblocked by the handle's drop (or the listener failed): stop.
            Err(_) => break,
        }
    }
}

/// Answer one request.
fn answer(mut request: Request, shared: &Shared) {
    // Clients join paths to the issuer URL in their own ways (`http://h:p//.well-known/..`).
    let path = request.url().split('?').next().unwrap_or("").to_owned();
    let path = format!("/{}", path.trim_start_matches('/'));
    let (status, body) = match (request.method(), path.as_str()) {
        (Method::Get, "/.well-known/openid-configuration") => (200, discovery(shared)),
        (Method::Get, JWKS_PATH) => (
            200,
            serde_json::json!({ "keys": [shared.signer.public_jwk()] }),
        ),
        (Method::Post, TOKEN_PATH) => token(&mut request, shared),
        (_, AUTHORIZE_PATH) => (
            400,
            serde_json::json!({
                "error": "unsupported_response_type",
                "error_description": "this stand-in issues tokens by client credentials only"
            }),
        ),
        _ => (
            404,
            serde_json::json!({
                "error": "not_found",
                "error_description": format!("no {} {path} here", request.method())
            }),
        ),
    };
    let content_type =
        Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..]).expect("a valid header");
    let no_store = Header::from_bytes(&b"Cache-Control"[..], &b"no-store"[..]).expect("valid");
    let response = Response::from_string(body.to_string())
        .with_status_code(status)
        .with_header(content_type)
        .with_header(no_store);
    // A client that hung up is its own affair.
    let _ = request.respond(response);
}

/// The OpenID provider metadata.
fn discovery(shared: &Shared) -> serde_json::Value {
    let base = shared.issuer.trim_end_matches('/');
    serde_json::json!({
        "issuer": shared.issuer,
        "authorization_endpoint": format!("{base}{AUTHORIZE_PATH}"),
        "token_endpoint": format!("{base}{TOKEN_PATH}"),
        "jwks_uri": format!("{base}{JWKS_PATH}"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
    })
}

/// The token endpoint: a token for a known client with its secret, or an OAuth2 error.
fn token(request: &mut Request, shared: &Shared) -> (u16, serde_json::Value) {
    let header = |name: &str| {
        request
            .headers()
            .iter()
            .find(|header| header.field.as_str().as_str().eq_ignore_ascii_case(name))
            .map(|header| header.value.as_str().to_owned())
    };
    let json_body = header("Content-Type").is_some_and(|value| {
        value
            .trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    });
    let basic = header("Authorization").and_then(|value| basic_credentials(&value));
    let mut body = Vec::new();
    let read = request.as_reader().take(MAX_BODY).read_to_end(&mut body);
    let mut fields = if json_body {
        json_fields(&body)
    } else {
        form_fields(&body)
    };
    let basic_auth = basic.is_some();
    if let Some((id, secret)) = basic {
        fields.entry("client_id".to_owned()).or_insert(id);
        fields.insert("client_secret".to_owned(), secret);
    }
    let field = |name: &str| fields.get(name).cloned();
    let mut record = TokenRequest {
        client_id: field("client_id").unwrap_or_default(),
        grant_type: field("grant_type").unwrap_or_default(),
        audience: field("audience"),
        scope: field("scope"),
        basic_auth,
        refused: None,
    };
    let refusal = |error: &'static str, description: String| {
        (
            400,
            serde_json::json!({ "error": error, "error_description": description }),
        )
    };
    let client = shared
        .clients
        .iter()
        .find(|client| client.client_id() == record.client_id);
    let secret = field("client_secret").unwrap_or_default();
    let answer = if read.is_err() {
        record.refused = Some("invalid_request");
        refusal("invalid_request", "the body could not be read".to_owned())
    } else if record.grant_type != "client_credentials" {
        record.refused = Some("unsupported_grant_type");
        refusal(
            "unsupported_grant_type",
            format!(
                "grant_type {:?} is not client_credentials",
                record.grant_type
            ),
        )
    } else {
        match client {
            Some(client) if client.accepts(&secret) => {
                let now = unix_now();
                let mut claims = serde_json::json!({
                    "sub": client.role(),
                    "iss": shared.issuer,
                    "iat": now,
                    "exp": now + shared.lifetime_seconds,
                    "client_id": client.client_id(),
                });
                if let Some(audience) = &record.audience {
                    claims["aud"] = audience.as_str().into();
                }
                if let Some(scope) = &record.scope {
                    claims["scope"] = scope.as_str().into();
                }
                let mut answer = serde_json::json!({
                    "access_token": shared.signer.mint_claims(&claims),
                    "token_type": "Bearer",
                    "expires_in": shared.lifetime_seconds,
                });
                if let Some(scope) = &record.scope {
                    answer["scope"] = scope.as_str().into();
                }
                (200, answer)
            }
            _ => {
                record.refused = Some("invalid_client");
                // Never the secret it was sent, whatever the client put where.
                let description = redact(
                    &format!(
                        "client {:?} is unknown or its secret is wrong",
                        record.client_id
                    ),
                    [secret.as_str()],
                );
                refusal("invalid_client", description)
            }
        }
    };
    shared
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(record);
    answer
}

/// The id and secret of an `Authorization: Basic` header (each form-urlencoded, RFC 6749
/// 2.3.1), if that is what `value` is.
fn basic_credentials(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = openssl::base64::decode_block(encoded.trim()).ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((form_decode(id)?, form_decode(secret)?))
}

/// The fields of an `application/x-www-form-urlencoded` body (the last of a repeated one).
fn form_fields(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((form_decode(name)?, form_decode(value)?))
        })
        .collect()
}

/// The string fields of a JSON object body.
fn json_fields(body: &[u8]) -> HashMap<String, String> {
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body)
        .map(|object| {
            object
                .into_iter()
                .filter_map(|(name, value)| Some((name, value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// `text` form-urldecoded (`+` is a space, `%XX` a byte), if it is valid UTF-8 after.
fn form_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &tail[2..];
                continue;
            }
            byte => bytes.push(byte),
        }
        rest = tail;
    }
    String::from_utf8(bytes).ok()
}

/// A Java key-file (`{"type","client_id","client_secret","issuer_url"}`) in the new file
/// `path`, readable by the owner only.
fn write_credentials(
    path: &Path,
    client_id: &str,
    client_secret: &str,
    issuer: &str,
) -> Result<(), BrokerError> {
    let json = serde_json::json!({
        "type": "client_credentials",
        "client_id": client_id,
        "client_secret": client_secret,
        "issuer_url": issuer,
    });
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(json.to_string().as_bytes()))
        .map_err(|error| BrokerError::Security {
            detail: format!(
                "the OAuth2 issuer stand-in: writing the credentials file of client \
                 {client_id:?} to {} failed: {error}",
                path.display()
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_bodies_and_basic_credentials_decode() {
        let fields = form_fields(b"grant_type=client_credentials&client_id=a%2Bb&scope=x+y&z");
        assert_eq!(fields["grant_type"], "client_credentials");
        assert_eq!(fields["client_id"], "a+b");
        assert_eq!(fields["scope"], "x y");
        assert_eq!(fields["z"], "");
        assert_eq!(form_decode("%zz"), None);
        assert_eq!(form_decode("%4"), None);
        let header = format!("Basic {}", openssl::base64::encode_block(b"id%3A1:p%40ss"));
        assert_eq!(
            basic_credentials(&header),
            Some(("id:1".to_owned(), "p@ss".to_owned()))
        );
        assert_eq!(basic_credentials("Bearer abc"), None);
        let json = json_fields(br#"{"client_id":"c","n":1}"#);
        assert_eq!(json.len(), 1);
        assert_eq!(json["client_id"], "c");
    }
}
