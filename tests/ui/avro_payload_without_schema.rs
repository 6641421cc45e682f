use ruststream::codec::Avro;
use ruststream_pulsar::prelude::*;

#[derive(serde::Deserialize)]
struct Reading {
    value: f64,
}

#[subscriber("readings")]
async fn record(reading: &Avro<Reading>) -> HandlerOutcome {
    let _ = reading.value;
    HandlerOutcome::ack()
}

fn main() {}
