//! A token written into the broker URL is refused before anything connects, and neither the
//! error nor the log shows it.

use std::io::Write;
use std::sync::{Arc, Mutex};

use ruststream::app::{Broker, StartContext};
use ruststream_pulsar::PulsarBroker;
use tracing_subscriber::fmt::MakeWriter;

/// A made-up token: what must never be printed.
const TOKEN: &str = "eyJhbGciOiJIUzI1NiJ9.dG9rZW4.c2lnbmF0dXJl";

/// Log lines kept in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> MakeWriter<'w> for Captured {
    type Writer = Captured;

    fn make_writer(&'w self) -> Captured {
        self.clone()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_token_in_the_url_is_refused_and_never_printed() {
    let log = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);
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
    let log = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert!(!log.contains(TOKEN), "the log shows the token:\n{log}");
}
