//! `start_global_executor` starts async-std's executor on one thread when nothing configures
//! it. The only test in this file: the executor is global to the process.

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

#[test]
fn the_global_executor_runs_one_thread_unless_configured() {
    // Whatever the environment says, this test checks the default. The edition-2021
    // `remove_var` is safe; nothing else in this process reads the environment meanwhile.
    std::env::remove_var(ruststream_async_std::THREAD_COUNT_VAR);
    ruststream_async_std::start_global_executor();

    // The first task blocks its thread until the second one sends. On one executor thread the
    // second can only run once the first gave up waiting; on two it would send at once.
    let (sender, receiver) = channel::<()>();
    let first = async_std::task::spawn(async move {
        let thread = std::thread::current().name().map(str::to_owned);
        (receiver.recv_timeout(Duration::from_millis(500)), thread)
    });
    let second = async_std::task::spawn(async move {
        let _ = sender.send(());
    });
    let (received, thread) = async_std::task::block_on(first);
    async_std::task::block_on(second);

    assert_eq!(
        received,
        Err(RecvTimeoutError::Timeout),
        "the second task ran while the first blocked its thread: the executor has more than \
         one thread"
    );
    assert_eq!(thread.as_deref(), Some("async-std/runtime"));
}
