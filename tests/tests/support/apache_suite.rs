//! The main of a live test binary whose cases run one at a time on one Apache Pulsar
//! standalone, started here on 127.0.0.1 and stopped after the last case, each case in a
//! namespace of its own. A broker that cannot be started is a failed test, never a skip.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use ruststream_test_brokers::{ApacheStandalone, APACHE_PULSAR_VERSION};

/// Run `cases` (name, case) one at a time, each as `run(case, broker, namespace)` in a fresh
/// namespace `public/{prefix}-{n}`; the test binary's exit code.
pub(crate) fn run_one_at_a_time<C: Copy + Send + 'static>(
    prefix: &'static str,
    cases: &'static [(&'static str, C)],
    run: fn(C, &ApacheStandalone, String) -> Result<(), Failed>,
) -> ExitCode {
    static NEXT_NAMESPACE: AtomicU64 = AtomicU64::new(0);
    let mut args = Arguments::from_args();
    // One case at a time: a case may restart the broker the others use or run several
    // service processes of its own.
    args.test_threads = Some(1);
    let apache = if args.list {
        None
    } else {
        Some(ApacheStandalone::start().map(Arc::new))
    };
    let label = format!("apache-pulsar-{APACHE_PULSAR_VERSION}");
    let mut trials = Vec::new();
    if let Some(Err(e)) = &apache {
        let message = e.to_string();
        trials.push(Trial::test("broker-start/Apache Pulsar", move || {
            Err(message.clone().into())
        }));
    }
    let apache = apache.and_then(Result::ok);
    for &(name, case) in cases {
        let apache = apache.clone();
        trials.push(Trial::test(format!("{label}/{name}"), move || {
            let apache = apache.ok_or_else(|| Failed::from("no broker"))?;
            let n = NEXT_NAMESPACE.fetch_add(1, Ordering::SeqCst);
            let ns = format!("public/{prefix}-{n}");
            apache
                .create_namespace(&ns)
                .map_err(|e| Failed::from(e.to_string()))?;
            run(case, &apache, ns)
        }));
    }
    let conclusion = libtest_mimic::run(&args, trials);
    drop(apache);
    if conclusion.has_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
