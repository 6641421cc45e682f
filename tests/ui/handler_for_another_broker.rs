use ruststream_pulsar::prelude::*;

/// Another broker's descriptor.
struct KafkaTopic;

impl KafkaTopic {
    fn new(_topic: &str) -> Self {
        KafkaTopic
    }
}

#[subscriber(KafkaTopic::new("refunds"))]
async fn process(_refund: &u64) -> HandlerOutcome {
    HandlerOutcome::ack()
}

fn app() -> impl App<State = ()> {
    RustStream::new(AppInfo::new("refunds", "0.1.0")).with_broker(
        PulsarBroker::new("pulsar://localhost:6650"),
        |b| {
            b.include(process);
        },
    )
}

fn main() {
    let _ = app();
}
