//! The behaviour cases of `tests/src/cases/` on the in-process Pulsar, one test per case and
//! runtime, named like the live ones: `in-process/smol/retry_after`. `tests/live.rs` runs the
//! same bodies on real brokers.
//!
//! Each case runs on a thread named after its test, so a panic's report says which case and
//! runtime it came from even among the output of the others; a failed case's summary gives
//! where it panicked and the message. `--list` and name filters work as with libtest:
//! `cargo test -p ruststream-tests --test cases_in_process -- tokio/retry_after`.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use ruststream::runtime::Spawn;
use ruststream_tests::cases::{Case, ALL};
use ruststream_tests::harness::Env;

/// The runtimes every case runs on, as the test names spell them.
const RUNTIMES: [&str; 3] = ["tokio", "async-std", "smol"];

thread_local! {
    /// The last panic on this thread: where, and its message.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Keep each panic's location and message for the failure summary, and report it as usual.
fn record_panics() {
    let report = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        LAST_PANIC.with(|last| *last.borrow_mut() = Some(info.to_string()));
        report(info);
    }));
}

/// Run `case` on `runtime`, the way the in-process tests always have: tokio with two worker
/// threads, async-std's and smol's global executors.
fn on_runtime(runtime: &str, case: Case) {
    let env = |spawn: Arc<dyn Spawn>| Env::InProcess { spawn };
    match runtime {
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let spawn = ruststream_tokio::TokioRuntime::new(rt.handle().clone());
            rt.block_on(case(env(Arc::new(spawn))));
        }
        "async-std" => async_std::task::block_on(case(env(Arc::new(
            ruststream_async_std::AsyncStdRuntime::new(),
        )))),
        "smol" => smol::block_on(case(env(Arc::new(ruststream_smol::SmolRuntime::global())))),
        other => panic!("unknown runtime {other}"),
    }
}

/// One trial: the case on its own thread, named after the test; a panic is the failure, with
/// where it happened.
fn run_case(test: String, runtime: &'static str, case: Case) -> Result<(), Failed> {
    let outcome = std::thread::Builder::new()
        .name(test)
        .spawn(move || {
            LAST_PANIC.with(|last| last.borrow_mut().take());
            panic::catch_unwind(AssertUnwindSafe(|| on_runtime(runtime, case))).map_err(|payload| {
                LAST_PANIC
                    .with(|last| last.borrow_mut().take())
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panicked".to_owned())
            })
        })
        .map_err(|e| Failed::from(format!("could not start the case's thread: {e}")))?
        .join()
        .map_err(|_| Failed::from("the case's thread died"))?;
    outcome.map_err(Failed::from)
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    record_panics();
    let mut trials = Vec::new();
    for runtime in RUNTIMES {
        for &(name, _, case) in ALL {
            let test = format!("in-process/{runtime}/{name}");
            trials.push(Trial::test(test.clone(), move || {
                run_case(test, runtime, case)
            }));
        }
    }
    if libtest_mimic::run(&args, trials).has_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
