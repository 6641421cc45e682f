//! An ack-only service, run end to end by `scripts/bench` as a user runs one:
//! `ack_service run --embedded --publish orders=FILE`. Its handler decodes each order (JSON)
//! and acknowledges it. At exit it prints the heap allocations of the whole run to stderr
//! (`bench: allocations=N`); the script takes the slope between two file sizes. It also prints
//! the process's peak resident set (`bench: vm_hwm_kib=N`, `VmHWM` of `/proc/self/status`)
//! and, with `ACK_SERVICE_PEAK_HEAP=1` in its environment, the peak of the bytes held on the
//! heap (`bench: peak_heap_bytes=N`), sampled every millisecond by a thread of its own (off by
//! default: the thread would add to the instructions the script counts).

use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    let peak = std::env::var_os("ACK_SERVICE_PEAK_HEAP").map(|_| PeakHeap::start());
    let code = ruststream_runner::on_runtime::tokio(app);
    let change = heap.change();
    eprintln!(
        "bench: allocations={} reallocations={}",
        change.allocations, change.reallocations
    );
    if let Some(peak) = peak {
        eprintln!("bench: peak_heap_bytes={}", peak.stop());
    }
    match vm_hwm_kib() {
        Some(kib) => eprintln!("bench: vm_hwm_kib={kib}"),
        None => eprintln!("bench: no VmHWM in /proc/self/status"),
    }
    code
}

/// The bytes the heap holds now: allocated minus freed since the process started (a
/// reallocation's growth counts as allocated, its shrinking as freed).
fn heap_bytes() -> usize {
    let stats = GLOBAL.stats();
    stats
        .bytes_allocated
        .saturating_sub(stats.bytes_deallocated)
}

/// The most bytes held on the heap, sampled every millisecond by a thread (a global allocator
/// that tracks its peak itself needs unsafe code, which the workspace forbids).
struct PeakHeap {
    stop: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<usize>,
}

impl PeakHeap {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let sampler = std::thread::spawn(move || {
            let mut peak = heap_bytes();
            while !stopped.load(Ordering::Relaxed) {
                peak = peak.max(heap_bytes());
                std::thread::sleep(Duration::from_millis(1));
            }
            peak.max(heap_bytes())
        });
        PeakHeap { stop, sampler }
    }

    fn stop(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.sampler.join().unwrap_or(0)
    }
}

/// The process's peak resident set in KiB (`VmHWM`), if `/proc` has it.
fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
