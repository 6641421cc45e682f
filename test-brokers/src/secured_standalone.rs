//! An Apache Pulsar standalone with TLS, token and client-certificate authentication, and
//! authorization, its certificates and keys made by the test.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::SocketAddr;
use std::ops::Deref;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use crate::apache::{excerpt, free_port};
use crate::launch_security::LaunchSecurity;
use crate::secret::Secret;
use crate::test_pki::{ClientKind, TestPki};
use crate::{ApacheStandalone, BrokerError, ClientCertificate, SecuritySetup, TokenSigner};

/// A running secured Apache Pulsar standalone on 127.0.0.1
/// ([`ApacheStandalone::start_secured`]), and what a test needs to connect to it: its TLS
/// address, the CA to trust, client certificates and tokens for roles, and the superuser's
/// grants.
///
/// It dereferences to its [`ApacheStandalone`]: [`ApacheStandalone::url`] is the plaintext
/// address (which checks the same credentials), and the admin helpers
/// ([`ApacheStandalone::create_namespace`] and the others) send the superuser's token.
///
/// Dropping it stops the broker, then removes the folder of certificates, keys and tokens.
/// `Debug` shows no key or token.
#[derive(Debug)]
pub struct SecuredStandalone {
    // Dropped first: the broker stops before its certificates go.
    standalone: ApacheStandalone,
    pki: TestPki,
    signer: TokenSigner,
    /// Holds the certificates, keys and the superuser's token file; removed on drop.
    _dir: tempfile::TempDir,
}

