use ruststream_pulsar::prelude::*;

struct Refund {
    id: u64,
}

#[subscriber("refunds")]
async fn process(refund: &Refund) -> HandlerOutcome {
    let _ = refund.id;
    HandlerOutcome::ack()
}

fn main() {}
