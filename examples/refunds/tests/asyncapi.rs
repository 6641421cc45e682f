//! `refunds asyncapi`: the document, `--check` against a committed one, and the page the
//! health endpoint serves with `--http-asyncapi`, opened in headless Chromium (Debian's
//! `chromium`, which scripts/setup installs; a missing browser fails the test). The page's
//! screenshot is kept in the target directory (`target/tmp/asyncapi-refunds.png`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ruststream_test_brokers::LiveBroker;
use serde_json::Value;

fn refunds(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(args)
        .output()
        .expect("the refunds binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("asyncapi-test");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The document `refunds asyncapi` prints.
fn document() -> Value {
    let output = refunds(&["asyncapi"]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

#[test]
fn the_document_shows_the_refunds_topics_and_their_operations() {
    let doc = document();
    assert_eq!(
        doc["asyncapi"],
        ruststream_runner::asyncapi::ASYNCAPI_VERSION
    );
    let address = |id: &str| {
        doc["channels"][id]["address"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(address("refunds"), "persistent://public/default/refunds");
    assert_eq!(
        address("refunds-dlq"),
        "persistent://public/default/refunds-dlq"
    );
    let process = &doc["operations"]["process_refund"];
    assert_eq!(process["action"], "receive");
    assert_eq!(process["x-pulsar-subscription"]["maxAttempts"], 5);
    assert_eq!(process["x-pulsar-subscription"]["ackTimeoutMs"], 120_000);
    assert_eq!(
        process["x-pulsar-subscription"]["deadLetterTopic"],
        "persistent://public/default/refunds-dlq"
    );
    assert_eq!(
        doc["operations"]["process_refund_dead_letter"]["action"],
        "send"
    );
    assert_eq!(
        doc["operations"]["review"]["x-pulsar-subscription"]["name"],
        "refunds-review"
    );
    let payload = &doc["components"]["messages"]["Refund"]["payload"];
    assert_eq!(
        payload["required"],
        serde_json::json!(["id", "card", "amount_cents"])
    );
    assert_eq!(payload["properties"]["card"]["type"], "string");
    // `--pulsar-url` reaches the document's server, as it reaches the connection.
    let output = refunds(&[
        "asyncapi",
        "--pulsar-url",
        "pulsar+ssl://pulsar.example:6651",
    ]);
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["servers"]["pulsar"]["host"], "pulsar.example:6651");
    assert_eq!(doc["servers"]["pulsar"]["protocol"], "pulsar+ssl");
}

#[test]
fn check_passes_an_unchanged_service_in_json_and_in_yaml() {
    for (name, flags) in [("same.json", &[][..]), ("same.yaml", &["--yaml"][..])] {
        let file = scratch(name);
        let path = file.to_str().unwrap();
        let written = refunds(&[&["asyncapi", "-o", path][..], flags].concat());
        assert!(written.status.success(), "{}", stderr(&written));
        let checked = refunds(&["asyncapi", "--check", path]);
        assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
        assert!(
            stderr(&checked).contains("no breaking change against"),
            "{}",
            stderr(&checked)
        );
    }
}

#[test]
fn check_names_a_removed_field_and_a_changed_subscription_type() {
    // The committed document of an earlier version: its refunds had a currency, and its
    // subscription was Failover.
    let mut earlier = document();
    earlier["components"]["messages"]["Refund"]["payload"]["properties"]["currency"] =
        serde_json::json!({ "type": "string" });
    earlier["operations"]["process_refund"]["x-pulsar-subscription"]["type"] =
        Value::from("Failover");
    let file = scratch("earlier.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&earlier).unwrap()).unwrap();
    let checked = refunds(&["asyncapi", "--check", file.to_str().unwrap()]);
    let text = stderr(&checked);
    assert_eq!(checked.status.code(), Some(1), "{text}");
    assert!(text.contains("2 breaking change(s)"), "{text}");
    assert!(
        text.contains("message `Refund`: field `Refund.currency` was removed"),
        "{text}"
    );
    assert!(
        text.contains(
            "operation `process_refund`: subscription `refunds` changed type from Failover to \
             Shared"
        ),
        "{text}"
    );
}

/// `GET path` on `addr`: the body of a 200 answer.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("the endpoint accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    body.to_owned()
}

/// Chromium, headless, with what it needs on a machine without a network or a display.
fn chromium(profile: &Path) -> Command {
    let mut command = Command::new("chromium");
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// A child process, killed when dropped (a failed assertion included).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_served_page_shows_every_channel_and_operation_in_chromium() {
    let broker = LiveBroker::pulsar_lite_blocking().unwrap_or_else(|e| panic!("{e}"));
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_refunds"))
            .args(["run", "--http", "127.0.0.1:0", "--http-asyncapi"])
            .env("RUSTSTREAM_PULSAR_URL", broker.url())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the service starts"),
    );
    let (tx, rx) = mpsc::channel();
    let err = child.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
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
    let served: Value = serde_json::from_str(&get(endpoint, "/asyncapi.json")).unwrap();
    // What `refunds asyncapi` prints, but for the server: the service was pointed elsewhere.
    let mut printed = document();
    printed["servers"]["pulsar"]["host"] = served["servers"]["pulsar"]["host"].clone();
    assert_eq!(
        served, printed,
        "the endpoint serves what `refunds asyncapi` prints"
    );
    assert_eq!(
        served["servers"]["pulsar"]["host"],
        broker.url().trim_start_matches("pulsar://")
    );
    assert!(get(endpoint, "/asyncapi.yaml").contains("asyncapi: 3.1.0"));

    let profile = scratch("chromium-profile");
    let url = format!("http://{endpoint}/asyncapi");
    let dom = chromium(&profile)
        .args(["--dump-dom", &url])
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `chromium` ({e}): install it with scripts/setup (Debian package chromium)")
        });
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {:?}",
        dom.status
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("asyncapi-refunds.png");
    let _ = std::fs::remove_file(&shot);
    let screenshot = chromium(&profile)
        .args([
            "--window-size=1280,2400",
            &format!("--screenshot={}", shot.display()),
            &url,
        ])
        .stderr(Stdio::null())
        .status()
        .expect("chromium runs");
    drop(child);
    assert!(screenshot.success(), "chromium --screenshot failed");
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );

    let channels: Vec<&String> = served["channels"].as_object().unwrap().keys().collect();
    let operations: Vec<&String> = served["operations"].as_object().unwrap().keys().collect();
    assert_eq!(channels, ["refunds", "refunds-dlq"]);
    assert_eq!(
        operations,
        ["process_refund", "process_refund_dead_letter", "review"]
    );
    for channel in &channels {
        assert!(
            dom.contains(&format!("<h3>{channel}</h3>")),
            "channel {channel} not shown:\n{dom}"
        );
    }
    for operation in &operations {
        assert!(
            dom.contains(&format!("<td>{operation}</td>")),
            "operation {operation} not shown:\n{dom}"
        );
    }
    eprintln!(
        "asyncapi page: {} channels and {} operations shown; screenshot {} ({} bytes)",
        channels.len(),
        operations.len(),
        shot.display(),
        png.len()
    );
}
