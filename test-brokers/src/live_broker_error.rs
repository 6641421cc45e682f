//! Why a live broker could not be had.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use crate::live_broker::EXTERNAL_URL_ENV;
use crate::pulsar_lite_binary::{PULSAR_LITE_BIN_ENV, PULSAR_LITE_VERSION};

/// A broker for a live test could not be started or reached.
///
/// Each message says what went wrong and what to do about it, because it ends up as the failure
/// of a test run by someone who may never have heard of pulsar-lite.
pub enum BrokerError {
    /// No pulsar-lite binary was found.
    BinaryNotFound {
        /// What was tried, in order, and what each attempt said.
        tried: Vec<String>,
    },
    /// The temporary folder for the broker's config and data could not be made.
    TempDir {
        /// The underlying error.
        source: io::Error,
    },
    /// The broker's config file or log file could not be written.
    Files {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// No free TCP port could be found on 127.0.0.1 for the broker.
    NoFreePort {
        /// The underlying error.
        source: io::Error,
    },
    /// The broker process could not be started.
    Spawn {
        /// The binary that was run.
        binary: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The broker process exited before it listened.
    ExitedEarly {
        /// The binary that was run.
        binary: PathBuf,
        /// How it exited.
        status: ExitStatus,
        /// The end of its log.
        log: String,
    },
    /// The broker process runs but does not accept TCP connections.
    NotListening {
        /// Where it should listen.
        addr: SocketAddr,
        /// How long we waited.
        waited: Duration,
        /// The end of its log.
        log: String,
    },
    /// The bridge could not be set up.
    Bridge {
        /// The step that failed.
        what: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// `RUSTSTREAM_PULSAR_URL` is set but is not a `pulsar://host:port` URL.
    BadExternalUrl {
        /// The value found.
        url: String,
    },
    /// The thread that starts the broker ended without an answer (it panicked).
    StartupPanicked,
    /// Apache Pulsar standalone did not start, or its admin API refused a call.
    ApacheUnavailable {
        /// What the launcher or the API said.
        detail: String,
    },
    /// The secured standalone's test certificates, keys or tokens could not be made, or the
    /// OAuth2 issuer stand-in could not be started or used ([`crate::SecuredStandalone`],
    /// [`crate::IssuerStandIn`]). The detail never holds a secret.
    Security {
        /// What failed and why.
        detail: String,
    },
    /// An official Pulsar client, run as a child process to compare ruststream with it
    /// ([`crate::python_keyed_partitions`], [`crate::java_keyed_partitions`]), failed.
    OtherClient {
        /// Which client, for instance `the Python client (pulsar-client 3.13.0)`.
        client: &'static str,
        /// What failed, how to fix it, and the end of the child's stderr.
        detail: String,
    },
    /// [`crate::require_broker`] found no broker; a live test must fail, never skip.
    Unavailable {
        /// Whether `CI` is set, which changes the advice.
        ci: bool,
        /// Why no broker could be had.
        cause: Box<BrokerError>,
    },
}

impl fmt::Display for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BinaryNotFound { tried } => write!(
                f,
                "the pulsar-lite broker binary was not found ({}). Install it with \
                 `pip install pulsar-lite=={PULSAR_LITE_VERSION}` for the python3 on PATH, or \
                 set {PULSAR_LITE_BIN_ENV} to the path of its `pulsar_lite/bin/pulsar-lite` binary",
                tried.join("; ")
            ),
            Self::TempDir { source } => write!(
                f,
                "cannot create a temporary folder for pulsar-lite's data ({source}); \
                 check that TMPDIR (or /tmp) exists and is writable"
            ),
            Self::Files { path, source } => write!(
                f,
                "cannot write {} for pulsar-lite ({source}); check the free space and \
                 permissions of the temporary folder",
                path.display()
            ),
            Self::NoFreePort { source } => write!(
                f,
                "cannot find a free TCP port on 127.0.0.1 for pulsar-lite ({source}); \
                 check that the loopback interface is up and ports are not exhausted"
            ),
            Self::Spawn { binary, source } => write!(
                f,
                "cannot run {} ({source}); check that it is an executable pulsar-lite binary \
                 (reinstall with `pip install --force-reinstall pulsar-lite=={PULSAR_LITE_VERSION}`)",
                binary.display()
            ),
            Self::ExitedEarly {
                binary,
                status,
                log,
            } => write!(
                f,
                "{} exited ({status}) before it accepted connections; its log ends with:\n{log}",
                binary.display()
            ),
            Self::NotListening { addr, waited, log } => write!(
                f,
                "pulsar-lite did not accept TCP connections on {addr} within {waited:?}; \
                 the machine may be overloaded (run fewer tests at once). Its log ends with:\n{log}"
            ),
            Self::Bridge { what, source } => write!(
                f,
                "cannot start the loopback bridge in front of pulsar-lite: failed to {what} \
                 ({source})"
            ),
            Self::BadExternalUrl { url } => write!(
                f,
                "{EXTERNAL_URL_ENV}={url:?} is not a broker URL; set it to \
                 `pulsar://host:port` (for example pulsar://127.0.0.1:6650), or unset it to use \
                 pulsar-lite"
            ),
            Self::ApacheUnavailable { detail } => write!(
                f,
                "Apache Pulsar standalone is not available: {detail}\nThe launcher is \
                 tests/brokers/pulsar-standalone/start.sh; it needs java 17+, mvn and curl, \
                 and Maven Central for the first download"
            ),
            Self::Security { detail } => write!(
                f,
                "cannot set up the secured test broker: {detail}"
            ),
            Self::OtherClient { client, detail } => {
                write!(f, "{client} could not be run for comparison: {detail}")
            }
            Self::StartupPanicked => write!(
                f,
                "the thread starting pulsar-lite panicked; its panic message is above"
            ),
            Self::Unavailable { ci: true, cause } => write!(
                f,
                "CI is set, and live tests need a real broker: they fail rather than skip. \
                 .ci/run must install it (`pip install pulsar-lite=={PULSAR_LITE_VERSION}`) or \
                 set {EXTERNAL_URL_ENV}. Cause: {cause}"
            ),
            Self::Unavailable { ci: false, cause } => write!(
                f,
                "live tests need a real broker and none could be had. Install pulsar-lite with \
                 `pip install pulsar-lite=={PULSAR_LITE_VERSION}`, or set {EXTERNAL_URL_ENV} to a running \
                 broker. Cause: {cause}"
            ),
        }
    }
}

/// Debug shows the message: `expect` and `#[test] fn -> Result` print Debug, and the advice is
/// what the reader of a failed test needs.
impl fmt::Debug for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for BrokerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::TempDir { source }
            | Self::Files { source, .. }
            | Self::NoFreePort { source }
            | Self::Spawn { source, .. }
            | Self::Bridge { source, .. } => Some(source),
            Self::Unavailable { cause, .. } => Some(cause.as_ref()),
            _ => None,
        }
    }
}
