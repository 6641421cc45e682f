//! RS256 JSON Web Tokens for Pulsar's token authentication (`AuthenticationProviderToken`),
//! signed with an RSA key made for the test.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::sign::Signer;

use crate::BrokerError;

/// Bits of the RSA signing key.
const RSA_BITS: u32 = 2048;

/// An RSA key pair that signs RS256 JWTs, and its public key in the form the broker reads
/// (`tokenPublicKey`: DER X.509 SubjectPublicKeyInfo). A broker given the public key accepts
/// every token this signer mints until it expires; the role is the `sub` claim.
///
/// Cloning shares the key (the OAuth2 issuer stand-in signs with the broker's signer). `Debug`
/// never shows the private key.
#[derive(Clone)]
pub struct TokenSigner {
    key: PKey<Private>,
    public_der: Vec<u8>,
}

impl TokenSigner {
    /// Make a new 2048-bit RSA key pair.
    pub fn generate() -> Result<Self, BrokerError> {
        let failed = |error: openssl::error::ErrorStack| BrokerError::Security {
            detail: format!("making the token signing key (RSA {RSA_BITS}) failed: {error}"),
        };
        let key = PKey::from_rsa(Rsa::generate(RSA_BITS).map_err(failed)?).map_err(failed)?;
        let public_der = key.public_key_to_der().map_err(failed)?;
        Ok(TokenSigner { key, public_der })
    }

    /// A token for `role` (claim `sub`) that expires `lifetime` from now (claim `exp`, whole
    /// seconds since the Unix epoch, rounded up; `iat` is now).
    ///
    /// # Panics
    ///
    /// If OpenSSL cannot sign with the key this signer made (it only fails when out of memory).
    pub fn mint(&self, role: &str, lifetime: Duration) -> String {
        let now = unix_now();
        let exp = now + lifetime.as_secs() + u64::from(lifetime.subsec_nanos() > 0);
        self.mint_claims(&serde_json::json!({ "sub": role, "iat": now, "exp": exp }))
    }

    /// A token with exactly `claims` as its payload (a JSON object): for tokens
    /// [`TokenSigner::mint`] does not make, such as one already expired or with an `aud`.
    ///
    /// # Panics
    ///
    /// As [`TokenSigner::mint`].
    pub fn mint_claims(&self, claims: &serde_json::Value) -> String {
        let header = base64url(br#"{"alg":"RS256","typ":"JWT"}"#);
        let payload = base64url(claims.to_string().as_bytes());
        let signing_input = format!("{header}.{payload}");
        let signature = Signer::new(MessageDigest::sha256(), &self.key)
            .and_then(|mut signer| signer.sign_oneshot_to_vec(signing_input.as_bytes()))
            .unwrap_or_else(|error| {
                panic!("signing a token with the test's own RSA key failed: {error}")
            });
        format!("{signing_input}.{}", base64url(&signature))
    }

    /// The public key, DER X.509 SubjectPublicKeyInfo: what the broker's `tokenPublicKey`
    /// reads (it does not read PEM).
    pub fn public_key_der(&self) -> &[u8] {
        &self.public_der
    }

    /// The public key as a JSON Web Key (RFC 7517: `kty` RSA, `n`, `e`, `alg` RS256, `use`
    /// sig), for a JWKS.
    pub(crate) fn public_jwk(&self) -> serde_json::Value {
        let rsa = self
            .key
            .rsa()
            .unwrap_or_else(|error| panic!("the signer's own key is not RSA: {error}"));
        serde_json::json!({
            "kty": "RSA",
            "alg": "RS256",
            "use": "sig",
            "n": base64url(&rsa.n().to_vec()),
            "e": base64url(&rsa.e().to_vec()),
        })
    }
}

impl fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSigner")
            .field("algorithm", &"RS256")
            .field("private_key", &"<redacted>")
            .finish()
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Base64url without padding (RFC 7515's encoding of a JWT's parts).
pub(crate) fn base64url(bytes: &[u8]) -> String {
    openssl::base64::encode_block(bytes)
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::pkey::PKey;
    use openssl::sign::Verifier;

    /// The payload of `token`, decoded.
    fn claims(token: &str) -> serde_json::Value {
        let payload = token.split('.').nth(1).expect("three parts");
        let standard: String = payload
            .chars()
            .map(|c| match c {
                '-' => '+',
                '_' => '/',
                c => c,
            })
            .collect();
        let padded = format!("{standard}{}", "=".repeat((4 - standard.len() % 4) % 4));
        serde_json::from_slice(&openssl::base64::decode_block(&padded).expect("base64"))
            .expect("JSON")
    }

    #[test]
    fn a_token_names_its_role_expires_and_verifies_with_the_der_public_key() {
        let signer = TokenSigner::generate().expect("key");
        let token = signer.mint("orders-reader", Duration::from_millis(20_500));
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert!(token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
        let claims = claims(&token);
        assert_eq!(claims["sub"], "orders-reader");
        let lifetime = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
        assert_eq!(lifetime, 21, "20.5 s rounds up to 21 s");

        let public = PKey::public_key_from_der(signer.public_key_der()).expect("DER SPKI");
        let signature = openssl::base64::decode_block(&{
            let s: String = parts[2]
                .chars()
                .map(|c| match c {
                    '-' => '+',
                    '_' => '/',
                    c => c,
                })
                .collect();
            format!("{s}{}", "=".repeat((4 - s.len() % 4) % 4))
        })
        .expect("base64");
        let mut verifier = Verifier::new(MessageDigest::sha256(), &public).expect("verifier");
        verifier
            .update(format!("{}.{}", parts[0], parts[1]).as_bytes())
            .expect("update");
        assert!(verifier.verify(&signature).expect("verify"));
        assert!(!format!("{signer:?}").contains("BEGIN"));
    }

    #[test]
    fn base64url_has_no_padding_and_the_url_alphabet() {
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64url(b"ab"), "YWI");
    }
}
