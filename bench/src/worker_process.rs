//! The consumer processes of `live_load`: `bench_worker` (a ruststream service or a raw
//! pulsar-rs loop) and the Java client's `bench/java/LiveConsumer.java`, each driven by lines
//! on its stdin (the commands are described at the top of both). Every worker's stdout lines
//! come back on one channel, tagged with the worker's index, so that one thread follows many
//! workers at once.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// One line of a worker's stdout, with the worker's index; `None` once its stdout closed.
pub type Line = (usize, Option<String>);

/// A running worker process.
#[derive(Debug)]
pub struct Worker {
    index: usize,
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
}

impl Worker {
    /// Start `bench_worker` (the binary beside this one) as worker `index`; its lines go to
    /// `lines`.
    pub fn rust(index: usize, lines: &mpsc::Sender<Line>) -> Result<Self, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this benchmark's own binary: {e}"))?
            .with_file_name("bench_worker");
        Self::spawn(index, Command::new(exe), lines)
    }

    /// Start the Java client's `LiveConsumer.java` on `classpath` as worker `index` (its
    /// `run` commands would read `topic`; the commands used here name theirs). `java` is
    /// `$JAVA_HOME/bin/java` when `JAVA_HOME` is set, else the one on PATH.
    pub fn java(
        index: usize,
        classpath: &str,
        topic: &str,
        lines: &mpsc::Sender<Line>,
    ) -> Result<Self, String> {
        let program = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("java")
            .join("LiveConsumer.java");
        let java = match std::env::var_os("JAVA_HOME").filter(|home| !home.is_empty()) {
            Some(home) => Path::new(&home).join("bin").join("java"),
            None => PathBuf::from("java"),
        };
        let mut command = Command::new(java);
        command.arg("-cp").arg(classpath).arg(program).arg(topic);
        Self::spawn(index, command, lines)
    }

    fn spawn(
        index: usize,
        mut command: Command,
        lines: &mpsc::Sender<Line>,
    ) -> Result<Self, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped stdin"));
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if lines.send((index, Some(line))).is_err() {
                    return;
                }
            }
            let _ = lines.send((index, None));
        });
        Ok(Worker {
            index,
            child,
            stdin: Some(stdin),
        })
    }

    /// Its index, as its lines are tagged.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send it one command.
    pub fn send(&mut self, command: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("the worker's stdin is closed")?;
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to worker {} ({e})", self.index))
    }

    /// Close its stdin, so that it exits, and wait for it (killing it, by its own handle, after
    /// 30 s).
    pub fn stop(mut self) {
        drop(self.stdin.take());
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

/// The value of `key=value` in a worker's line.
pub fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        .and_then(|value| value.parse().ok())
}

/// The next line of any worker within `within`, or why there is none (a worker that exited, or
/// said `error`, is a failure).
pub fn next_line(
    lines: &mpsc::Receiver<Line>,
    within: Duration,
) -> Result<(usize, String), String> {
    match lines.recv_timeout(within) {
        Ok((index, Some(line))) if line.starts_with("error") => {
            Err(format!("worker {index} failed: {line}"))
        }
        Ok((index, Some(line))) => Ok((index, line)),
        Ok((index, None)) => Err(format!("worker {index} exited (its stderr is above)")),
        Err(_) => Err(format!("no worker said anything for {within:?}")),
    }
}

/// Wait until each worker of `indices` said a line starting with `word` (other lines but
/// progress reports and `subscribed` are a failure); those lines, in the order of `indices`.
pub fn each_says(
    lines: &mpsc::Receiver<Line>,
    indices: &[usize],
    word: &str,
    within: Duration,
) -> Result<Vec<String>, String> {
    let mut said: Vec<Option<String>> = vec![None; indices.len()];
    while said.iter().any(Option::is_none) {
        let (index, line) = next_line(lines, within)?;
        if line.starts_with("progress ") || (line == "subscribed" && word != "subscribed") {
            continue;
        }
        let slot = indices
            .iter()
            .position(|i| *i == index)
            .filter(|_| line.split_whitespace().next() == Some(word))
            .ok_or_else(|| format!("worker {index} said {line:?} while {word} was awaited"))?;
        said[slot] = Some(line);
    }
    Ok(said.into_iter().flatten().collect())
}
