use ruststream::Outgoing;

#[derive(serde::Serialize, Outgoing)]
#[outgoing(name = "audit-log", compression = "gzip")]
struct AuditLine {
    text: String,
}

fn main() {}
