use ruststream_pulsar::prelude::*;

#[subscriber("refunds")]
async fn process(_refund: &u64) -> bool {
    true
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
