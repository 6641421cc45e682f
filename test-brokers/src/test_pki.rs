//! The secured standalone's certificates, made by the test with OpenSSL: a CA, a broker
//! certificate it signs, client certificates for roles, and a second, unrelated CA.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::error::ErrorStack;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use openssl::x509::{X509Builder, X509NameBuilder, X509};

use crate::token_signer::unix_now;
use crate::{BrokerError, ClientCertificate};

/// Bits of every RSA key made here.
const RSA_BITS: u32 = 2048;
/// A day, in seconds.
const DAY: i64 = 24 * 60 * 60;

/// A certificate authority: its key and self-signed certificate, written as PEM.
struct Authority {
    key: PKey<Private>,
    certificate: X509,
    pem: PathBuf,
}

/// Which authority signs a client certificate, and whether it is still valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientKind {
    /// Signed by the broker's CA, valid from an hour ago for two days.
    Valid,
    /// Signed by the broker's CA, expired yesterday.
    Expired,
    /// Signed by the second CA, which the broker does not trust.
    Untrusted,
}

/// The certificates of one secured standalone, as files in `dir`: the CA (`ca.cert.pem`),
/// the broker's certificate (`broker.cert.pem`, SAN `IP:127.0.0.1` and `DNS:localhost`) and key
/// (`broker.key.pem`), a second CA (`wrong-ca.cert.pem`), and client certificates made on
/// demand. Keys are RSA 2048, written as PKCS#8 PEM, readable by the owner only. `Debug`
/// names the files, never a key.
pub(crate) struct TestPki {
    dir: PathBuf,
    ca: Authority,
    wrong_ca: Authority,
    broker_certificate: PathBuf,
    broker_key: PathBuf,
    /// Numbers the client certificates' files.
    made: AtomicUsize,
}

impl std::fmt::Debug for TestPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestPki")
            .field("ca", &self.ca.pem)
            .field("wrong_ca", &self.wrong_ca.pem)
            .field("broker_certificate", &self.broker_certificate)
            .finish_non_exhaustive()
    }
}

impl TestPki {
    /// Make both CAs and the broker's certificate in `dir` (which exists).
    pub(crate) fn generate(dir: &Path) -> Result<Self, BrokerError> {
        let ca = authority(dir, "ruststream test CA", "ca.cert.pem")?;
        let wrong_ca = authority(dir, "ruststream unrelated CA", "wrong-ca.cert.pem")?;
        let key = rsa_key("the broker")?;
        let now = now_i64();
        let certificate = signed(
            "localhost",
            &key,
            &ca,
            Leaf::Broker,
            (now - 3600, now + 2 * DAY),
        )
        .map_err(|error| failed("the broker's certificate", error))?;
        let broker_certificate = dir.join("broker.cert.pem");
        let broker_key = dir.join("broker.key.pem");
        write_certificate(
            &broker_certificate,
            &certificate,
            "the broker's certificate",
        )?;
        write_key(&broker_key, &key, "the broker's key")?;
        Ok(TestPki {
            dir: dir.to_owned(),
            ca,
            wrong_ca,
            broker_certificate,
            broker_key,
            made: AtomicUsize::new(0),
        })
    }

    /// The CA's certificate (PEM): what clients trust, and what client certificates chain to.
    pub(crate) fn ca_certificate(&self) -> &Path {
        &self.ca.pem
    }

    /// The second CA's certificate (PEM): it signed nothing the broker presents.
    pub(crate) fn wrong_ca_certificate(&self) -> &Path {
        &self.wrong_ca.pem
    }

    /// The broker's certificate (PEM).
    pub(crate) fn broker_certificate(&self) -> &Path {
        &self.broker_certificate
    }

    /// The broker's key (PKCS#8 PEM).
    pub(crate) fn broker_key(&self) -> &Path {
        &self.broker_key
    }

    /// A new client certificate for `role` (its CN), of `kind`, with a new key.
    pub(crate) fn client_certificate(
        &self,
        role: &str,
        kind: ClientKind,
    ) -> Result<ClientCertificate, BrokerError> {
        if role.is_empty() || role.contains(['/', '\n', '\r', '\0']) {
            return Err(BrokerError::Security {
                detail: format!(
                    "cannot make a client certificate for role {role:?}: a role is a non-empty \
                     CN without '/' or line breaks"
                ),
            });
        }
        let what = format!("a client certificate for role {role} ({kind:?})");
        let key = rsa_key(&what)?;
        let now = now_i64();
        let (authority, validity) = match kind {
            ClientKind::Valid => (&self.ca, (now - 3600, now + 2 * DAY)),
            ClientKind::Expired => (&self.ca, (now - 2 * DAY, now - DAY)),
            ClientKind::Untrusted => (&self.wrong_ca, (now - 3600, now + 2 * DAY)),
        };
        let certificate = signed(role, &key, authority, Leaf::Client, validity)
            .map_err(|error| failed(&what, error))?;
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let stem: String = role
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let kind_name = match kind {
            ClientKind::Valid => "client",
            ClientKind::Expired => "expired",
            ClientKind::Untrusted => "untrusted",
        };
        let cert_path = self.dir.join(format!("{kind_name}-{n}-{stem}.cert.pem"));
        let key_path = self.dir.join(format!("{kind_name}-{n}-{stem}.key.pem"));
        write_certificate(&cert_path, &certificate, &what)?;
        write_key(&key_path, &key, &what)?;
        Ok(ClientCertificate {
            role: role.to_owned(),
            certificate: cert_path,
            key: key_path,
        })
    }
}

