//! The ledger service: `cargo run -p ledger -- run --embedded --publish movements=FILE`
//! stores the movements of FILE (one JSON movement a line) in the SQLite file `LEDGER_DB`
//! (default `ledger.sqlite3`), in batches of up to 100, one transaction each; without
//! `--embedded` it connects to the broker below.

use ledger::{app_on, Books, Handling};
use ruststream_pulsar::prelude::*;

#[ruststream::app]
fn app() -> impl App<State = Books> {
    let db = std::env::var_os("LEDGER_DB").unwrap_or_else(|| "ledger.sqlite3".into());
    app_on(
        PulsarBroker::new("pulsar://localhost:6650"),
        Handling::Batches,
        Some(db.into()),
    )
}
