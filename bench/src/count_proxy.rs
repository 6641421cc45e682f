//! The live benchmark's side of the counting proxy (`bin/ack_count_proxy.rs`): start it as a
//! process of its own, next to the benchmark's binary, and read its counts.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

/// The commands the proxy saw, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Commands {
    /// `CommandAck`s.
    pub ack_commands: u64,
    /// Message ids in those `CommandAck`s.
    pub acked_ids: u64,
    /// `CommandFlow`s (permits).
    pub flow_commands: u64,
    /// `CommandRedeliverUnacknowledgedMessages`.
    pub redeliver_commands: u64,
    /// Lookup answers pointed at the proxy.
    pub lookups_rewritten: u64,
}

impl std::ops::Sub for Commands {
    type Output = Commands;

    fn sub(self, before: Commands) -> Commands {
        Commands {
            ack_commands: self.ack_commands - before.ack_commands,
            acked_ids: self.acked_ids - before.acked_ids,
            flow_commands: self.flow_commands - before.flow_commands,
            redeliver_commands: self.redeliver_commands - before.redeliver_commands,
            lookups_rewritten: self.lookups_rewritten - before.lookups_rewritten,
        }
    }
}

/// The running proxy.
#[derive(Debug)]
pub struct CountProxy {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    url: String,
}

impl CountProxy {
    /// Start `ack_count_proxy <broker>` (`broker` as `host:port`) from the folder of this
    /// process's binary, where cargo builds it beside the benchmark.
    pub fn start(broker: &str) -> Result<Self, String> {
        let binary = std::env::current_exe()
            .map_err(|e| format!("cannot find this binary: {e}"))?
            .with_file_name("ack_count_proxy");
        let mut child = Command::new(&binary)
            .arg(broker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run {} ({e}): build it with `cargo build -p ruststream-bench --bins`",
                    binary.display()
                )
            })?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped stdin"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .map_err(|e| format!("cannot read from the proxy: {e}"))?;
        let address = line
            .trim()
            .strip_prefix("listening=")
            .ok_or_else(|| format!("the proxy printed {line:?}"))?;
        let url = format!("pulsar://{address}");
        Ok(CountProxy {
            child,
            stdin,
            stdout,
            url,
        })
    }

    /// `pulsar://127.0.0.1:<its port>`, the service URL for clients to be counted.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The totals so far.
    pub fn counts(&mut self) -> Result<Commands, String> {
        writeln!(self.stdin, "counts")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot write to the proxy: {e}"))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("cannot read from the proxy: {e}"))?;
        let field = |key: &str| -> Result<u64, String> {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                .and_then(|value| value.parse().ok())
                .ok_or_else(|| format!("the proxy's counts {line:?} have no {key}"))
        };
        Ok(Commands {
            ack_commands: field("ack_commands")?,
            acked_ids: field("acked_ids")?,
            flow_commands: field("flow_commands")?,
            redeliver_commands: field("redeliver_commands")?,
            lookups_rewritten: field("lookups_rewritten")?,
        })
    }

    /// Close its stdin, so that it exits, and wait for it (killing it after 5 s).
    pub fn stop(mut self) {
        drop(self.stdin);
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
