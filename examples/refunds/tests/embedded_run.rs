//! The README's first command: the service on the embedded in-process Pulsar with the sample
//! refunds, on a virtual clock that skips ahead when idle; the process ends by itself.

use std::process::Command;

/// `refunds run --embedded --publish refunds=FILE` on `contents` written to a file of its own
/// (removed afterwards), at the default log level; its exit and log.
fn run_on_file(name: &str, contents: &[u8]) -> std::process::Output {
    let file = std::env::temp_dir().join(format!("refunds-{name}-{}.jsonl", std::process::id()));
    std::fs::write(&file, contents).expect("the file is written");
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(["run", "--embedded", "--publish"])
        .arg(format!("refunds={}", file.display()))
        .env_remove("RUST_LOG")
        .output()
        .expect("the example runs");
    let _ = std::fs::remove_file(&file);
    output
}

#[test]
fn the_embedded_run_handles_each_sample_refund_as_the_guide_says() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(["run", "--embedded", "--publish"])
        .arg(format!("refunds={samples}"))
        .arg("--publish-source")
        // Each delivery's outcome is logged at DEBUG by the driver.
        .env(
            "RUST_LOG",
            "info,ruststream_driver=debug,ruststream_pulsar=debug",
        )
        .output()
        .expect("the example runs");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}\n{log}", output.status);
    let lines: Vec<&str> = log.lines().collect();
    let has = |time: &str, words: &[&str]| {
        lines
            .iter()
            .any(|l| l.starts_with(time) && words.iter().all(|w| l.contains(w)))
    };
    assert!(has("t=+  0.000s", &["refunded", "refund.id=1"]), "{log}");
    // The handler logs the message id and the `source` property `--publish-source` set.
    assert!(
        has(
            "t=+  0.000s",
            &[
                "refund received",
                "refund.id=1",
                "message_id=1:0:-1",
                "samples.jsonl:3"
            ]
        ),
        "{log}"
    );
    assert!(
        has("t=+  0.000s", &["card declined", "refund.id=2"]),
        "{log}"
    );
    assert!(
        has("t=+  0.000s", &["refund needs a person", "refund.id=3"]),
        "refund 3 reaches refunds-dlq after five immediate attempts\n{log}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("message_id=1:2:-1") && l.contains("outcome=\"retry\""))
            .count(),
        5,
        "five deliveries of refund 3\n{log}"
    );
    assert!(has("t=+ 30.000s", &["outcome=\"retry_after\""]), "{log}");
    assert!(
        has("t=+ 60.000s", &["refunded", "refund.id=4", "attempt=3"]),
        "{log}"
    );
    assert!(has("t=+ 60.000s", &["nothing left to do"]), "{log}");
}

#[test]
fn at_the_default_log_level_the_framework_writes_no_line_per_successful_delivery() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(["run", "--embedded", "--publish"])
        .arg(format!("refunds={samples}"))
        .env_remove("RUST_LOG")
        .output()
        .expect("the example runs");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}\n{log}", output.status);
    // The service's own lines are there (refund 1 is refunded, with its message id)...
    assert!(
        log.lines()
            .any(|l| l.contains("refunded") && l.contains("refund.id=1")),
        "{log}"
    );
    // Without `--publish-source` a line is published as it is, with no properties.
    assert!(
        log.lines().any(|l| l.contains("refund received")
            && l.contains("refund.id=1")
            && l.contains("source=\"unknown\"")),
        "{log}"
    );
    assert!(!log.contains("samples.jsonl:"), "{log}");
    // ...and none of the driver's per-delivery lines.
    let per_delivery: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" handled") && l.contains("outcome="))
        .collect();
    assert!(per_delivery.is_empty(), "{per_delivery:#?}");
}

