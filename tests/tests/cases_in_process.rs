//! The shared behaviour cases (`tests/src/cases.rs`) on the in-process Pulsar, on every
//! runtime. `tests/live.rs` runs the same bodies on real brokers.

use std::sync::Arc;

use ruststream::runtime::Spawn;
use ruststream_tests::cases::ALL;
use ruststream_tests::harness::Env;

async fn every_case(spawn: Arc<dyn Spawn>) {
    for (name, _, case) in ALL {
        eprintln!("in process: {name}");
        case(Env::InProcess {
            spawn: spawn.clone(),
        })
        .await;
    }
}

ruststream_tests::on_every_runtime!(every_case);