impl ApacheStandalone {
    /// Start a secured standalone as `setup` describes (see [`SecuritySetup`]), with more
    /// broker settings as for [`ApacheStandalone::start_with`], and wait until it serves
    /// `public/default` (the readiness checks authenticate as the superuser).
    ///
    /// Makes, in a new temporary folder: a CA, the broker's certificate (SAN `IP:127.0.0.1`,
    /// `DNS:localhost`) and PKCS#8 key, a second CA the broker does not know, an RSA key pair
    /// for tokens (the broker gets the public key as DER), and the superuser's token. Then runs
    /// `start.sh` with its security variables (`PULSAR_TLS_CERT_FILE` and the others) and two
    /// more free ports for TLS.
    pub fn start_secured(
        settings: &[&str],
        setup: SecuritySetup,
    ) -> Result<SecuredStandalone, BrokerError> {
        if setup.superuser.is_empty() || setup.superuser.contains([',', '\n', '\r']) {
            return Err(BrokerError::Security {
                detail: format!(
                    "the superuser role {:?} cannot be one of superUserRoles: it must be \
                     non-empty, without commas or line breaks",
                    setup.superuser
                ),
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("ruststream-pulsar-security-")
            .tempdir()
            .map_err(|error| BrokerError::Security {
                detail: format!("creating the folder for certificates and keys failed: {error}"),
            })?;
        let pki = TestPki::generate(dir.path())?;
        let signer = TokenSigner::generate()?;
        let token_public_key = dir.path().join("token-public-key.der");
        write_file(
            &token_public_key,
            signer.public_key_der(),
            "the token public key",
        )?;
        let admin_token =
            Secret::new(signer.mint(&setup.superuser, setup.superuser_token_lifetime));
        let admin_token_file = dir.path().join("superuser.token");
        write_file(
            &admin_token_file,
            admin_token.expose().as_bytes(),
            "the superuser's token",
        )?;
        let security = LaunchSecurity {
            tls: free_port()?,
            https: free_port()?,
            broker_certificate: pki.broker_certificate().to_owned(),
            broker_key: pki.broker_key().to_owned(),
            ca_certificate: pki.ca_certificate().to_owned(),
            token_public_key,
            admin_token_file,
            superuser: setup.superuser,
            // Whole seconds, rounded up, at least 1.
            refresh_check_seconds: (setup.refresh_check.as_secs()
                + u64::from(setup.refresh_check.subsec_nanos() > 0))
            .max(1),
            admin_token,
        };
        let standalone = ApacheStandalone::start_as(settings, setup.transactions, Some(security))?;
        Ok(SecuredStandalone {
            standalone,
            pki,
            signer,
            _dir: dir,
        })
    }
}

impl SecuredStandalone {
    /// The security the broker was started with.
    fn security(&self) -> &LaunchSecurity {
        self.standalone
            .security()
            .expect("a SecuredStandalone's broker is started with its security")
    }

    /// `pulsar+ssl://127.0.0.1:<port>`: the binary protocol over TLS. The broker's certificate
    /// names `127.0.0.1` and `localhost`, so a client that verifies the host name accepts it
    /// when it trusts [`SecuredStandalone::ca_certificate`].
    pub fn tls_url(&self) -> String {
        format!("pulsar+ssl://{}", self.security().tls)
    }

    /// The admin API over TLS (`https://`; the plaintext one is [`ApacheStandalone::http`]).
    pub fn https(&self) -> SocketAddr {
        self.security().https
    }

    /// The CA certificate (PEM) that signed the broker's certificate and client certificates:
    /// what a client trusts.
    pub fn ca_certificate(&self) -> &Path {
        self.pki.ca_certificate()
    }

    /// A second CA's certificate (PEM), which signed nothing the broker presents: a client that
    /// trusts only it must refuse the broker.
    pub fn wrong_ca_certificate(&self) -> &Path {
        self.pki.wrong_ca_certificate()
    }

    /// A new client certificate for `role` (CN = role), signed by the CA, valid for two days,
    /// with a new RSA key (PKCS#8 PEM): the broker authenticates a client that presents it
    /// (authentication method `tls`) as `role`.
    pub fn client_certificate(&self, role: &str) -> Result<ClientCertificate, BrokerError> {
        self.pki.client_certificate(role, ClientKind::Valid)
    }

    /// A client certificate for `role` signed by the CA that expired yesterday: the broker's
    /// TLS handshake refuses it.
    pub fn expired_client_certificate(&self, role: &str) -> Result<ClientCertificate, BrokerError> {
        self.pki.client_certificate(role, ClientKind::Expired)
    }

    /// A valid client certificate for `role` signed by the second CA
    /// ([`SecuredStandalone::wrong_ca_certificate`]), which the broker does not trust.
    pub fn untrusted_client_certificate(
        &self,
        role: &str,
    ) -> Result<ClientCertificate, BrokerError> {
        self.pki.client_certificate(role, ClientKind::Untrusted)
    }

    /// A token (RS256 JWT) for `role` (`sub`) that expires `lifetime` from now, which the
    /// broker accepts until then.
    pub fn mint_token(&self, role: &str, lifetime: Duration) -> String {
        self.signer.mint(role, lifetime)
    }

    /// The key the broker's tokens are signed with, to mint other tokens
    /// ([`TokenSigner::mint_claims`]) or to sign those of an [`crate::IssuerStandIn`].
    pub fn token_signer(&self) -> &TokenSigner {
        &self.signer
    }

    /// The superuser role.
    pub fn superuser(&self) -> &str {
        &self.security().superuser
    }

    /// The superuser's token (valid for [`SecuritySetup::superuser_token_lifetime`]).
    pub fn superuser_token(&self) -> &str {
        self.security().admin_token().expose()
    }

    /// Grant `role` the `actions` (`"produce"`, `"consume"`, ...) on `resource`, as the
    /// superuser through the admin API: a namespace `tenant/namespace`
    /// (`POST /admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}`), or a topic
    /// `persistent://tenant/namespace/topic` (`POST /admin/v2/persistent/.../permissions/{role}`;
    /// the topic must exist: the broker answers 404 for one not created yet).
    ///
    /// The broker's policy cache takes a moment to see a grant: a client refused just before
    /// may be refused once more just after.
    pub fn grant(&self, resource: &str, role: &str, actions: &[&str]) -> Result<(), BrokerError> {
        let path = permissions_path(resource, role)?;
        let body = serde_json::to_string(actions).map_err(|error| BrokerError::Security {
            detail: format!("cannot write the actions {actions:?} as JSON: {error}"),
        })?;
        let answer = self.standalone.admin("POST", &path, Some(&body))?;
        if answer.status == 204 {
            return Ok(());
        }
        Err(BrokerError::ApacheUnavailable {
            detail: format!(
                "granting {actions:?} on {resource} to role {role} (POST {path}) answered HTTP \
                 {}: {:?}{}",
                answer.status,
                excerpt(&answer.body),
                if answer.status == 404 {
                    "; a namespace must be created first (create_namespace), a topic too \
                     (create_partitioned_topic, or a first producer as the superuser)"
                } else {
                    ""
                }
            ),
        })
    }

    /// When each consumer of `subscription` on `topic` (`persistent://tenant/namespace/name`,
    /// not partitioned) connected, by consumer name, as the broker's topic stats say
    /// (`connectedSince`): a consumer that reconnected shows a later time.
    pub fn consumers_connected_since(
        &self,
        topic: &str,
        subscription: &str,
    ) -> Result<Vec<(String, String)>, BrokerError> {
        let path = match topic.strip_prefix("persistent://") {
            Some(rest) => format!("/admin/v2/persistent/{rest}/stats"),
            None => {
                return Err(BrokerError::Security {
                    detail: format!("`{topic}` is not a persistent://tenant/namespace/topic name"),
                })
            }
        };
        let answer = self.standalone.admin("GET", &path, None)?;
        let unavailable = |detail: String| BrokerError::ApacheUnavailable { detail };
        if answer.status != 200 {
            return Err(unavailable(format!(
                "the stats of {topic} (GET {path}) answered HTTP {}: {:?}",
                answer.status,
                excerpt(&answer.body)
            )));
        }
        let stats: serde_json::Value = serde_json::from_str(&answer.body)
            .map_err(|e| unavailable(format!("the stats of {topic} are not JSON: {e}")))?;
        let consumers = stats["subscriptions"][subscription]["consumers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(consumers
            .iter()
            .map(|c| {
                let text = |key: &str| c[key].as_str().unwrap_or("").to_owned();
                (text("consumerName"), text("connectedSince"))
            })
            .collect())
    }

    /// Take back every action of `role` on `resource` (as [`SecuredStandalone::grant`] names
    /// it): `DELETE` on the same path.
    pub fn revoke(&self, resource: &str, role: &str) -> Result<(), BrokerError> {
        let path = permissions_path(resource, role)?;
        let answer = self.standalone.admin("DELETE", &path, None)?;
        if answer.status == 204 {
            return Ok(());
        }
        Err(BrokerError::ApacheUnavailable {
            detail: format!(
                "revoking role {role}'s permissions on {resource} (DELETE {path}) answered HTTP \
                 {}: {:?}",
                answer.status,
                excerpt(&answer.body)
            ),
        })
    }
}

impl Deref for SecuredStandalone {
    type Target = ApacheStandalone;

    fn deref(&self) -> &ApacheStandalone {
        &self.standalone
    }
}

/// The admin path of `role`'s permissions on `resource` (`tenant/namespace` or
/// `persistent://tenant/namespace/topic`).
fn permissions_path(resource: &str, role: &str) -> Result<String, BrokerError> {
    let refused = |why: &str| BrokerError::Security {
        detail: format!(
            "cannot name the permissions of role {role:?} on {resource:?}: {why}; a resource is \
             a namespace `tenant/namespace` or a topic `persistent://tenant/namespace/topic`"
        ),
    };
    if role.is_empty() {
        return Err(refused("the role is empty"));
    }
    let role = percent_encode(role);
    let (kind, rest) = match resource.split_once("://") {
        Some((kind @ ("persistent" | "non-persistent"), rest)) => (Some(kind), rest),
        Some(_) => {
            return Err(refused(
                "the topic's domain is not persistent or non-persistent",
            ))
        }
        None => (None, resource),
    };
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.iter().any(|part| part.is_empty()) {
        return Err(refused("a part of it is empty"));
    }
    let parts: Vec<String> = parts.iter().map(|part| percent_encode(part)).collect();
    match (kind, parts.as_slice()) {
        (None, [tenant, namespace]) => Ok(format!(
            "/admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}"
        )),
        (Some(kind), [tenant, namespace, topic]) => Ok(format!(
            "/admin/v2/{kind}/{tenant}/{namespace}/{topic}/permissions/{role}"
        )),
        _ => Err(refused("it has neither two parts nor a domain and three")),
    }
}

/// `text` with everything but RFC 3986's unreserved characters percent-encoded.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `bytes` in the new file `path`, readable by the owner only.
fn write_file(path: &Path, bytes: &[u8], what: &str) -> Result<(), BrokerError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|error| BrokerError::Security {
            detail: format!("writing {what} to {} failed: {error}", path.display()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_paths_for_namespaces_and_topics() {
        assert_eq!(
            permissions_path("public/granted", "reader").unwrap(),
            "/admin/v2/namespaces/public/granted/permissions/reader"
        );
        assert_eq!(
            permissions_path("persistent://public/default/orders", "a b").unwrap(),
            "/admin/v2/persistent/public/default/orders/permissions/a%20b"
        );
        assert_eq!(
            permissions_path("non-persistent://t/n/x", "r").unwrap(),
            "/admin/v2/non-persistent/t/n/x/permissions/r"
        );
        for bad in [
            "public",
            "persistent://public/default",
            "public//x",
            "http://a/b/c",
            "a/b/c",
        ] {
            assert!(permissions_path(bad, "r").is_err(), "{bad}");
        }
        assert!(permissions_path("public/default", "").is_err());
    }
}
