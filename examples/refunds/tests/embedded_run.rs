//! The README's first command: the service on the embedded in-process Pulsar with the sample
//! refunds, on a virtual clock that skips ahead when idle; the process ends by itself.

use std::process::Command;

#[test]
fn the_embedded_run_handles_each_sample_refund_as_the_guide_says() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(["run", "--embedded", "--publish"])
        .arg(format!("refunds={samples}"))
        .arg("--publish-source")
        // Each delivery's outcome is logged at DEBUG by the driver.
        .env("RUST_LOG", "info,ruststream_pulsar=debug")
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
