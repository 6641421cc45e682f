//! Behaviour tests written once, run on every runtime.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use futures::channel::{mpsc, oneshot};
use futures::StreamExt;
use ruststream::runtime::Runtime;

/// How many sleeps run at once in [`spawn_and_sleep`].
pub const CONCURRENT_SLEEPS: usize = 10_000;

/// The spawn and timer contract of `ruststream::runtime`, checked on one runtime:
///
/// 1. a spawned task runs;
/// 2. `sleep(d)` never wakes before `d` has passed on the runtime's own clock;
/// 3. [`CONCURRENT_SLEEPS`] concurrent sleeps, each in its own task, all fire, none early;
/// 4. a dropped sleep never wakes its task and lets go of its waker;
/// 5. a sleep reset to a later deadline does not complete before it, and one reset to an
///    earlier deadline completes (long before its first deadline would have come).
///
/// Only lower bounds on time are asserted (how late a sleep fires depends on the machine).
pub async fn spawn_and_sleep(rt: Arc<dyn Runtime>) {
    // 1. A spawned task runs, without the caller driving it.
    let (tx, rx) = oneshot::channel();
    rt.spawn(Box::pin(async move {
        tx.send(42).expect("the test is waiting for this");
    }));
    assert_eq!(rx.await, Ok(42), "the spawned task never ran");

    // 2. Never before the deadline.
    for d in [
        Duration::ZERO,
        Duration::from_millis(1),
        Duration::from_millis(7),
    ] {
        let start = rt.now();
        rt.sleep(d).await;
        let woke = rt.now();
        assert!(
            woke >= start + d,
            "sleep({d:?}) from {start:?} woke at {woke:?}, before its deadline"
        );
    }

    // 3. Many at once, each in its own task.
    let early = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = mpsc::unbounded();
    for i in 0..CONCURRENT_SLEEPS {
        let rt2 = rt.clone();
        let early = early.clone();
        let done_tx = done_tx.clone();
        let d = Duration::from_micros(500 * (1 + (i as u64 % 40)));
        rt.spawn(Box::pin(async move {
            let start = rt2.now();
            rt2.sleep(d).await;
            if rt2.now() < start + d {
                early.fetch_add(1, Ordering::SeqCst);
            }
            done_tx.unbounded_send(()).expect("the test is waiting");
        }));
    }
    drop(done_tx);
    let fired = done_rx.count().await;
    assert_eq!(fired, CONCURRENT_SLEEPS, "not every sleep fired");
    assert_eq!(early.load(Ordering::SeqCst), 0, "some sleeps fired early");

    // 4. A dropped sleep never fires: poll it once so that the timer holds a waker, drop it,
    // let its deadline pass, and check that the waker was neither woken nor kept.
    let woken = Arc::new(WakeCounter::default());
    let mut dropped = rt.sleep(Duration::from_millis(50));
    {
        let waker = Waker::from(woken.clone());
        assert!(
            dropped
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending(),
            "a 50 ms sleep was ready when polled at once"
        );
    }
    drop(dropped);
    rt.sleep(Duration::from_millis(100)).await;
    assert_eq!(
        woken.0.load(Ordering::SeqCst),
        0,
        "a sleep woke its task after it was dropped"
    );
    assert_eq!(
        Arc::strong_count(&woken),
        1,
        "the timer still holds the waker of a dropped sleep"
    );

    // 5. Reset in place: later, then earlier.
    let start = rt.now();
    let mut sleep = rt.sleep(Duration::from_millis(2));
    rt.reset(&mut sleep, start + Duration::from_millis(20));
    sleep.as_mut().await;
    let woke = rt.now();
    assert!(
        woke >= start + Duration::from_millis(20),
        "a sleep reset from 2 ms to 20 ms woke at {:?}",
        woke.saturating_duration_since(start)
    );
    // Reset from an hour away to 1 ms: on a real clock an ignored reset would not complete
    // within the test; on a paused or virtual one it would complete an hour later.
    let start = rt.now();
    rt.reset(&mut sleep, start + Duration::from_secs(3600));
    rt.reset(&mut sleep, start + Duration::from_millis(1));
    sleep.await;
    let woke = rt.now();
    assert!(woke >= start + Duration::from_millis(1));
    assert!(
        woke < start + Duration::from_secs(3600),
        "a sleep reset to 1 ms woke at its earlier deadline, an hour away"
    );
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct WakeCounter(AtomicUsize);

impl Wake for WakeCounter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
