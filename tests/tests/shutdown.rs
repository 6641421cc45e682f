//! Graceful shutdown: running handlers get the grace period, then are cancelled.
//!
//! On tokio's paused clock, which moves only when every task waits, so the 30 s grace costs no
//! real time.

use std::sync::Arc;
use std::time::Duration;

use ruststream::app::{App, StartContext};
use ruststream::{HandlerOutcome, Message};
use ruststream_pulsar::DEFAULT_SHUTDOWN_GRACE;
use ruststream_tests::scenario::{app, gated, ret, Plan, Script};

/// How many turns the app's tasks get to start the handler (the clock standing still).
const TURNS: usize = 100_000;

async fn start_gated(script: Arc<Script>) -> ruststream::app::RunningApp {
    let parts = app(|b| {
        b.include(gated);
    })
    .into_parts();
    let runtime = Arc::new(ruststream_tokio::TokioRuntime::current());
    let running = parts
        .start(
            StartContext::new(runtime).in_process(),
            Some(Plan::new(script.clone())),
        )
        .await
        .expect("starts");
    running
        .publish(Message::new("jobs-gate", b"{\"id\":1}".to_vec()))
        .await
        .expect("published");
    // Let the driver take the delivery and start the handler, until it waits at its gate.
    let mut turns = 0;
    while !script.gate_taken() {
        turns += 1;
        assert!(turns < TURNS, "the handler never reached its gate");
        ruststream::runtime::yield_now().await;
    }
    assert_eq!(
        running.brokers()[0].in_flight(),
        1,
        "the handler is running"
    );
    running
}

#[tokio::test(start_paused = true)]
async fn a_stuck_handler_is_cancelled_after_the_grace_period() {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let gate = script.with_gate();
    let running = start_gated(script).await;
    let stopping_at = tokio::time::Instant::now();
    running.stop().await;
    let took = stopping_at.elapsed();
    assert!(
        took >= DEFAULT_SHUTDOWN_GRACE,
        "stopped after {took:?}, before the grace period"
    );
    assert!(
        took < DEFAULT_SHUTDOWN_GRACE + Duration::from_secs(1),
        "stopped after {took:?}"
    );
    drop(gate);
}

#[tokio::test(start_paused = true)]
async fn a_handler_finishing_within_the_grace_period_is_waited_for() {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let gate = script.with_gate();
    let running = start_gated(script).await;
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let _ = gate.send(());
    });
    let stopping_at = tokio::time::Instant::now();
    running.stop().await;
    let took = stopping_at.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < DEFAULT_SHUTDOWN_GRACE,
        "stopped after {took:?}: it should wait for the handler, and only for it"
    );
}
