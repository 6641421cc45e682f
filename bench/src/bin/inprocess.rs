//! In process, per message: heap allocations of a publish and of a consume→ack, printed here,
//! and the two phases as functions of their own (`phase_publish`, `phase_consume`), whose
//! instructions `scripts/bench` reads from callgrind.
//!
//! `inprocess <json|raw|json-batch> <messages> [keep-all]`: `json` handlers decode the order;
//! `raw` ones take `&[u8]`; `json-batch` is a batch handler of 100 (`&[Order]`), which decodes
//! every order and acknowledges the batch. With `keep-all` the in-process Pulsar keeps every message instead of freeing
//! it once acknowledged. Prints `key=value` lines.

use std::hint::black_box;

use ruststream::message::Message;
use ruststream_bench::heap::{Counting, Heap};
use ruststream_bench::in_process::Bench;
use ruststream_bench::order::Order;
use ruststream_pulsar::prelude::*;

#[global_allocator]
static GLOBAL: &Counting = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Decodes the order and acknowledges it.
#[subscriber("bench-json")]
async fn json(order: &Order) -> HandlerOutcome {
    black_box(order);
    HandlerOutcome::ack()
}

/// Acknowledges the bytes as they came.
#[subscriber("bench-raw")]
async fn raw(payload: &[u8]) -> HandlerOutcome {
    black_box(payload);
    HandlerOutcome::ack()
}

/// Decodes 100 orders at a time and acknowledges them all.
#[subscriber("bench-json-batch")]
async fn json_batch(orders: &[Order]) -> HandlerOutcome {
    black_box(orders);
    HandlerOutcome::ack()
}

/// Which handler the benchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Json,
    Raw,
    JsonBatch,
}

fn app(mode: Mode) -> impl App<State = ()> {
    RustStream::new(AppInfo::new("bench", "0.0.0")).with_broker(
        PulsarBroker::new("pulsar://127.0.0.1:6650"),
        move |b| {
            match mode {
                Mode::Json => b.include(json),
                Mode::Raw => b.include(raw),
                Mode::JsonBatch => b.include(json_batch.batch(ruststream::nonzero!(100))),
            };
        },
    )
}

/// Publish every record, on the app's in-process Pulsar; nothing is consumed meanwhile (the
/// runtime has one thread and publishing never waits).
#[inline(never)]
fn phase_publish(bench: &Bench, records: Vec<Message>) {
    bench.runtime.block_on(async {
        for record in records {
            bench.app.publish(record).await.expect("published");
        }
    });
}

/// Handle and acknowledge everything published.
#[inline(never)]
fn phase_consume(bench: &Bench) {
    bench.settle();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: inprocess <json|raw|json-batch> <messages> [keep-all]";
    let mode = match args.next().as_deref() {
        Some("json") => Mode::Json,
        Some("raw") => Mode::Raw,
        Some("json-batch") => Mode::JsonBatch,
        _ => panic!("{usage}"),
    };
    let messages: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{usage}"));
    let keep_all = match args.next().as_deref() {
        None => false,
        Some("keep-all") => true,
        Some(_) => panic!("{usage}"),
    };
    let topic = match mode {
        Mode::Json => "bench-json",
        Mode::Raw => "bench-raw",
        Mode::JsonBatch => "bench-json-batch",
    };
    let bench = if keep_all {
        Bench::start_keeping_every_message(app(mode))
    } else {
        Bench::start(app(mode))
    };

    // Warm up: first-use allocations (the topic, the subscription's queues) are not per
    // message.
    let warm: Vec<Message> = (0..500)
        .map(|n| Message::new(topic, Order::json(n)))
        .collect();
    phase_publish(&bench, warm);
    phase_consume(&bench);

    let records: Vec<Message> = (0..messages)
        .map(|n| Message::new(topic, Order::json(1000 + n)))
        .collect();
    let heap = Heap::start(GLOBAL);
    phase_publish(&bench, records);
    let published = heap.change();
    let heap = Heap::start(GLOBAL);
    phase_consume(&bench);
    let consumed = heap.change();
    let handled = bench.app.handled();
    bench.stop();

    let n = messages as usize;
    println!("mode={mode:?}");
    println!("messages={messages}");
    println!("handled={handled}");
    println!(
        "publish_allocations_per_message={:.2}",
        published.allocations_per(n)
    );
    println!(
        "publish_reallocations_per_message={:.2}",
        published.reallocations as f64 / n as f64
    );
    println!(
        "consume_allocations_per_message={:.2}",
        consumed.allocations_per(n)
    );
    println!(
        "consume_reallocations_per_message={:.2}",
        consumed.reallocations as f64 / n as f64
    );
}
