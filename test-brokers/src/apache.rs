//! Apache Pulsar standalone, started from Maven Central artifacts by the launcher kept in
//! `tests/brokers/pulsar-standalone/`.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::launch_security::LaunchSecurity;
use crate::secret::Secret;
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
    /// Whether the transaction coordinator runs (`PULSAR_TRANSACTIONS=1` for start.sh).
    transactions: bool,
    /// TLS, authentication and authorization, for a secured standalone
    /// ([`ApacheStandalone::start_secured`]); `None` for an open one.
    security: Option<LaunchSecurity>,
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
        Self::start_as(settings, false, None)
    }

    /// [`ApacheStandalone::start_with`], with the transaction coordinator (PIP-31) running:
    /// ready once the coordinator's topic exists, as start.sh's `PULSAR_TRANSACTIONS=1` waits.
    pub fn start_with_transactions(settings: &[&str]) -> Result<Self, BrokerError> {
        Self::start_as(settings, true, None)
    }

    /// Start one with `settings`, the transaction coordinator if `transactions`, and
    /// `security` if secured.
    pub(crate) fn start_as(
        settings: &[&str],
        transactions: bool,
        security: Option<LaunchSecurity>,
    ) -> Result<Self, BrokerError> {
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
            transactions,
            security,
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
        let mut command = Command::new("bash");
        command
            .arg(self.launcher.join("start.sh"))
            .arg(self.dir.path())
            .env("PULSAR_PORT", self.broker.port().to_string())
            .env("PULSAR_HTTP_PORT", self.http.port().to_string())
            .env("PULSAR_EXTRA_CONF", &self.settings)
            .env(
                "PULSAR_TRANSACTIONS",
                if self.transactions { "1" } else { "0" },
            );
        LaunchSecurity::apply(self.security.as_ref(), &mut command);
        let output = command.output().map_err(|source| BrokerError::Bridge {
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

    /// The admin REST address. When the broker is secured
    /// ([`ApacheStandalone::start_secured`]), a call to it needs a token
    /// ([`crate::SecuredStandalone::superuser_token`]) as `Authorization: Bearer`.
    pub fn http(&self) -> SocketAddr {
        self.http
    }

    /// The superuser's token the admin calls of this handle send, if the broker is secured.
    pub(crate) fn admin_token(&self) -> Option<&Secret> {
        self.security.as_ref().map(LaunchSecurity::admin_token)
    }

    /// The security this broker was started with, if secured.
    pub(crate) fn security(&self) -> Option<&LaunchSecurity> {
        self.security.as_ref()
    }

    /// An admin API call as this handle makes them (with the superuser's token when secured).
    pub(crate) fn admin(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<AdminAnswer, BrokerError> {
        http(self.http, self.admin_token(), method, path, body)
    }

    /// Create namespace `tenant/namespace` (Apache Pulsar does not create namespaces on first
    /// use, unlike topics), then wait until it serves topics. An existing one is fine.
    ///
    /// A new namespace's bundle has no owner yet: the first lookup makes this broker take it,
    /// and until then subscribing answers `ServiceNotReady`. On a loaded 2-core machine that
    /// took longer than a client's 10 s connect bound, so the wait happens here, by asking for
    /// a topic's owner until it is given (up to [`NAMESPACE_READY_WITHIN`]).
    pub fn create_namespace(&self, namespace: &str) -> Result<(), BrokerError> {
        let status = self
            .admin("PUT", &format!("/admin/v2/namespaces/{namespace}"), None)?
            .status;
        // 204: created; 409: already there.
        if status != 204 && status != 409 {
            return Err(BrokerError::ApacheUnavailable {
                detail: format!("creating namespace {namespace} answered HTTP {status}"),
            });
        }
        let lookup = format!("/lookup/v2/topic/persistent/{namespace}/ruststream-ready");
        let started = Instant::now();
        loop {
            let status = self.admin("GET", &lookup, None)?.status;
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

    /// Create the partitioned topic `topic`, fully qualified
    /// (`persistent://tenant/namespace/name`), with `partitions` partitions, through the admin
    /// API (`PUT /admin/v2/persistent/{tenant}/{namespace}/{name}/partitions`). Its namespace
    /// must exist ([`Self::create_namespace`]; `public/default` always does).
    ///
    /// A partitioned topic of that name with as many partitions is fine (the call is
    /// idempotent); one with another count, or a non-partitioned topic of that name (0
    /// partitions), is an error naming both counts.
    pub fn create_partitioned_topic(
        &self,
        topic: &str,
        partitions: u32,
    ) -> Result<(), BrokerError> {
        create_partitioned_topic(self.http, self.admin_token(), topic, partitions)
    }

    /// How many messages each partition of partitioned topic `topic` (fully qualified) has
    /// received, in partition order: the broker's own count (`msgInCounter` of
    /// `GET .../partitioned-stats?perPartition=true`), to check where a producer's messages
    /// really went.
    pub fn partition_message_counts(&self, topic: &str) -> Result<Vec<u64>, BrokerError> {
        let refused = |detail: String| BrokerError::ApacheUnavailable { detail };
        let rest = topic.strip_prefix("persistent://").ok_or_else(|| {
            refused(format!(
                "{topic:?} is not a fully qualified persistent topic name \
                 (persistent://tenant/namespace/name)"
            ))
        })?;
        let path = format!("/admin/v2/persistent/{rest}/partitioned-stats?perPartition=true");
        let answer = self.admin("GET", &path, None)?;
        let stats: serde_json::Value = (answer.status == 200)
            .then(|| serde_json::from_str(&answer.body).ok())
            .flatten()
            .ok_or_else(|| {
                refused(format!(
                    "asking for the stats of {topic} (GET {path}) answered HTTP {} with {:?}",
                    answer.status,
                    excerpt(&answer.body)
                ))
            })?;
        let partitions = stats
            .get("metadata")
            .and_then(|m| m.get("partitions"))
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| refused(format!("the stats of {topic} name no partition count")))?;
        (0..partitions)
            .map(|i| {
                let name = format!("{topic}-partition-{i}");
                stats
                    .get("partitions")
                    .and_then(|p| p.get(&name))
                    .and_then(|p| p.get("msgInCounter"))
                    .and_then(serde_json::Value::as_u64)
                    .ok_or_else(|| {
                        refused(format!(
                            "the stats of {topic} have no msgInCounter for {name}"
                        ))
                    })
            })
            .collect()
    }

    /// The compression codec the first message of `topic` (fully qualified, not partitioned)
    /// is stored with, as the broker reports it (`X-Pulsar-compression` of
    /// `GET .../examinemessage`: `LZ4`, `ZLIB`, `ZSTD`, `SNAPPY`), or `None` when it is not
    /// compressed: what a producer really wrote, whatever a consumer decompresses.
    pub fn first_message_compression(&self, topic: &str) -> Result<Option<String>, BrokerError> {
        let refused = |detail: String| BrokerError::ApacheUnavailable { detail };
        let rest = topic.strip_prefix("persistent://").ok_or_else(|| {
            refused(format!(
                "{topic:?} is not a fully qualified persistent topic name \
                 (persistent://tenant/namespace/name)"
            ))
        })?;
        let path = format!(
            "/admin/v2/persistent/{rest}/examinemessage?initialPosition=earliest&messagePosition=1"
        );
        let answer = self.admin("GET", &path, None)?;
        if answer.status != 200 {
            return Err(refused(format!(
                "examining the first message of {topic} (GET {path}) answered HTTP {} with {:?}",
                answer.status,
                excerpt(&answer.body)
            )));
        }
        Ok(answer
            .header("X-Pulsar-compression")
            .filter(|codec| !codec.eq_ignore_ascii_case("NONE"))
            .map(str::to_owned))
    }

    /// The Java classpath of Apache Pulsar [`APACHE_PULSAR_VERSION`] that `start.sh` resolved
    /// with Maven and cached (`:`-separated jar paths; it holds the Java client,
    /// `pulsar-client-original`, and log4j2), for running the official Java client beside this
    /// broker ([`crate::java_keyed_partitions`]).
    ///
    /// The file is found the way `start.sh` names it:
    /// `${PULSAR_M2_REPO:-$HOME/.m2/repository}/../ruststream-pulsar-standalone/classpath-<sum>.txt`,
    /// `<sum>` being the first 16 hex digits of the SHA-256 of `pom.xml` followed by
    /// `settings.xml` (computed with `sha256sum`, as `start.sh` does). Change both together.
    pub fn java_classpath(&self) -> Result<String, BrokerError> {
        cached_classpath(&self.launcher)
    }
}

/// [`ApacheStandalone::create_partitioned_topic`] on the admin API at `admin`, with `token` if
/// secured.
fn create_partitioned_topic(
    admin: SocketAddr,
    token: Option<&Secret>,
    topic: &str,
    partitions: u32,
) -> Result<(), BrokerError> {
    let refused = |detail: String| BrokerError::ApacheUnavailable { detail };
    let rest = topic
        .strip_prefix("persistent://")
        .filter(|rest| {
            let parts: Vec<&str> = rest.split('/').collect();
            parts.len() == 3 && parts.iter().all(|part| !part.is_empty())
        })
        .ok_or_else(|| {
            refused(format!(
                "cannot create partitioned topic {topic:?}: it is not a fully qualified \
                 persistent topic name; write it as persistent://tenant/namespace/name, for \
                 example persistent://public/default/orders"
            ))
        })?;
    if partitions == 0 {
        return Err(refused(format!(
            "cannot create partitioned topic {topic} with 0 partitions: a partitioned topic \
             has at least 1 (for a non-partitioned topic, just use its name: the broker \
             creates it on first use)"
        )));
    }
    let path = format!("/admin/v2/persistent/{rest}/partitions");
    let created = http(admin, token, "PUT", &path, Some(&partitions.to_string()))?;
    match created.status {
        204 => Ok(()),
        409 => {
            let existing = http(admin, token, "GET", &path, None)?;
            let found = (existing.status == 200)
                .then(|| serde_json::from_str::<serde_json::Value>(&existing.body).ok())
                .flatten()
                .and_then(|answer| answer.get("partitions")?.as_u64());
            match found {
                Some(found) if found == u64::from(partitions) => Ok(()),
                Some(0) => Err(refused(format!(
                    "cannot create partitioned topic {topic} with {partitions} partitions: a \
                     non-partitioned topic (0 partitions) of that name exists; use another \
                     topic name, or delete it first (DELETE /admin/v2/persistent/{rest})"
                ))),
                Some(found) => Err(refused(format!(
                    "cannot create partitioned topic {topic} with {partitions} partitions: it \
                     already exists with {found} partitions; use another topic name, or \
                     delete it first (DELETE /admin/v2/persistent/{rest}/partitions)"
                ))),
                None => Err(refused(format!(
                    "partitioned topic {topic} already exists (HTTP 409), and asking for its \
                     partition count (GET {path}) answered HTTP {} with {:?}, not \
                     {{\"partitions\":N}}",
                    existing.status,
                    excerpt(&existing.body)
                ))),
            }
        }
        404 => Err(refused(format!(
            "cannot create partitioned topic {topic}: its namespace does not exist (HTTP 404: \
             {:?}); create it first with ApacheStandalone::create_namespace",
            excerpt(&created.body)
        ))),
        status => Err(refused(format!(
            "creating partitioned topic {topic} with {partitions} partitions (PUT {path}) \
             answered HTTP {status}: {:?}",
            excerpt(&created.body)
        ))),
    }
}

/// [`ApacheStandalone::java_classpath`] for the launcher folder `launcher`.
fn cached_classpath(launcher: &Path) -> Result<String, BrokerError> {
    let missing = |detail: String| BrokerError::ApacheUnavailable { detail };
    let repo = match std::env::var_os("PULSAR_M2_REPO").filter(|repo| !repo.is_empty()) {
        Some(repo) => PathBuf::from(repo),
        None => std::env::var_os("HOME")
            .map(|home| Path::new(&home).join(".m2").join("repository"))
            .ok_or_else(|| {
                missing(
                    "cannot find the Java classpath start.sh caches: neither PULSAR_M2_REPO \
                     nor HOME is set; set PULSAR_M2_REPO to the Maven repository start.sh used"
                        .to_owned(),
                )
            })?,
    };
    let mut poms = Vec::new();
    for name in ["pom.xml", "settings.xml"] {
        let file = launcher.join(name);
        let bytes = std::fs::read(&file).map_err(|error| {
            missing(format!(
                "cannot read {} to name the cached Java classpath: {error}",
                file.display()
            ))
        })?;
        poms.extend_from_slice(&bytes);
    }
    let sum = sha256_hex(&poms)?;
    let file = repo
        .join("..")
        .join("ruststream-pulsar-standalone")
        .join(format!("classpath-{}.txt", &sum[..16]));
    let classpath = std::fs::read_to_string(&file).map_err(|error| {
        missing(format!(
            "cannot read the Java classpath start.sh caches, {} ({error}); start the \
             standalone once with ApacheStandalone::start (start.sh resolves it with Maven), \
             with the same PULSAR_M2_REPO and HOME as this process; if start.sh changed how it \
             names the file, change ApacheStandalone::java_classpath to match",
            file.display()
        ))
    })?;
    let classpath = classpath.trim_end().to_owned();
    let client = format!("pulsar-client-original-{APACHE_PULSAR_VERSION}.jar");
    if !classpath.split(':').any(|jar| jar.ends_with(&client)) {
        return Err(missing(format!(
            "the Java classpath cached in {} has no {client}; delete that file and start the \
             standalone again (start.sh resolves it anew)",
            file.display()
        )));
    }
    Ok(classpath)
}

/// The SHA-256 of `bytes` in hex, by `sha256sum` (as start.sh computes it).
fn sha256_hex(bytes: &[u8]) -> Result<String, BrokerError> {
    let failed = |detail: String| BrokerError::ApacheUnavailable {
        detail: format!(
            "cannot name the cached Java classpath: {detail}; start.sh needs `sha256sum` \
             (GNU coreutils) on PATH too"
        ),
    };
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| failed(format!("running sha256sum failed ({error})")))?;
    // A few kilobytes: they fit in the pipe, so writing before reading cannot block.
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(bytes))
        .transpose();
    let output = child
        .wait_with_output()
        .map_err(|error| failed(format!("waiting for sha256sum failed ({error})")))?;
    written.map_err(|error| failed(format!("writing to sha256sum failed ({error})")))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let sum = text.split_whitespace().next().unwrap_or("");
    if !output.status.success() || sum.len() != 64 {
        return Err(failed(format!(
            "sha256sum exited with {} and printed {text:?} ({})",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(sum.to_owned())
}

impl Drop for ApacheStandalone {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.launcher.join("stop.sh"))
            .arg(self.dir.path())
            .output();
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
pub(crate) fn free_port() -> Result<SocketAddr, BrokerError> {
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

/// What the admin API answered.
#[derive(Debug)]
pub(crate) struct AdminAnswer {
    pub(crate) status: u16,
    /// The header lines, `Name: value`.
    head: String,
    pub(crate) body: String,
}

impl AdminAnswer {
    /// The value of header `name` (any case), if the answer has it.
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

/// An HTTP/1.1 request (`PUT`, `GET`, `POST`, `DELETE`) with an optional JSON `body`, and
/// `token` as `Authorization: Bearer` if given; returns the status code and the body
/// (de-chunked).
pub(crate) fn http(
    addr: SocketAddr,
    token: Option<&Secret>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<AdminAnswer, BrokerError> {
    let io = |source| BrokerError::Bridge {
        what: "call the Apache Pulsar admin API",
        source,
    };
    let body = body.unwrap_or("");
    let authorization = token
        .map(|token| format!("Authorization: Bearer {}\r\n", token.expose()))
        .unwrap_or_default();
    let mut stream = TcpStream::connect(addr).map_err(io)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{authorization}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(io)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(io)?;
    let unreadable = || BrokerError::ApacheUnavailable {
        detail: format!(
            "unreadable admin answer to {method} {path}: {:.200}",
            String::from_utf8_lossy(&answer)
        ),
    };
    let split = answer
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(unreadable)?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let raw = &answer[split + 4..];
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(unreadable)?;
    let chunked = head.lines().any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked {
        dechunk(raw).ok_or_else(unreadable)?
    } else {
        raw.to_vec()
    };
    Ok(AdminAnswer {
        status,
        head: head.into_owned(),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// The body of a `Transfer-Encoding: chunked` answer, or `None` if it is malformed.
fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|window| window == b"\r\n")?;
        let size = std::str::from_utf8(&raw[..line_end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        let rest = &raw[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        raw = rest.get(size..)?.strip_prefix(b"\r\n")?;
    }
}

/// `text`, cut at 300 characters for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
