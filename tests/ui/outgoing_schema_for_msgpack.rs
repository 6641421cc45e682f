use ruststream::Outgoing;

#[derive(serde::Serialize, Outgoing)]
#[outgoing(name = "readings", codec = "msgpack", schema = "json")]
struct Reading {
    value: f64,
}

fn main() {}
