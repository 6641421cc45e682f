use ruststream_pulsar::prelude::*;

#[subscriber("refunds")]
fn process(_id: &u64) -> HandlerOutcome {
    HandlerOutcome::ack()
}

fn main() {}
