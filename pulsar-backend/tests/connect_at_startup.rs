//! Connecting at startup, on tokio and on smol alike (each keeps the bound with its own
//! timer): a broker that is not there fails the start within
//! `PulsarBroker::connect_timeout`, every attempt logged; a broker that comes up within the
//! bound is connected to, and the probe connection of the attempts is closed; a zero bound is
//! refused before anything connects.
//!
//! The broker that comes up is a stand-in that only completes Pulsar's handshake: no server
//! is started.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ruststream::app::{Broker, StartContext};
use ruststream::runtime::Runtime;
use ruststream::Timer;
use ruststream_pulsar::PulsarBroker;

/// The bound under test: short, so that the test stays quick.
const BOUND: Duration = Duration::from_secs(2);

/// How late past the bound the failure may come on a loaded machine.
const MARGIN: Duration = Duration::from_secs(3);

#[path = "support/captured_log.rs"]
mod captured_log;

use captured_log::CapturedLog;

/// A port on 127.0.0.1 where nothing listens: one just handed out and freed.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port on 127.0.0.1");
    listener.local_addr().unwrap().port()
}

/// The lines of `log` that report a failed attempt, checked to be at WARN with their
/// number and the URL.
fn failed_attempts<'a>(log: &'a str, url: &str) -> Vec<&'a str> {
    let attempts: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("cannot reach the Pulsar broker"))
        .collect();
    for (n, line) in attempts.iter().enumerate() {
        assert!(
            line.contains(" WARN ")
                && line.contains(&format!("attempt={}", n + 1))
                && line.contains(&format!("url={url}")),
            "attempt {} is logged at WARN with its number and the URL:\n{log}",
            n + 1
        );
    }
    attempts
}

async fn a_closed_port_fails_within_the_bound_and_logs_each_attempt(runtime: Arc<dyn Runtime>) {
    let url = format!("pulsar://127.0.0.1:{}", closed_port());
    let log = CapturedLog::default();
    let _log = log.install(tracing::Level::INFO);

    let broker = PulsarBroker::<()>::new(url.clone()).connect_timeout(BOUND);
    let started = Instant::now();
    let outcome = Box::new(broker)
        .start(Arc::new(()), StartContext::new(runtime))
        .await;
    let took = started.elapsed();

    let Err(error) = outcome else {
        panic!("something answered at {url}: the port was meant to be closed")
    };
    let error = error.to_string();
    assert!(
        took <= BOUND + MARGIN,
        "failed after {took:?}, not within {BOUND:?} (+{MARGIN:?})"
    );
    for part in [
        url.as_str(),
        "within the connect timeout of 2s",
        "PulsarBroker::connect_timeout(..)",
    ] {
        assert!(error.contains(part), "`{part}` missing from: {error}");
    }
    let log = log.text();
    let attempts = failed_attempts(&log, &url);
    assert!(
        attempts.len() >= 3,
        "a refused connection is tried again until the bound, each try logged:\n{log}"
    );
    assert!(
        error.contains(&format!("{} attempts", attempts.len())),
        "the error counts the logged attempts ({}): {error}",
        attempts.len()
    );
}

/// Pulsar's CONNECTED command in its frame: total size, command size, then the
/// `BaseCommand { type: CONNECTED, connected: { server_version: "fake", protocol_version: 21 } }`
/// protobuf.
const CONNECTED: [u8; 20] = [
    0, 0, 0, 16, 0, 0, 0, 12, 0x08, 3, 0x1a, 8, 0x0a, 4, b'f', b'a', b'k', b'e', 0x10, 21,
];

/// Read one frame; an error once the client has hung up.
fn read_frame(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    stream.read_exact(&mut frame)
}

/// Connections accepted and connections the client closed.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    closed: AtomicUsize,
}

/// After `delay`, listen on `port` as a stand-in broker that answers CONNECT with CONNECTED
/// and then reads until the client hangs up.
fn handshake_only_broker(port: u16, delay: Duration) -> Arc<Counts> {
    let counts = Arc::new(Counts::default());
    let shared = counts.clone();
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("listen on the freed port");
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            shared.accepted.fetch_add(1, Ordering::SeqCst);
            let shared = shared.clone();
            std::thread::spawn(move || {
                if read_frame(&mut stream).is_ok() && stream.write_all(&CONNECTED).is_ok() {
                    while read_frame(&mut stream).is_ok() {}
                }
                shared.closed.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    counts
}

async fn a_broker_that_comes_up_within_the_bound_is_connected_to(runtime: Arc<dyn Runtime>) {
    let port = closed_port();
    let url = format!("pulsar://127.0.0.1:{port}");
    let counts = handshake_only_broker(port, Duration::from_millis(500));
    let log = CapturedLog::default();
    let _log = log.install(tracing::Level::INFO);

    let broker = PulsarBroker::<()>::new(url.clone()).connect_timeout(Duration::from_secs(5));
    let running = match Box::new(broker)
        .start(Arc::new(()), StartContext::new(runtime.clone()))
        .await
    {
        Ok(running) => running,
        Err(e) => panic!(
            "the broker came up within the bound, yet: {e}\n{}",
            log.text()
        ),
    };
    let log = log.text();
    let attempts = failed_attempts(&log, &url);
    assert!(
        !attempts.is_empty(),
        "the attempts before the broker came up are logged:\n{log}"
    );
    let connected = format!("attempt={}", attempts.len() + 1);
    assert!(
        log.lines()
            .any(|l| l.contains("connected to the Pulsar broker") && l.contains(&connected)),
        "the connection is logged with its attempt number:\n{log}"
    );
    assert_eq!(
        counts.accepted.load(Ordering::SeqCst),
        2,
        "one probe connection, then the service's own"
    );
    let waited = Instant::now();
    while counts.closed.load(Ordering::SeqCst) < 1 && waited.elapsed() < Duration::from_secs(3) {
        runtime.sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        counts.closed.load(Ordering::SeqCst),
        1,
        "the probe connection is closed, the service's is kept"
    );
    running.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_closed_port_on_tokio() {
    let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
    a_closed_port_fails_within_the_bound_and_logs_each_attempt(runtime).await;
}

#[test]
fn a_closed_port_on_smol() {
    smol::block_on(a_closed_port_fails_within_the_bound_and_logs_each_attempt(
        Arc::new(ruststream_smol::SmolRuntime::global()),
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn a_late_broker_on_tokio() {
    let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
    a_broker_that_comes_up_within_the_bound_is_connected_to(runtime).await;
}

#[test]
fn a_late_broker_on_smol() {
    smol::block_on(a_broker_that_comes_up_within_the_bound_is_connected_to(
        Arc::new(ruststream_smol::SmolRuntime::global()),
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn a_zero_bound_is_refused_before_connecting() {
    let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
    let broker = PulsarBroker::<()>::new("pulsar://127.0.0.1:6650").connect_timeout(Duration::ZERO);
    let Err(error) = Box::new(broker)
        .start(Arc::new(()), StartContext::new(runtime))
        .await
    else {
        panic!("a zero connect timeout was accepted")
    };
    let error = error.to_string();
    assert!(
        error.contains("the connect timeout is 0 s")
            && error.contains("PulsarBroker::connect_timeout(Duration::from_secs(10))"),
        "{error}"
    );
}
