//! Apache Pulsar standalone, started from Maven Central artifacts by the launcher kept in
//! `tests/brokers/pulsar-standalone/`.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::BrokerError;

/// The Apache Pulsar version the launcher's pom resolves.
pub const APACHE_PULSAR_VERSION: &str = "4.0.7";

/// How long [`ApacheStandalone::create_namespace`] waits for a new namespace to serve topics.
pub const NAMESPACE_READY_WITHIN: Duration = Duration::from_secs(90);

/// A running Apache Pulsar standalone (broker, BookKeeper and metadata store in one JVM) on
/// 127.0.0.1, with its data in a temporary folder. Dropping it runs the launcher's `stop.sh`
/// (SIGTERM to the JVM's process group, SIGKILL after 30 s) and removes the folder.
#[derive(Debug)]
pub struct ApacheStandalone {
    launcher: PathBuf,
    dir: tempfile::TempDir,
    broker: SocketAddr,
    http: SocketAddr,
    /// Extra `standalone.conf` lines, kept for restarts.
    settings: String,
}

impl ApacheStandalone {
    /// Start one and wait until it serves `public/default` (up to 180 s; the first start on a
    /// machine also downloads about 260 MB of Maven artifacts).
    pub fn start() -> Result<Self, BrokerError> {
        Self::start_with(&[])
    }

    /// Start one with more broker settings (`key=value` lines of `standalone.conf`), for
    /// instance `acknowledgmentAtBatchIndexLevelEnabled=true`.
    pub fn start_with(settings: &[&str]) -> Result<Self, BrokerError> {
        let launcher = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("tests")
            .join("brokers")
            .join("pulsar-standalone");
        let dir = tempfile::Builder::new()
            .prefix("ruststream-apache-pulsar-")
            .tempdir()
            .map_err(|source| BrokerError::Bridge {
                what: "create the Apache Pulsar data folder",
                source,
            })?;
        let broker = free_port()?;
        let http = free_port()?;
        let me = ApacheStandalone {
            launcher,
            dir,
            broker,
            http,
            settings: settings.join("\n"),
        };
        me.launch()?;
        Ok(me)
    }

    /// Stop the broker and start it again on the same ports and data (what a broker restart
    /// under load looks like to its clients: connections drop, then the same address serves
    /// the same topics and subscriptions again). `down` is how long it stays stopped.
    pub fn restart(&self, down: std::time::Duration) -> Result<(), BrokerError> {
        let stop = Command::new("bash")
            .arg(self.launcher.join("stop.sh"))
            .arg(self.dir.path())
            .output()
            .map_err(|source| BrokerError::Bridge {
                what: "run tests/brokers/pulsar-standalone/stop.sh",
                source,
            })?;
        if !stop.status.success() {
            return Err(BrokerError::ApacheUnavailable {
                detail: format!(
                    "stop.sh exited with {}:\n{}",
                    stop.status,
                    String::from_utf8_lossy(&stop.stderr)
                ),
            });
        }
        std::thread::sleep(down);
        self.launch()
    }

    /// Run `start.sh` on this broker's folder, ports and settings, and wait until it is ready.
    fn launch(&self) -> Result<(), BrokerError> {
        let output = Command::new("bash")
            .arg(self.launcher.join("start.sh"))
            .arg(self.dir.path())
            .env("PULSAR_PORT", self.broker.port().to_string())
            .env("PULSAR_HTTP_PORT", self.http.port().to_string())
            .env("PULSAR_EXTRA_CONF", &self.settings)
            .output()
            .map_err(|source| BrokerError::Bridge {
                what: "run tests/brokers/pulsar-standalone/start.sh",
                source,
            })?;
        if output.status.success() {
            return Ok(());
        }
        Err(BrokerError::ApacheUnavailable {
            detail: format!(
                "start.sh exited with {}:\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        })
    }

    /// `pulsar://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("pulsar://{}", self.broker)
    }

    /// The admin REST address.
    pub fn http(&self) -> SocketAddr {
        self.http
    }

    /// Create namespace `tenant/namespace` (Apache Pulsar does not create namespaces on first
    /// use, unlike topics), then wait until it serves topics. An existing one is fine.
    ///
    /// A new namespace's bundle has no owner yet: the first lookup makes this broker take it,
    /// and until then subscribing answers `ServiceNotReady`. On a loaded 2-core machine that
    /// took longer than a client's 10 s connect bound, so the wait happens here, by asking for
    /// a topic's owner until it is given (up to [`NAMESPACE_READY_WITHIN`]).
    pub fn create_namespace(&self, namespace: &str) -> Result<(), BrokerError> {
        let status = http(
            self.http,
            "PUT",
            &format!("/admin/v2/namespaces/{namespace}"),
        )?;
        // 204: created; 409: already there.
        if status != 204 && status != 409 {
            return Err(BrokerError::ApacheUnavailable {
                detail: format!("creating namespace {namespace} answered HTTP {status}"),
            });
        }
        let lookup = format!("/lookup/v2/topic/persistent/{namespace}/ruststream-ready");
        let started = Instant::now();
        loop {
            let status = http(self.http, "GET", &lookup)?;
            if status == 200 {
                eprintln!(
                    "namespace {namespace} serves topics after {} ms",
                    started.elapsed().as_millis()
                );
                return Ok(());
            }
            if started.elapsed() >= NAMESPACE_READY_WITHIN {
                return Err(BrokerError::ApacheUnavailable {
                    detail: format!(
                        "namespace {namespace} was created but no topic in it had an owner \
                         after {NAMESPACE_READY_WITHIN:?} (the last lookup answered HTTP \
                         {status}); see the broker log in the data folder"
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for ApacheStandalone {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.launcher.join("stop.sh"))
            .arg(self.dir.path())
            .output();
    }
}

fn free_port() -> Result<SocketAddr, BrokerError> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|source| BrokerError::Bridge {
            what: "find a free port on 127.0.0.1",
            source,
        })?;
    listener.local_addr().map_err(|source| BrokerError::Bridge {
        what: "read a free port",
        source,
    })
}

/// A bodyless HTTP/1.1 request (`PUT` or `GET`); returns the status code.
fn http(addr: SocketAddr, method: &str, path: &str) -> Result<u16, BrokerError> {
    let io = |source| BrokerError::Bridge {
        what: "call the Apache Pulsar admin API",
        source,
    };
    let mut stream = TcpStream::connect(addr).map_err(io)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .map_err(io)?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(io)?;
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| BrokerError::ApacheUnavailable {
            detail: format!("unreadable admin answer: {answer:.200}"),
        })
}
