use ruststream_pulsar::prelude::*;

#[subscriber("refunds")]
async fn process(bytes: Vec<u8>) -> HandlerOutcome {
    let _ = bytes;
    HandlerOutcome::ack()
}

fn main() {}
