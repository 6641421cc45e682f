//! Many concurrent `retry_after` waits on the virtual clock: `waits <messages>`.
//!
//! Every message is handled once with `retry_after(d)`, `d` a different whole number of
//! milliseconds for each (a permutation of 1 ms ..= `messages` ms), on a Shared subscription
//! with a one-hour ack timeout; its redelivery is acknowledged. Prints how long each phase took
//! (wall clock), the heap bytes retained per waiting delivery (from "all published" to "all
//! delivered and waiting": what delivering and waiting hold, not the stored message), and
//! whether the redeliveries came in deadline order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ruststream::message::Message;
use ruststream_bench::heap::{Counting, Heap};
use ruststream_bench::in_process::Bench;
use ruststream_pulsar::prelude::*;

#[global_allocator]
static GLOBAL: &Counting = &stats_alloc::INSTRUMENTED_SYSTEM;

/// The ids acknowledged, in the order their redeliveries were handled.
#[derive(Debug, Default)]
struct Fired {
    ids: Mutex<Vec<u64>>,
    messages: u64,
}

impl Fired {
    /// The wait of message `id`: a permutation of 1..=messages ms.
    fn delay(&self, id: u64) -> Duration {
        Duration::from_millis(id.wrapping_mul(48_271) % self.messages + 1)
    }
}

/// Waits once, for its own delay, then acknowledges.
#[subscriber(PulsarSubscription::new("bench-waits", "waits").ack_timeout(Duration::from_secs(3600)))]
async fn wait(
    payload: &[u8],
    redelivery: RedeliveryCount,
    State(fired): State<Arc<Fired>>,
) -> HandlerOutcome {
    let id: u64 = std::str::from_utf8(payload)
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("the payload is an id");
    if redelivery.0.unwrap_or(0) == 0 {
        HandlerOutcome::retry_after(fired.delay(id))
    } else {
        fired.ids.lock().unwrap().push(id);
        HandlerOutcome::ack()
    }
}

fn main() {
    let messages: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("usage: waits <messages>");
    let fired = Arc::new(Fired {
        ids: Mutex::default(),
        messages,
    });
    let state = fired.clone();
    let app = RustStream::new(AppInfo::new("bench-waits", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(state))
        .with_broker(PulsarBroker::new("pulsar://127.0.0.1:6650"), |b| {
            b.include(wait);
        });
    let bench = Bench::start(app);

    let started = Instant::now();
    bench.runtime.block_on(async {
        for id in 0..messages {
            bench
                .app
                .publish(Message::new("bench-waits", id.to_string().into_bytes()))
                .await
                .expect("published");
        }
    });
    let published = started.elapsed();

    let heap = Heap::start(GLOBAL);
    let started = Instant::now();
    bench.settle();
    let delivered = started.elapsed();
    let waiting = heap.change();

    let started = Instant::now();
    bench
        .runtime
        .block_on(bench.time.run_until_quiet(&bench.app))
        .unwrap_or_else(|e| panic!("the waits end: {e}"));
    let fired_in = started.elapsed();
    let handled = bench.app.handled();
    bench.stop();

    let ids = fired.ids.lock().unwrap();
    let delays: Vec<Duration> = ids.iter().map(|&id| fired.delay(id)).collect();
    let out_of_order = delays.windows(2).filter(|w| w[1] < w[0]).count();
    println!("messages={messages}");
    println!("handled={handled}");
    println!("acknowledged={}", ids.len());
    println!("publish_seconds={:.3}", published.as_secs_f64());
    println!("deliver_and_wait_seconds={:.3}", delivered.as_secs_f64());
    println!("fire_all_seconds={:.3}", fired_in.as_secs_f64());
    println!(
        "total_process_seconds={:.3}",
        (delivered + fired_in).as_secs_f64()
    );
    println!(
        "heap_bytes_per_waiting_delivery={:.1}",
        waiting.retained_per(messages as usize)
    );
    println!("fired_out_of_deadline_order={out_of_order}");
}
