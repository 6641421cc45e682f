//! The framework alone draining one batched backlog, for a profiler to look at: `live` runs
//! every contender in one process, so a profile of it mixes them.
//!
//! `RUSTSTREAM_BENCH_URL=pulsar://127.0.0.1:PORT drain <messages> [tokio|smol|none]` makes a
//! subscription, publishes `<messages>` JSON messages of 128 bytes batched 1,000 per entry
//! (as `live` does), then starts the framework on the runtime named and prints its process CPU
//! time per message once every message was acknowledged. With `none` it only publishes, and
//! prints the subscription's name; `drain <messages> tokio <subscription>` then drains that
//! backlog alone, for a profile without the publish in it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use cpu_time::ProcessTime;
use futures::task::AtomicWaker;
use pulsar::consumer::ConsumerOptions;
use pulsar::{Pulsar, SubType, TokioExecutor};
use ruststream::app::{App, StartContext};
use ruststream::runtime::Runtime;
use ruststream_bench::backlog::publish_backlog;
use ruststream_pulsar::prelude::*;

/// How many messages were acknowledged, and the run that waits for the last.
#[derive(Debug)]
struct Count {
    handled: AtomicU64,
    expected: u64,
    done: AtomicWaker,
}

/// Acknowledges each message.
#[subscriber("bench-drain")]
async fn ack(payload: &[u8], State(count): State<Arc<Count>>) -> HandlerOutcome {
    std::hint::black_box(payload);
    if count.handled.fetch_add(1, Ordering::AcqRel) + 1 == count.expected {
        count.done.wake();
    }
    HandlerOutcome::ack()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let messages: u64 = args
        .next()
        .and_then(|m| m.parse().ok())
        .expect("usage: drain <messages> [tokio|smol]");
    let flavor = args.next().unwrap_or_else(|| "tokio".to_owned());
    let existing = args.next();
    let url = std::env::var("RUSTSTREAM_BENCH_URL")
        .expect("RUSTSTREAM_BENCH_URL names the broker, e.g. pulsar://127.0.0.1:6650");
    let topic = "persistent://public/default/bench-drain";
    let subscription = existing
        .clone()
        .unwrap_or_else(|| format!("drain-{}", std::process::id()));
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    tokio.block_on(async {
        if existing.is_some() {
            return;
        }
        let pulsar: Pulsar<TokioExecutor> = Pulsar::builder(&url, TokioExecutor)
            .build()
            .await
            .expect("connects");
        let consumer: pulsar::Consumer<Vec<u8>, _> = pulsar
            .consumer()
            .with_topic(topic)
            .with_subscription(&subscription)
            .with_subscription_type(SubType::Shared)
            .with_options(ConsumerOptions::default())
            .build()
            .await
            .expect("subscribes");
        drop(consumer);
        publish_backlog(&pulsar, topic, messages).await;
    });
    if flavor == "none" {
        println!("published messages={messages} subscription={subscription}");
        return;
    }
    let count = Arc::new(Count {
        handled: AtomicU64::new(0),
        expected: messages,
        done: AtomicWaker::new(),
    });
    let state = count.clone();
    let app = RustStream::new(AppInfo::new("bench-drain", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(state))
        .with_broker(
            PulsarBroker::new(&url).default_subscription(&subscription),
            |b| {
                b.include(ack);
            },
        );
    let label = flavor.clone();
    let drain = async move |runtime: Arc<dyn Runtime>| {
        let (cpu, wall) = (ProcessTime::now(), Instant::now());
        let running = app
            .into_parts()
            .start(StartContext::new(runtime), None)
            .await
            .unwrap_or_else(|e| panic!("the framework connects: {e}"));
        std::future::poll_fn(|cx| {
            count.done.register(cx.waker());
            if count.handled.load(Ordering::Acquire) >= count.expected {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
        let (cpu, wall) = (cpu.elapsed(), wall.elapsed());
        running.stop().await;
        println!(
            "drain runtime={label} messages={messages} cpu_us_per_msg={:.2} msg_per_s={:.0}",
            cpu.as_secs_f64() * 1e6 / messages as f64,
            messages as f64 / wall.as_secs_f64()
        );
    };
    match flavor.as_str() {
        "smol" => {
            smol::block_on(drain(Arc::new(ruststream_smol::SmolRuntime::global())));
        }
        _ => {
            let runtime = ruststream_tokio::TokioRuntime::new(tokio.handle().clone());
            tokio.block_on(drain(Arc::new(runtime)));
        }
    }
}
