//! The broker's own CPU time, for the live benchmark's broker CPU per message: what consuming
//! with one client or another costs the broker, beside what it costs the consumer.
//!
//! The broker is the Apache Pulsar standalone that `tests/brokers/pulsar-standalone/start.sh`
//! started (one JVM: broker, bookie and metadata store). Its process id is in `pulsar.pid` of
//! its data folder, the folder of the `--config` file it was started with; the benchmark knows
//! the broker's port, so it finds that JVM among the running processes by the port its config
//! names. Its CPU time is `utime + stime` of `/proc/<pid>/stat`: every thread of the JVM, in
//! clock ticks (10 ms on Linux's usual `CLK_TCK` of 100, fine against runs of seconds).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A running standalone broker's JVM, whose CPU time can be read.
#[derive(Debug, Clone)]
pub struct BrokerProcess {
    pid: u32,
    ticks_per_second: u64,
}

impl BrokerProcess {
    /// The standalone `start.sh` started on this machine that serves `url`
    /// (`pulsar://127.0.0.1:PORT`), if there is one: an outside broker given by
    /// `RUSTSTREAM_BENCH_URL` may be one, whose CPU can then be read too.
    pub fn serving(url: &str) -> Option<Self> {
        let port = url.trim_end_matches('/').rsplit(':').next()?.parse().ok()?;
        Self::standalone_on_port(port).ok()
    }

    /// The standalone started by `start.sh` that serves the binary protocol on `port` of this
    /// machine, or why it was not found.
    pub fn standalone_on_port(port: u16) -> Result<Self, String> {
        let entries = std::fs::read_dir("/proc").map_err(|e| format!("cannot list /proc: {e}"))?;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            if !args
                .iter()
                .any(|a| *a == b"org.apache.pulsar.PulsarStandaloneStarter")
            {
                continue;
            }
            let Some(config) = args
                .windows(2)
                .find(|pair| pair[0] == b"--config")
                .map(|pair| PathBuf::from(String::from_utf8_lossy(pair[1]).into_owned()))
            else {
                continue;
            };
            if config_port(&config) != Some(port) {
                continue;
            }
            let pid_file = config
                .parent()
                .map(|dir| dir.join("pulsar.pid"))
                .unwrap_or_default();
            let recorded = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<u32>().ok());
            if recorded != Some(pid) {
                return Err(format!(
                    "the standalone on port {port} runs as pid {pid}, but {} says {recorded:?}",
                    pid_file.display()
                ));
            }
            let process = BrokerProcess {
                pid,
                ticks_per_second: ticks_per_second(),
            };
            process
                .cpu()
                .ok_or_else(|| format!("cannot read /proc/{pid}/stat"))?;
            return Ok(process);
        }
        Err(format!(
            "no Apache Pulsar standalone (PulsarStandaloneStarter) serving port {port} runs here"
        ))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its CPU time so far (user and system, all threads), or `None` once it is gone.
    pub fn cpu(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        let ticks = stat_cpu_ticks(&stat)?;
        Some(Duration::from_nanos(
            ticks.saturating_mul(1_000_000_000) / self.ticks_per_second,
        ))
    }
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line. The command name (field 2)
/// is in parentheses and may itself hold spaces and parentheses: count from the last `)`.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // After the name: field 3 (state) is the first; utime is field 14, the 12th from there.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The `brokerServicePort` a `standalone.conf` sets (its last line for it wins, as when Java
/// loads the file).
fn config_port(config: &Path) -> Option<u16> {
    std::fs::read_to_string(config)
        .ok()?
        .lines()
        .filter_map(|line| line.trim().strip_prefix("brokerServicePort="))
        .next_back()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 if that cannot be run, the
/// value of every usual Linux build).
fn ticks_per_second() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .filter(|ticks| *ticks > 0)
        .unwrap_or(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utime_and_stime_are_read_after_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1500 250 0 0 20 0 \
                    90 0 12345 0 0";
        assert_eq!(stat_cpu_ticks(stat), Some(1750));
        assert_eq!(stat_cpu_ticks("1 (short) S 1"), None);
    }

    #[test]
    fn this_process_has_a_readable_cpu_time() {
        let me = BrokerProcess {
            pid: std::process::id(),
            ticks_per_second: ticks_per_second(),
        };
        assert!(me.cpu().is_some());
        assert!(BrokerProcess::standalone_on_port(1).is_err());
    }
}