/// What a leaf certificate is for.
#[derive(Clone, Copy)]
enum Leaf {
    /// A TLS server on 127.0.0.1 / localhost.
    Broker,
    /// A TLS client.
    Client,
}

/// A new self-signed CA named `cn`, written to `dir/file`.
fn authority(dir: &Path, cn: &str, file: &str) -> Result<Authority, BrokerError> {
    let what = format!("the CA {cn:?}");
    let key = rsa_key(&what)?;
    let now = now_i64();
    let certificate = (|| {
        let name = name(cn)?;
        let mut builder = builder(&name, &name, &key, (now - 3600, now + 2 * DAY))?;
        builder.append_extension(BasicConstraints::new().critical().ca().build()?)?;
        builder.append_extension(
            KeyUsage::new()
                .critical()
                .key_cert_sign()
                .crl_sign()
                .build()?,
        )?;
        let ski = SubjectKeyIdentifier::new().build(&builder.x509v3_context(None, None))?;
        builder.append_extension(ski)?;
        builder.sign(&key, MessageDigest::sha256())?;
        Ok(builder.build())
    })()
    .map_err(|error| failed(&what, error))?;
    let pem = dir.join(file);
    write_certificate(&pem, &certificate, &what)?;
    Ok(Authority {
        key,
        certificate,
        pem,
    })
}

/// A certificate for `cn` with `key`, signed by `authority`, valid over `validity` (Unix
/// seconds).
fn signed(
    cn: &str,
    key: &PKey<Private>,
    authority: &Authority,
    leaf: Leaf,
    validity: (i64, i64),
) -> Result<X509, ErrorStack> {
    let subject = name(cn)?;
    let mut builder = builder(
        &subject,
        authority.certificate.subject_name(),
        key,
        validity,
    )?;
    builder.append_extension(BasicConstraints::new().critical().build()?)?;
    builder.append_extension(
        KeyUsage::new()
            .critical()
            .digital_signature()
            .key_encipherment()
            .build()?,
    )?;
    match leaf {
        Leaf::Broker => {
            builder.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
            let san = SubjectAlternativeName::new()
                .ip("127.0.0.1")
                .dns("localhost")
                .build(&builder.x509v3_context(Some(&authority.certificate), None))?;
            builder.append_extension(san)?;
        }
        Leaf::Client => {
            builder.append_extension(ExtendedKeyUsage::new().client_auth().build()?)?;
        }
    }
    let ski = SubjectKeyIdentifier::new()
        .build(&builder.x509v3_context(Some(&authority.certificate), None))?;
    builder.append_extension(ski)?;
    let aki = AuthorityKeyIdentifier::new()
        .keyid(false)
        .build(&builder.x509v3_context(Some(&authority.certificate), None))?;
    builder.append_extension(aki)?;
    builder.sign(&authority.key, MessageDigest::sha256())?;
    Ok(builder.build())
}

/// A v3 certificate builder with the names, key, a random serial and the validity set.
fn builder(
    subject: &openssl::x509::X509NameRef,
    issuer: &openssl::x509::X509NameRef,
    key: &PKey<Private>,
    (not_before, not_after): (i64, i64),
) -> Result<X509Builder, ErrorStack> {
    let mut builder = X509Builder::new()?;
    builder.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    builder.set_serial_number(&serial)?;
    builder.set_subject_name(subject)?;
    builder.set_issuer_name(issuer)?;
    builder.set_pubkey(key)?;
    let not_before = Asn1Time::from_unix(not_before)?;
    let not_after = Asn1Time::from_unix(not_after)?;
    builder.set_not_before(&not_before)?;
    builder.set_not_after(&not_after)?;
    Ok(builder)
}

/// The name `CN=cn`.
fn name(cn: &str) -> Result<openssl::x509::X509Name, ErrorStack> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, cn)?;
    Ok(name.build())
}

