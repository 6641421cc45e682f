//! A client certificate and its key, made for a role by the secured standalone's test CA.

use std::path::{Path, PathBuf};

/// A client certificate (PEM) whose subject's CN is a role, and its private key (PKCS#8 PEM,
/// `BEGIN PRIVATE KEY`, the form native-tls's `Identity::from_pkcs8` and the official clients
/// read), both files in the secured standalone's temporary folder. A broker that authenticates
/// by certificate (`AuthenticationProviderTls`) takes the CN as the client's role.
#[derive(Debug, Clone)]
pub struct ClientCertificate {
    pub(crate) role: String,
    pub(crate) certificate: PathBuf,
    pub(crate) key: PathBuf,
}

impl ClientCertificate {
    /// The role: the CN of the certificate's subject.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The certificate, PEM.
    pub fn certificate(&self) -> &Path {
        &self.certificate
    }

    /// Its private key, PKCS#8 PEM.
    pub fn key(&self) -> &Path {
        &self.key
    }
}
