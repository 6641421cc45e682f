//! A token written into the broker URL is refused before anything connects, and neither the
//! error nor the log shows it.

use std::sync::Arc;

use ruststream::app::{Broker, StartContext};
use ruststream_pulsar::PulsarBroker;

/// A made-up token: what must never be printed.
const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.dG9rZW4.c2lnbmF0dXJl";

#[path = "support/captured_log.rs"]
mod captured_log;

use captured_log::CapturedLog;

#[tokio::test(flavor = "current_thread")]
async fn a_token_in_the_url_is_refused_and_never_printed() {
    let log = CapturedLog::default();
    let _log = log.install(tracing::Level::TRACE);
    let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
    for url in [
        format!("pulsar://{TOKEN}@127.0.0.1:6650"),
        format!("pulsar://127.0.0.1:6650?token={TOKEN}"),
        format!("pulsar+ssl://user:{TOKEN}@127.0.0.1:6651/"),
    ] {
        let broker = PulsarBroker::<()>::new(url.clone());
        let Err(error) = Box::new(broker)
            .start(Arc::new(()), StartContext::new(runtime.clone()))
            .await
        else {
            panic!("a URL with a token was accepted")
        };
        let error = error.to_string();
        assert!(!error.contains(TOKEN), "the error shows the token: {error}");
        assert!(error.contains("***"), "{error}");
        assert!(
            error.contains("PulsarBroker::with_token(..)"),
            "the error names the fix: {error}"
        );
    }
    let log = log.text();
    assert!(!log.contains(TOKEN), "the log shows the token:\n{log}");
}
