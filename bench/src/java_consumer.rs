//! The Java client contender of the live benchmark: one JVM running `bench/java/LiveConsumer.java`
//! for the whole benchmark, given one run at a time on its stdin. Keeping it up is what makes
//! its runs those of a warm JVM (classes loaded, hot code compiled), as in a service that has
//! been running; its first run, on a subscription of its own, only warms it.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

/// How the Java program consumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JavaMode {
    /// `consumer.receive()` then `consumer.acknowledge(message)`, one at a time.
    Receive,
    /// A `MessageListener` doing the same on the client's listener thread.
    Listener,
}

impl JavaMode {
    /// The program's name for it.
    fn word(self) -> &'static str {
        match self {
            JavaMode::Receive => "receive",
            JavaMode::Listener => "listener",
        }
    }
}

/// What one Java run measured of itself.
#[derive(Debug, Clone, Copy)]
pub struct JavaRun {
    /// The JVM's CPU time (every thread) from just before subscribing to the last
    /// acknowledgement.
    pub cpu: Duration,
    /// The wall time over the same span.
    pub wall: Duration,
}

/// The running JVM.
#[derive(Debug)]
pub struct JavaConsumer {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl JavaConsumer {
    /// Start `java -cp <classpath> bench/java/LiveConsumer.java <topic>` and wait until it is
    /// ready (it compiles the source first, a few seconds). `java` is `$JAVA_HOME/bin/java`
    /// when `JAVA_HOME` is set, as for `start.sh`, else the one on PATH. Its stderr (the
    /// client's warnings) goes to this process's stderr.
    pub fn start(classpath: &str, topic: &str) -> Result<Self, String> {
        let program = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("java")
            .join("LiveConsumer.java");
        let java = match std::env::var_os("JAVA_HOME").filter(|home| !home.is_empty()) {
            Some(home) => Path::new(&home).join("bin").join("java"),
            None => PathBuf::from("java"),
        };
        let mut child = Command::new(&java)
            .arg("-cp")
            .arg(classpath)
            .arg(&program)
            .arg(topic)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {} ({e}): install a JDK 17+", java.display()))?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped stdin"));
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut me = JavaConsumer {
            child,
            stdin,
            stdout,
        };
        let first = me.line()?;
        if first != "ready" {
            return Err(format!(
                "{} printed {first:?} instead of `ready`",
                program.display()
            ));
        }
        Ok(me)
    }

    /// The JVM's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Drain `messages` messages of `subscription` on the broker at `url`. `at_last_ack` is
    /// called as soon as the program says the last message is acknowledged (before it closes
    /// its consumer), for what the caller measures over the same span, such as the broker's CPU.
    pub fn run(
        &mut self,
        mode: JavaMode,
        url: &str,
        subscription: &str,
        messages: u64,
        at_last_ack: impl FnOnce(),
    ) -> Result<JavaRun, String> {
        self.timed(
            &format!("run {} {url} {subscription} {messages}", mode.word()),
            messages,
            at_last_ack,
        )
    }

    /// The forwarding pipeline on `subscription`: each order decoded, its shipment published
    /// to `to` with `sendAsync` (a producer at its defaults), the order acknowledged in the
    /// send's callback. `at_last_ack` as for [`JavaConsumer::run`].
    pub fn forward(
        &mut self,
        url: &str,
        subscription: &str,
        to: &str,
        messages: u64,
        at_last_ack: impl FnOnce(),
    ) -> Result<JavaRun, String> {
        self.timed(
            &format!("forward {url} {subscription} {to} {messages}"),
            messages,
            at_last_ack,
        )
    }

    /// `messages` JSON orders published to `to` with `sendAsync`, from the first send to the
    /// last receipt. `at_last` is called at the last receipt.
    pub fn publish(
        &mut self,
        url: &str,
        to: &str,
        messages: u64,
        at_last: impl FnOnce(),
    ) -> Result<JavaRun, String> {
        self.timed(&format!("publish {url} {to} {messages}"), messages, at_last)
    }

    /// One order every `1 / rate` s for `seconds` s to `to`, each timed from its send to its
    /// receipt, the first second's left out: the latencies in nanoseconds.
    pub fn send_latency(
        &mut self,
        url: &str,
        to: &str,
        rate: u64,
        seconds: u64,
    ) -> Result<Vec<u64>, String> {
        let file = std::env::temp_dir().join(format!(
            "ruststream-java-latency-{}-{}.txt",
            std::process::id(),
            self.child.id()
        ));
        writeln!(
            self.stdin,
            "send-latency {url} {to} {rate} {seconds} {}",
            file.display()
        )
        .and_then(|()| self.stdin.flush())
        .map_err(|e| format!("cannot write to the JVM: {e}"))?;
        let result = self.line()?;
        if !result.starts_with("result ") {
            return Err(format!("the JVM answered {result:?}"));
        }
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let _ = std::fs::remove_file(&file);
        text.lines()
            .map(|line| {
                line.parse()
                    .map_err(|e| format!("{line:?} in {}: {e}", file.display()))
            })
            .collect()
    }

    /// Send `command`, wait for `acked ...` (calling `at_last`), then read its `result ...`
    /// for `messages` messages.
    fn timed(
        &mut self,
        command: &str,
        messages: u64,
        at_last: impl FnOnce(),
    ) -> Result<JavaRun, String> {
        writeln!(self.stdin, "{command}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("cannot write to the JVM: {e}"))?;
        let acked = self.line()?;
        if !acked.starts_with("acked ") {
            return Err(format!("the JVM answered {acked:?}"));
        }
        at_last();
        let result = self.line()?;
        let field = |key: &str| -> Result<u64, String> {
            result
                .split_whitespace()
                .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                .and_then(|value| value.parse().ok())
                .ok_or_else(|| format!("the JVM's result {result:?} has no {key}"))
        };
        if !result.starts_with("result ") || field("messages")? != messages {
            return Err(format!("the JVM answered {result:?}"));
        }
        Ok(JavaRun {
            cpu: Duration::from_nanos(field("cpu_ns")?),
            wall: Duration::from_nanos(field("wall_ns")?),
        })
    }

    /// One line of the program's stdout, without its line break.
    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("the JVM exited (its stderr is above)".to_owned()),
            Ok(_) => Ok(line.trim_end().to_owned()),
            Err(e) => Err(format!("cannot read from the JVM: {e}")),
        }
    }

    /// Close its stdin, so that it closes its clients and exits, and wait for it (killing it
    /// after 30 s).
    pub fn stop(mut self) {
        drop(self.stdin);
        for _ in 0..300 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
