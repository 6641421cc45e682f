//! The runtime contract (spawn, sleep) checked on every runtime with the same test body.

use std::sync::Arc;

use ruststream_tests::{behaviour, ManualRuntime};

#[tokio::test(start_paused = true)]
async fn spawn_and_sleep_on_tokio_with_paused_clock() {
    let rt = ruststream_tokio::TokioRuntime::current();
    behaviour::spawn_and_sleep(Arc::new(rt)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_and_sleep_on_tokio_multi_thread() {
    let rt = ruststream_tokio::TokioRuntime::current();
    behaviour::spawn_and_sleep(Arc::new(rt)).await;
}

#[async_std::test]
async fn spawn_and_sleep_on_async_std() {
    let rt = ruststream_async_std::AsyncStdRuntime::new();
    behaviour::spawn_and_sleep(Arc::new(rt)).await;
}

#[test]
fn spawn_and_sleep_on_smol() {
    smol::block_on(behaviour::spawn_and_sleep(Arc::new(
        ruststream_smol::SmolRuntime::global(),
    )));
}

#[test]
fn spawn_and_sleep_on_smol_with_own_executor() {
    let executor = Arc::new(smol::Executor::new());
    let rt = ruststream_smol::SmolRuntime::with_executor(executor.clone());
    smol::block_on(executor.run(behaviour::spawn_and_sleep(Arc::new(rt))));
}

#[test]
fn spawn_and_sleep_on_the_manual_clock() {
    let rt = ManualRuntime::new();
    let dyn_rt = Arc::new(rt.clone());
    rt.block_on(behaviour::spawn_and_sleep(dyn_rt));
    // Time moved only by the sleeps: the last one ended at exactly its deadline.
    assert_eq!(rt.clock().pending(), 0, "no sleep left behind");
}
