//! A TCP proxy in front of one Pulsar broker that counts the commands clients send it:
//! acknowledgements (`CommandAck`, and the message ids in them), permits (`CommandFlow`) and
//! redelivery requests (`CommandRedeliverUnacknowledgedMessages`). The live benchmark runs it
//! as a process of its own, so its work is not in the CPU time of the consumer it counts.
//!
//! `ack_count_proxy <broker host:port>` listens on a free port of 127.0.0.1 and prints
//! `listening=127.0.0.1:<port>` on stdout. Then each line `counts` on stdin is answered by one
//! line `ack_commands=.. acked_ids=.. flow_commands=.. redeliver_commands=..
//! lookups_rewritten=..` (totals since it started); it exits when stdin closes.
//!
//! A client connects to its service URL for the lookup only, then to the broker URL the
//! lookup answers; the proxy rewrites that answer to its own address, so the consumer's
//! connection comes through it too (`lookups_rewritten` says it did). It forwards one
//! upstream: it is meant for one broker, as the benchmark's standalone.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ruststream_bench::pulsar_frames::{self, Frame};

/// What the clients sent, since the proxy started.
#[derive(Debug, Default)]
struct Counts {
    ack_commands: AtomicU64,
    acked_ids: AtomicU64,
    flow_commands: AtomicU64,
    redeliver_commands: AtomicU64,
    lookups_rewritten: AtomicU64,
}

impl Counts {
    fn line(&self) -> String {
        let get = |counter: &AtomicU64| counter.load(Ordering::Acquire);
        format!(
            "ack_commands={} acked_ids={} flow_commands={} redeliver_commands={} \
             lookups_rewritten={}",
            get(&self.ack_commands),
            get(&self.acked_ids),
            get(&self.flow_commands),
            get(&self.redeliver_commands),
            get(&self.lookups_rewritten),
        )
    }
}

/// Which way a pump copies frames.
#[derive(Debug, Clone, Copy)]
enum Direction {
    /// Client to broker: count.
    Up,
    /// Broker to client: point lookup answers at the proxy.
    Down,
}

/// Copy frames from `from` to `to` until either side closes, counting or rewriting on the way;
/// then close both, so that the other direction's pump ends too.
fn pump(
    from: TcpStream,
    to: TcpStream,
    direction: Direction,
    counts: &Counts,
    proxy_url: &str,
) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, &from);
    let mut output = BufWriter::with_capacity(64 * 1024, &to);
    let result = (|| -> std::io::Result<()> {
        while let Some(mut frame) = Frame::read(&mut input)? {
            let kind = pulsar_frames::command_type(&frame.command);
            match (direction, kind) {
                (Direction::Up, Some(pulsar_frames::ACK)) => {
                    counts.ack_commands.fetch_add(1, Ordering::AcqRel);
                    let ids = pulsar_frames::acked_ids(&frame.command) as u64;
                    counts.acked_ids.fetch_add(ids, Ordering::AcqRel);
                }
                (Direction::Up, Some(pulsar_frames::FLOW)) => {
                    counts.flow_commands.fetch_add(1, Ordering::AcqRel);
                }
                (Direction::Up, Some(pulsar_frames::REDELIVER_UNACKNOWLEDGED_MESSAGES)) => {
                    counts.redeliver_commands.fetch_add(1, Ordering::AcqRel);
                }
                (Direction::Down, Some(pulsar_frames::LOOKUP_RESPONSE)) => {
                    if let Some((command, _broker)) =
                        pulsar_frames::rewrite_lookup(&frame.command, proxy_url)
                    {
                        frame.command = command;
                        counts.lookups_rewritten.fetch_add(1, Ordering::AcqRel);
                    }
                }
                _ => {}
            }
            frame.write(&mut output)?;
            // Flush once nothing more is already read: frames that came together leave
            // together, and none waits for a next one.
            if input.buffer().is_empty() {
                output.flush()?;
            }
        }
        output.flush()
    })();
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
    result
}

/// Serve one client connection: connect to the broker and pump both ways.
fn serve(client: TcpStream, broker: &str, counts: Arc<Counts>, proxy_url: Arc<str>) {
    let upstream = match TcpStream::connect(broker) {
        Ok(upstream) => upstream,
        Err(e) => {
            eprintln!("ack_count_proxy: cannot connect to the broker at {broker}: {e}");
            return;
        }
    };
    for stream in [&client, &upstream] {
        let _ = stream.set_nodelay(true);
    }
    let clones = client
        .try_clone()
        .and_then(|c| Ok((c, upstream.try_clone()?)));
    let (client_2, upstream_2) = match clones {
        Ok(clones) => clones,
        Err(e) => {
            eprintln!("ack_count_proxy: cannot clone a socket: {e}");
            return;
        }
    };
    let (down_counts, down_url) = (counts.clone(), proxy_url.clone());
    std::thread::spawn(move || {
        let _ = pump(
            upstream_2,
            client_2,
            Direction::Down,
            &down_counts,
            &down_url,
        );
    });
    if let Err(e) = pump(client, upstream, Direction::Up, &counts, &proxy_url) {
        // A client that drops its connection mid-frame is not the benchmark's concern; a frame
        // the proxy cannot read is, since it then counts nothing more on that connection.
        if e.kind() == std::io::ErrorKind::InvalidData {
            eprintln!("ack_count_proxy: {e}");
        }
    }
}

fn main() {
    let broker = match std::env::args().nth(1) {
        Some(broker) => broker,
        None => {
            eprintln!("usage: ack_count_proxy <broker host:port>");
            std::process::exit(2);
        }
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
    let address = listener.local_addr().expect("the proxy's address");
    let proxy_url: Arc<str> = format!("pulsar://{address}").into();
    let counts = Arc::new(Counts::default());
    {
        let counts = counts.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                match client {
                    Ok(client) => {
                        let (broker, counts, url) =
                            (broker.clone(), counts.clone(), proxy_url.clone());
                        std::thread::spawn(move || serve(client, &broker, counts, url));
                    }
                    Err(e) => eprintln!("ack_count_proxy: accept failed: {e}"),
                }
            }
        });
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening={address}").expect("stdout");
    stdout.flush().expect("stdout");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "counts" => writeln!(stdout, "{}", counts.line()),
            "" => continue,
            other => writeln!(stdout, "error=unknown-command:{other}"),
        }
        .and_then(|()| stdout.flush())
        .expect("stdout");
    }
}
