//! Finding the pulsar-lite binary that the PyPI package installed.

use std::path::PathBuf;
use std::process::Command;

use crate::BrokerError;

/// The pulsar-lite release the live tests were measured against; its gaps (KeyShared,
/// Exclusive/Failover redelivery, listed in docs/live-brokers.md) are known for this version
/// only.
pub const PULSAR_LITE_VERSION: &str = "0.2.0";

/// The environment variable that names the pulsar-lite binary directly, for machines where it
/// is not installed into the python3 on PATH.
pub const PULSAR_LITE_BIN_ENV: &str = "PULSAR_LITE_BIN";

/// Asks python where the package's binary is and which version is installed, one per line.
/// It finds the package without importing it: importing also imports `pulsar-client`, which
/// the binary does not need.
const LOCATE: &str = "import os, importlib.util as u, importlib.metadata as m\n\
    s = u.find_spec('pulsar_lite')\n\
    if s is None: raise SystemExit('no module named pulsar_lite')\n\
    print(os.path.join(list(s.submodule_search_locations)[0], 'bin', 'pulsar-lite'))\n\
    print(m.version('pulsar-lite'))";

/// A pulsar-lite binary and the package version it came from.
#[derive(Debug, Clone)]
pub(crate) struct LiteBinary {
    pub(crate) path: PathBuf,
    /// The package version, or how the binary was named when there is no package to ask.
    pub(crate) version: String,
}

/// `PULSAR_LITE_BIN` if set, else the binary inside the `pulsar_lite` package of `python3`.
pub(crate) fn find() -> Result<LiteBinary, BrokerError> {
    if let Some(path) = std::env::var_os(PULSAR_LITE_BIN_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(LiteBinary {
                path,
                version: format!("from {PULSAR_LITE_BIN_ENV}"),
            })
        } else {
            Err(BrokerError::BinaryNotFound {
                tried: vec![format!(
                    "{PULSAR_LITE_BIN_ENV}={} is not a file",
                    path.display()
                )],
            })
        };
    }
    let mut tried = vec![format!("{PULSAR_LITE_BIN_ENV} is not set")];
    match Command::new("python3").arg("-c").arg(LOCATE).output() {
        Err(err) => tried.push(format!("python3 could not be run ({err})")),
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().last().unwrap_or("no output").trim();
            tried.push(format!("python3 cannot find pulsar_lite ({last})"));
        }
        Ok(out) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let mut lines = stdout.lines();
            let path = PathBuf::from(lines.next().unwrap_or_default().trim());
            let version = lines.next().unwrap_or("unknown").trim().to_owned();
            if path.is_file() {
                return Ok(LiteBinary { path, version });
            }
            tried.push(format!(
                "python3's pulsar_lite {version} has no binary at {}",
                path.display()
            ));
        }
    }
    Err(BrokerError::BinaryNotFound { tried })
}
