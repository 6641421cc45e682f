//! An ack-only service, run end to end by `scripts/bench` as a user runs one:
//! `ack_service run --embedded --publish orders=FILE`. Its handler decodes each order (JSON)
//! and acknowledges it. At exit it prints the heap allocations of the whole run to stderr
//! (`bench: allocations=N`); the script takes the slope between two file sizes.

use std::hint::black_box;
use std::process::ExitCode;

use ruststream_bench::heap::{Counting, Heap};
use ruststream_bench::order::Order;
use ruststream_pulsar::prelude::*;

#[global_allocator]
static GLOBAL: &Counting = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Acknowledges each order.
#[subscriber("orders")]
async fn accept(order: &Order) -> HandlerOutcome {
    black_box(order);
    HandlerOutcome::ack()
}

fn app() -> impl App<State = ()> {
    RustStream::new(AppInfo::new("ack-service", "0.0.0")).with_broker(
        PulsarBroker::new("pulsar://127.0.0.1:6650"),
        |b| {
            b.include(accept);
        },
    )
}

fn main() -> ExitCode {
    let heap = Heap::start(GLOBAL);
    let code = ruststream_runner::on_runtime::tokio(app);
    let change = heap.change();
    eprintln!(
        "bench: allocations={} reallocations={}",
        change.allocations, change.reallocations
    );
    code
}
