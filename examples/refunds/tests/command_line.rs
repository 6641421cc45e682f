//! The generated `main`'s command line: `--version`, `--help`, and broker settings from the
//! environment overriding the URL written in `app()`.

use std::process::Command;

#[test]
fn version_prints_the_app_name_and_version() {
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .arg("--version")
        .output()
        .expect("runs");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "refunds 0.1.0"
    );
}

#[test]
fn help_lists_the_broker_settings_with_their_environment_variables() {
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .arg("--help")
        .env("RUSTSTREAM_PULSAR_TOKEN", "do-not-print-me")
        .output()
        .expect("runs");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "--embedded",
        "--publish <TOPIC=FILE>",
        "--publish-source",
        "--pulsar-url <VALUE>",
        "RUSTSTREAM_PULSAR_URL",
        "RUSTSTREAM_PULSAR_TOKEN",
        "RUSTSTREAM_PULSAR_NAMESPACE",
    ] {
        assert!(help.contains(expected), "no `{expected}` in\n{help}");
    }
    assert!(!help.contains("do-not-print-me"), "{help}");
}

#[test]
fn the_url_in_the_environment_replaces_the_one_in_app() {
    // Nothing listens on port 1: the error names the URL the service tried, which is the
    // environment's, not `pulsar://localhost:6650` from `app()`.
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .arg("run")
        .env("RUSTSTREAM_PULSAR_URL", "pulsar://127.0.0.1:1")
        .env("RUSTSTREAM_PULSAR_TOKEN", "do-not-print-me")
        .output()
        .expect("runs");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{log}");
    assert!(log.contains("pulsar://127.0.0.1:1"), "{log}");
    assert!(!log.contains("localhost:6650"), "{log}");
    assert!(!log.contains("do-not-print-me"), "{log}");
}

#[test]
fn a_flag_replaces_the_environment() {
    let output = Command::new(env!("CARGO_BIN_EXE_refunds"))
        .args(["run", "--pulsar-url", "pulsar://127.0.0.1:2"])
        .env("RUSTSTREAM_PULSAR_URL", "pulsar://127.0.0.1:1")
        .output()
        .expect("runs");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{log}");
    assert!(log.contains("pulsar://127.0.0.1:2"), "{log}");
}