/// `--publish` reads the file as it goes and, with `--embedded`, lets the handlers catch up
/// every `PUBLISH_WINDOW` lines: a file of several windows is handled whole, the refunds that
/// wait (busy twice, 30 s apart) and those that run out of attempts included, while the
/// in-process Pulsar frees what was acknowledged.
#[test]
fn an_embedded_run_handles_every_line_of_a_file_larger_than_the_publish_window() {
    const REFUNDS: u64 = 2_500;
    // The simulated processor answers by the card's last four digits (src/main.rs).
    let card = |id: u64| match id {
        _ if id % 50 == 7 => "4000-0000-0000-0119", // never answers: to refunds-dlq
        _ if id % 10 == 3 => "4000-0000-0000-9995", // busy twice, refunded 60 s later
        _ if id % 25 == 11 => "4000-0000-0000-0002", // declined, dropped
        _ => "4111-1111-1111-1111",
    };
    let mut lines = String::from("# generated by the test\n");
    for id in 1..=REFUNDS {
        lines.push_str(&format!(
            "{{\"id\": {id}, \"card\": \"{}\", \"amount_cents\": {}}}\n",
            card(id),
            100 + id
        ));
    }
    let output = run_on_file("embedded-window", lines.as_bytes());
    let log = String::from_utf8_lossy(&output.stderr);
    let tail: String = log.lines().rev().take(20).collect::<Vec<_>>().join("\n");
    assert!(output.status.success(), "exit {:?}\n{tail}", output.status);
    assert!(
        REFUNDS as usize > 2 * ruststream_runner::PUBLISH_WINDOW,
        "the file spans several windows"
    );
    let count = |words: &[&str]| {
        log.lines()
            .filter(|l| words.iter().all(|w| l.contains(w)))
            .count() as u64
    };
    let never = (1..=REFUNDS).filter(|id| id % 50 == 7).count() as u64;
    let declined = (1..=REFUNDS)
        .filter(|&id| card(id).ends_with("0002"))
        .count() as u64;
    let busy = (1..=REFUNDS)
        .filter(|&id| card(id).ends_with("9995"))
        .count() as u64;
    assert_eq!(
        count(&["published", &format!("messages={REFUNDS}")]),
        1,
        "{tail}"
    );
    assert_eq!(count(&["refund needs a person"]), never, "{tail}");
    assert_eq!(count(&["card declined"]), declined, "{tail}");
    assert_eq!(
        count(&["refunded", "refund.id="]),
        REFUNDS - never - declined,
        "{tail}"
    );
    assert_eq!(count(&["refunded", "attempt=3"]), busy, "{tail}");
    assert_eq!(
        count(&["refund received"]),
        REFUNDS + 4 * never + 2 * busy,
        "every delivery, redeliveries included\n{tail}"
    );
    assert!(log.contains("nothing left to do"), "{tail}");
}

/// `--publish` publishes a line's bytes as they are: the ASCII whitespace around them goes
/// (CRLF line ends included), blank and `#` lines are skipped, and a line that is not UTF-8
/// still reaches the topic, where the handler's JSON decode refuses it by name and sends it to
/// the dead-letter topic.
#[test]
fn publish_sends_each_lines_bytes_even_when_they_are_not_utf8() {
    let mut bytes = b"# a comment\n\n".to_vec();
    bytes.extend_from_slice(
        b"  {\"id\": 1, \"card\": \"4111-1111-1111-1111\", \"amount_cents\": 250}\t\r\n",
    );
    bytes.extend_from_slice(b"\xff\xfe not text\r\n");
    let output = run_on_file("embedded-bytes", &bytes);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}\n{log}", output.status);
    let count = |words: &[&str]| {
        log.lines()
            .filter(|l| words.iter().all(|w| l.contains(w)))
            .count()
    };
    assert_eq!(count(&["published", "messages=2"]), 1, "{log}");
    assert_eq!(count(&["refunded", "refund.id=1"]), 1, "{log}");
    assert_eq!(
        count(&[
            "not UTF-8, which JSON requires",
            "byte 0 of 11",
            "goes to the dead-letter topic now"
        ]),
        1,
        "{log}"
    );
}
