//! A pulsar-lite broker process, owned by the test that started it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::pulsar_lite_binary::{self, LiteBinary};
use crate::BrokerError;

/// How long pulsar-lite may take to listen; it takes well under a second when the machine is not
/// overloaded.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Start attempts: the free port is found before the broker binds it, so another process may
/// take it in between; a fresh port on the next attempt fixes that.
const ATTEMPTS: usize = 3;

/// A pulsar-lite broker on `127.0.0.1:<free port>`, with its config and data in a temporary
/// folder of its own, so tests never share state or collide on ports.
///
/// pulsar-rs cannot read its deliveries directly; connect through a [`crate::LiteBridge`] (or
/// use [`crate::LiveBroker`], which does both). Dropping it kills the process by PID, waits for
/// it, then deletes the folder.
#[derive(Debug)]
pub struct PulsarLite {
    child: Child,
    addr: SocketAddr,
    binary: LiteBinary,
    // Dropped after the child is killed (Drop::drop runs before the fields are dropped).
    dir: TempDir,
}

impl PulsarLite {
    /// Finds the binary, starts the broker and returns once it accepts TCP connections. Blocks
    /// for as long as that takes (well under a second normally).
    pub fn start() -> Result<Self, BrokerError> {
        let binary = pulsar_lite_binary::find()?;
        let mut attempt = 1;
        loop {
            match Self::start_once(&binary) {
                Err(BrokerError::ExitedEarly { .. }) if attempt < ATTEMPTS => attempt += 1,
                outcome => return outcome,
            }
        }
    }

    /// Where the broker listens (a pulsar-rs client must not use it directly; see the type doc).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The installed package version (`0.2.0` is the measured one), or `from PULSAR_LITE_BIN`.
    pub fn version(&self) -> &str {
        &self.binary.version
    }

    /// The folder holding `lite.toml`, the data and `pulsar-lite.log`, to read after a failure.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn start_once(binary: &LiteBinary) -> Result<Self, BrokerError> {
        let dir = tempfile::Builder::new()
            .prefix("pulsar-lite-")
            .tempdir()
            .map_err(|source| BrokerError::TempDir { source })?;
        let config = dir.path().join("lite.toml");
        write_file(&config, &config_toml(&dir.path().join("data")))?;
        let log_path = dir.path().join("pulsar-lite.log");
        let log = File::create(&log_path).map_err(|source| BrokerError::Files {
            path: log_path.clone(),
            source,
        })?;
        let log_too = log.try_clone().map_err(|source| BrokerError::Files {
            path: log_path.clone(),
            source,
        })?;
        let addr = free_local_port().map_err(|source| BrokerError::NoFreePort { source })?;

        let child = Command::new(&binary.path)
            .arg("--config")
            .arg(&config)
            .arg("--addr")
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_too)
            .spawn()
            .map_err(|source| BrokerError::Spawn {
                binary: binary.path.clone(),
                source,
            })?;
        let mut lite = Self {
            child,
            addr,
            binary: binary.clone(),
            dir,
        };
        lite.wait_until_listening(&log_path)?;
        Ok(lite)
    }

    fn wait_until_listening(&mut self, log_path: &Path) -> Result<(), BrokerError> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(BrokerError::ExitedEarly {
                    binary: self.binary.path.clone(),
                    status,
                    log: log_tail(log_path),
                });
            }
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(BrokerError::NotListening {
                    addr: self.addr,
                    waited: started.elapsed(),
                    log: log_tail(log_path),
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for PulsarLite {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to this child's PID only; an Err means it already exited.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Data in our folder, quiet logs, and no metrics server: pulsar-lite 0.2.0 enables one by
/// default on 0.0.0.0:8080, which would collide between concurrent tests.
fn config_toml(data: &Path) -> String {
    format!(
        "db_path = {}\nlog_level = \"warn\"\n\n[metrics]\nenabled = false\n",
        toml_string(&data.to_string_lossy())
    )
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

fn write_file(path: &Path, text: &str) -> Result<(), BrokerError> {
    std::fs::write(path, text).map_err(|source| BrokerError::Files {
        path: PathBuf::from(path),
        source,
    })
}

/// A port on 127.0.0.1 that nobody listens on right now.
fn free_local_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()
}

/// The last few KB of the broker's log, for error messages.
fn log_tail(path: &Path) -> String {
    const TAIL: u64 = 4096;
    let Ok(mut file) = File::open(path) else {
        return String::from("(no log)");
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
    if text.is_empty() {
        String::from("(empty log)")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_quotes_the_data_path() {
        let toml = config_toml(Path::new("/tmp/a \"b\"\\c"));
        assert!(
            toml.starts_with("db_path = \"/tmp/a \\\"b\\\"\\\\c\"\n"),
            "{toml}"
        );
        assert!(toml.contains("[metrics]\nenabled = false\n"));
    }
}
