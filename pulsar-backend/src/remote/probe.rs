//! Whether the server answers: what the broker's readiness reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::{select, Either};
use pulsar::{Executor, Pulsar};
use ruststream::runtime::Runtime;

/// How often the server is asked, and how long an answer may take before it counts as none.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(2);

/// The last answer of a task that looks a topic up on the server every [`PROBE_EVERY`]: a
/// lookup needs the client's connection to the broker, so it fails while the broker is down or
/// unreachable, and succeeds again once pulsar-rs has reconnected.
#[derive(Clone)]
pub(crate) struct Probe {
    answered: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
}

impl Probe {
    /// Start probing `topic` on `runtime`; ready at first (the app has just connected).
    pub(crate) fn start<Exe: Executor>(
        pulsar: Pulsar<Exe>,
        topic: String,
        runtime: Arc<dyn Runtime>,
    ) -> Self {
        let probe = Probe {
            answered: Arc::new(AtomicBool::new(true)),
            stopped: Arc::new(AtomicBool::new(false)),
        };
        let me = probe.clone();
        let timer = runtime.clone();
        runtime.spawn(Box::pin(async move {
            while !me.stopped.load(Ordering::SeqCst) {
                timer.sleep(PROBE_EVERY).await;
                let lookup = Box::pin(pulsar.lookup_topic(topic.clone()));
                let answered = match select(lookup, timer.sleep(PROBE_EVERY)).await {
                    // A broker that refuses the lookup to the role answers all the same.
                    Either::Left((result, _)) => match result {
                        Ok(_) => true,
                        Err(e) => super::authorization::is_refused(&e),
                    },
                    Either::Right(_) => false,
                };
                if answered != me.answered.swap(answered, Ordering::SeqCst) {
                    if answered {
                        tracing::info!(%topic, "the Pulsar broker answers again: ready");
                    } else {
                        tracing::warn!(%topic, "the Pulsar broker does not answer: not ready");
                    }
                }
            }
        }));
        probe
    }

    /// Whether the last lookup was answered in time.
    pub(crate) fn answered(&self) -> bool {
        self.answered.load(Ordering::SeqCst)
    }

    /// Stop probing (at the next round).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}
