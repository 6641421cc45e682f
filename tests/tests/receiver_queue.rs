//! The receiver queue: how many received messages a consumer keeps ready for its handlers,
//! the concurrency unless the subscription or its mount says otherwise. Seen in process as
//! what is in flight while every handler is stuck: the running handlers plus the queue.
//!
//! On tokio's paused clock, so stopping with stuck handlers (the grace period) costs no time.

use ruststream::message::Message;
use std::sync::Arc;

use ruststream::app::{App, RunningApp, StartContext};
use ruststream_pulsar::prelude::*;

/// Never finishes.
#[subscriber(PulsarSubscription::new("jobs-queued", "queued").concurrency(2))]
async fn stuck(_payload: &[u8]) -> HandlerOutcome {
    futures::future::pending::<()>().await;
    HandlerOutcome::ack()
}

/// Never finishes; the subscription asks for a queue of 10.
#[subscriber(PulsarSubscription::new("jobs-queued-long", "queued").concurrency(2).receiver_queue(10))]
async fn stuck_long_queue(_payload: &[u8]) -> HandlerOutcome {
    futures::future::pending::<()>().await;
    HandlerOutcome::ack()
}

/// How many turns the app's tasks get to take deliveries (the clock standing still).
const TURNS: usize = 100_000;

/// What is in flight once the app has taken what it will: `expected`, waited for while the
/// app's tasks run, then as many turns again for it to take more than it should.
async fn in_flight_with(
    topic: &str,
    expected: usize,
    mount: impl FnOnce(&mut PulsarBroker<()>),
) -> usize {
    let parts = RustStream::new(AppInfo::new("queue", "0.0.0"))
        .with_broker(PulsarBroker::new("pulsar://127.0.0.1:6650"), mount)
        .into_parts();
    let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
    let running: RunningApp = parts
        .start(StartContext::new(runtime).in_process(), None)
        .await
        .expect("starts");
    for n in 0..50 {
        running
            .publish(Message::new(topic.to_owned(), format!("{n}").into_bytes()))
            .await
            .expect("published");
    }
    let mut turns = 0;
    while running.brokers()[0].in_flight() < expected && turns < TURNS {
        turns += 1;
        ruststream::runtime::yield_now().await;
    }
    for _ in 0..TURNS {
        ruststream::runtime::yield_now().await;
    }
    let in_flight = running.brokers()[0].in_flight();
    running.stop().await;
    in_flight
}

#[tokio::test(start_paused = true)]
async fn by_default_the_queue_is_as_long_as_the_concurrency() {
    // Two handlers running, two messages queued.
    assert_eq!(
        in_flight_with("jobs-queued", 4, |b| {
            b.include(stuck);
        })
        .await,
        4
    );
}

#[tokio::test(start_paused = true)]
async fn a_subscription_can_ask_for_a_longer_queue() {
    // Ten asked for at once; two taken by the handlers; the queue is refilled only once it
    // falls below half (as pulsar-rs's consumer engine refills its permits).
    assert_eq!(
        in_flight_with("jobs-queued-long", 10, |b| {
            b.include(stuck_long_queue);
        })
        .await,
        10
    );
}

#[tokio::test(start_paused = true)]
async fn the_mount_overrides_the_subscription() {
    assert_eq!(
        in_flight_with("jobs-queued", 20, |b| {
            b.include(stuck).receiver_queue(20);
        })
        .await,
        20
    );
}
