//! What a test sees when no broker can be had: an error with advice, never a skip.
//!
//! One test function only: it changes environment variables, which other tests in the same
//! process would otherwise see.

use ruststream_test_brokers::{require_broker, BrokerError, LiveBroker};

#[tokio::test]
async fn a_missing_broker_is_an_error_that_says_how_to_install_one() {
    std::env::remove_var("RUSTSTREAM_PULSAR_URL");
    std::env::set_var("PULSAR_LITE_BIN", "/nonexistent/pulsar-lite");

    let err = LiveBroker::pulsar_lite()
        .await
        .expect_err("no binary, no broker");
    assert!(matches!(err, BrokerError::BinaryNotFound { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("pip install pulsar-lite==0.2.0"), "{text}");
    assert!(text.contains("/nonexistent/pulsar-lite"), "{text}");

    std::env::set_var("CI", "true");
    let in_ci = require_broker()
        .await
        .expect_err("CI: missing broker is an error");
    assert!(
        matches!(in_ci, BrokerError::Unavailable { ci: true, .. }),
        "{in_ci}"
    );
    assert!(
        in_ci.to_string().contains("fail rather than skip"),
        "{in_ci}"
    );

    std::env::remove_var("CI");
    let local = require_broker().await.expect_err("locally too, an error");
    assert!(
        matches!(local, BrokerError::Unavailable { ci: false, .. }),
        "{local}"
    );
    assert!(
        local.to_string().contains("pip install pulsar-lite==0.2.0"),
        "{local}"
    );

    std::env::set_var("RUSTSTREAM_PULSAR_URL", "http://localhost:8080");
    let bad = LiveBroker::from_env().expect_err("not a pulsar:// URL");
    assert!(matches!(bad, BrokerError::BadExternalUrl { .. }), "{bad}");

    std::env::set_var("RUSTSTREAM_PULSAR_URL", "pulsar://127.0.0.1:6650");
    let external = LiveBroker::from_env().expect("valid").expect("set");
    assert_eq!(external.name(), "external");
    assert_eq!(external.url(), "pulsar://127.0.0.1:6650");
    assert!(external.deliveries().is_none());
}
