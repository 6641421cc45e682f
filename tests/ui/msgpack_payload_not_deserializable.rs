use ruststream::codec::MsgPack;
use ruststream_pulsar::prelude::*;

struct Reading {
    value: f64,
}

#[subscriber("readings")]
async fn record(reading: &MsgPack<Reading>) -> HandlerOutcome {
    let _ = reading.value;
    HandlerOutcome::ack()
}

fn main() {}
