use std::sync::Arc;

use ruststream_pulsar::prelude::*;

struct Processor;

#[subscriber("refunds")]
async fn process(_id: &u64, State(_p): State<Arc<Processor>>) -> HandlerOutcome {
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