/// A new RSA key for `what`.
fn rsa_key(what: &str) -> Result<PKey<Private>, BrokerError> {
    Rsa::generate(RSA_BITS)
        .and_then(PKey::from_rsa)
        .map_err(|error| failed(&format!("the key of {what}"), error))
}

/// `key` as PKCS#8 PEM in `path`, readable by the owner only.
fn write_key(path: &Path, key: &PKey<Private>, what: &str) -> Result<(), BrokerError> {
    let pem = key
        .private_key_to_pem_pkcs8()
        .map_err(|error| failed(&format!("{what} as PKCS#8"), error))?;
    write_pem(path, &pem, true, what)
}

/// `certificate` as PEM in `path`.
fn write_certificate(path: &Path, certificate: &X509, what: &str) -> Result<(), BrokerError> {
    let pem = certificate
        .to_pem()
        .map_err(|error| failed(&format!("{what} as PEM"), error))?;
    write_pem(path, &pem, false, what)
}

/// `pem` in the new file `path`; `private` makes it readable by the owner only.
fn write_pem(path: &Path, pem: &[u8], private: bool, what: &str) -> Result<(), BrokerError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(path)
        .and_then(|mut file| file.write_all(pem))
        .map_err(|error| BrokerError::Security {
            detail: format!("writing {what} to {} failed: {error}", path.display()),
        })
}

/// Now, in Unix seconds.
fn now_i64() -> i64 {
    i64::try_from(unix_now()).unwrap_or(i64::MAX / 2)
}

/// Making `what` failed in OpenSSL.
fn failed(what: &str, error: ErrorStack) -> BrokerError {
    BrokerError::Security {
        detail: format!("making {what} with OpenSSL failed: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::stack::Stack;
    use openssl::x509::store::X509StoreBuilder;
    use openssl::x509::{X509StoreContext, X509VerifyResult};

    /// Whether `leaf` verifies against `ca` now, and OpenSSL's verdict.
    fn verify(ca: &Path, leaf: &Path) -> X509VerifyResult {
        let ca = X509::from_pem(&std::fs::read(ca).unwrap()).unwrap();
        let leaf = X509::from_pem(&std::fs::read(leaf).unwrap()).unwrap();
        let mut store = X509StoreBuilder::new().unwrap();
        store.add_cert(ca).unwrap();
        let store = store.build();
        let mut context = X509StoreContext::new().unwrap();
        context
            .init(&store, &leaf, &Stack::new().unwrap(), |c| {
                c.verify_cert()?;
                Ok(c.error())
            })
            .unwrap()
    }

    #[test]
    fn certificates_chain_as_each_kind_says() {
        let dir = tempfile::tempdir().unwrap();
        let pki = TestPki::generate(dir.path()).unwrap();
        assert_eq!(
            verify(pki.ca_certificate(), pki.broker_certificate()),
            X509VerifyResult::OK
        );
        let broker = X509::from_pem(&std::fs::read(pki.broker_certificate()).unwrap()).unwrap();
        let sans: Vec<String> = broker
            .subject_alt_names()
            .unwrap()
            .iter()
            .map(|san| {
                san.dnsname()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("{:?}", san.ipaddress().unwrap()))
            })
            .collect();
        assert_eq!(sans, ["[127, 0, 0, 1]", "localhost"]);
        let key = std::fs::read_to_string(pki.broker_key()).unwrap();
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));

        let client = pki
            .client_certificate("orders-reader", ClientKind::Valid)
            .unwrap();
        assert_eq!(client.role(), "orders-reader");
        assert_eq!(
            verify(pki.ca_certificate(), client.certificate()),
            X509VerifyResult::OK
        );
        let cert = X509::from_pem(&std::fs::read(client.certificate()).unwrap()).unwrap();
        let cn = cert
            .subject_name()
            .entries_by_nid(Nid::COMMONNAME)
            .next()
            .unwrap();
        assert_eq!(cn.data().as_slice(), b"orders-reader");
        assert!(std::fs::read_to_string(client.key())
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----"));

        let expired = pki
            .client_certificate("orders-reader", ClientKind::Expired)
            .unwrap();
        assert_eq!(
            verify(pki.ca_certificate(), expired.certificate()).error_string(),
            "certificate has expired"
        );
        let untrusted = pki
            .client_certificate("orders-reader", ClientKind::Untrusted)
            .unwrap();
        assert_ne!(
            verify(pki.ca_certificate(), untrusted.certificate()),
            X509VerifyResult::OK
        );
        assert_eq!(
            verify(pki.wrong_ca_certificate(), untrusted.certificate()),
            X509VerifyResult::OK
        );
        assert_ne!(
            verify(pki.wrong_ca_certificate(), pki.broker_certificate()),
            X509VerifyResult::OK
        );
        assert!(pki.client_certificate("a/b", ClientKind::Valid).is_err());
    }
}
