//! An app on the in-process Pulsar and a virtual clock, on a single-threaded tokio runtime,
//! started the way `run --embedded` starts one, without a test harness's recording.

use std::sync::Arc;

use ruststream::app::{App, RunningApp, StartContext, VirtualTime};
use ruststream::runtime::WithClock;
use ruststream::ManualClock;
use ruststream_pulsar::{InProcessPulsar, Retention};

/// A started app with its runtime and clock.
pub struct Bench {
    /// The runtime every phase is driven on: one thread, so that callgrind sees each phase's
    /// work under the function that drives it.
    pub runtime: tokio::runtime::Runtime,
    /// The started app.
    pub app: RunningApp,
    /// Its virtual time.
    pub time: VirtualTime,
}

impl Bench {
    /// Start `app` on the in-process Pulsar `run --embedded` starts, which frees a message
    /// once every subscription acknowledged it.
    pub fn start<A: App>(app: A) -> Self {
        Self::start_with(app, None)
    }

    /// Start `app` on an in-process Pulsar that keeps every message (tests' default): what
    /// a consume→ack costs without the acknowledgement's freeing.
    pub fn start_keeping_every_message<A: App>(app: A) -> Self {
        Self::start_with(
            app,
            Some(InProcessPulsar::with_retention(Retention::KeepAll)),
        )
    }

    fn start_with<A: App>(app: A, pulsar: Option<InProcessPulsar>) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a tokio runtime");
        let clock = ManualClock::new();
        let spawn = ruststream_tokio::TokioRuntime::new(runtime.handle().clone());
        let mut context =
            StartContext::new(Arc::new(WithClock::new(spawn, clock.clone()))).in_process();
        if let Some(pulsar) = pulsar {
            context = context.with(pulsar);
        }
        let app = runtime
            .block_on(app.into_parts().start(context, None))
            .unwrap_or_else(|e| panic!("the benchmark app starts: {e}"));
        Bench {
            runtime,
            app,
            // A benchmark hands over whole backlogs in one instant; none loops.
            time: VirtualTime::new(clock).max_handled_per_instant(usize::MAX),
        }
    }

    /// Handle everything that can be handled now.
    pub fn settle(&self) {
        self.runtime
            .block_on(self.time.settle(&self.app))
            .unwrap_or_else(|e| panic!("the app settles: {e}"));
    }

    /// Stop the app.
    pub fn stop(self) {
        self.runtime.block_on(self.app.stop());
    }
}
