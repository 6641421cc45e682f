// A batch handler takes the parts of each message from `Batch<'_>`, not as parameters.
use ruststream::params::MessageKey;
use ruststream_pulsar::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reading {
    value: f64,
}

#[subscriber("readings")]
async fn aggregate(readings: &[Reading], key: MessageKey) -> HandlerOutcome {
    let _ = (readings.len(), key);
    HandlerOutcome::ack()
}

fn main() {
    let _app = RustStream::new(AppInfo::new("ui", "0.1.0")).with_broker(
        PulsarBroker::new("pulsar://localhost:6650"),
        |b| {
            b.include(aggregate);
        },
    );
}
