//! `--http`: `/readyz` answers 503 until the service has connected to its broker, 200 after,
//! and 503 again once the broker is gone; `/metrics` counts ten refunds and their handler
//! durations. On pulsar-lite, started
//! here on 127.0.0.1; the service reaches it through a gate this test opens when it chooses,
//! so that "before the broker connects" lasts as long as the test needs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ruststream_test_brokers::LiveBroker;

/// `GET path` on `addr`: the status code and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("the endpoint accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Poll `path` until `done` holds on its answer, for at most `within`; the last answer.
fn until(
    addr: SocketAddr,
    path: &str,
    within: Duration,
    done: impl Fn(u16, &str) -> bool,
) -> (u16, String) {
    let start = Instant::now();
    loop {
        let (status, body) = get(addr, path);
        if done(status, &body) || start.elapsed() > within {
            return (status, body);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Forward every connection `gate` accepts to `target`, once this is called.
fn open_gate(gate: TcpListener, target: SocketAddr) {
    std::thread::spawn(move || {
        for client in gate.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(target) else {
                return;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
}

#[test]
fn readyz_waits_for_the_broker_and_metrics_count_ten_refunds() {
    let broker = LiveBroker::pulsar_lite_blocking().unwrap_or_else(|e| panic!("{e}"));
    let target: SocketAddr = broker
        .url()
        .trim_start_matches("pulsar://")
        .parse()
        .expect("the broker's address");
    // Bound now, accepting later: a connection waits in the backlog, unanswered.
    let gate = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let gate_addr = gate.local_addr().unwrap();
    let samples = std::env::temp_dir().join(format!("refunds-http-{}.jsonl", std::process::id()));
    let lines: String = (1..=10)
        .map(|id| {
            format!("{{\"id\": {id}, \"card\": \"4111-1111-1111-1111\", \"amount_cents\": 100}}\n")
        })
        .collect();
    std::fs::write(&samples, lines).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(["run", "--http", "127.0.0.1:0", "--publish"])
        .arg(format!("refunds={}", samples.display()))
        .env("RUSTSTREAM_PULSAR_URL", format!("pulsar://{gate_addr}"))
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("the service starts");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut log = Vec::new();
    let endpoint: SocketAddr = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no endpoint announced:\n{}", log.join("\n")));
        if let Some(addr) = line.strip_prefix("refunds: http endpoint on ") {
            break addr.parse().expect("an address");
        }
        log.push(line);
    };

    assert_eq!(get(endpoint, "/healthz").0, 200);
    let (status, body) = get(endpoint, "/readyz");
    assert_eq!(status, 503, "not connected yet: {body}");

    open_gate(gate, target);
    let (status, body) = until(endpoint, "/readyz", Duration::from_secs(30), |s, _| {
        s == 200
    });
    assert_eq!(status, 200, "connected: {body}");
    assert!(body.contains("connected"), "{body}");

    let delivered = "ruststream_deliveries_total{handler=\"process_refund\"} 10";
    let (_, metrics) = until(endpoint, "/metrics", Duration::from_secs(30), |_, b| {
        b.contains(delivered)
    });
    assert!(metrics.contains(delivered), "{metrics}");
    assert!(
        metrics
            .contains("ruststream_outcomes_total{handler=\"process_refund\",outcome=\"ack\"} 10"),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("ruststream_process_duration_seconds_count{handler=\"process_refund\"} 10"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "ruststream_process_duration_seconds_bucket{handler=\"process_refund\",le=\"0.001\"}"
        ),
        "{metrics}"
    );

    // The broker goes away: within a few probe rounds the service is not ready any more.
    drop(broker);
    let (status, body) = until(endpoint, "/readyz", Duration::from_secs(20), |s, _| {
        s == 503
    });
    assert_eq!(status, 503, "the broker is gone: {body}");
    assert!(body.contains("no answer"), "{body}");
    assert_eq!(get(endpoint, "/healthz").0, 200, "still alive");

    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    // Stopping with the broker gone may take up to the close bound; it ends either way.
    let status = child.wait().expect("the service ends");
    assert!(
        status.code().is_some(),
        "ended by itself after SIGTERM: {status:?}"
    );
    let _ = std::fs::remove_file(&samples);
}
