//! Short topic names resolve in the broker's namespace on the in-process transport as they do
//! on a server: subscribing, publishing from a handler, and dead-lettering.

use ruststream::message::Message;
use std::num::NonZeroU32;

use ruststream::{AppInfo, HandlerOutcome, RustStream};
use ruststream_pulsar::testing::TestApp;
use ruststream_pulsar::PulsarBroker;
use ruststream_tests::scenario::{forwarder, outbox, ret, shared, Job, Plan, Script};

const NAMESPACE: &str = "acme/prod";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_names_resolve_in_the_broker_namespace_in_process() {
    let script = Script::always(ret(HandlerOutcome::retry()));
    let app = RustStream::new(AppInfo::new("namespaced", "0.0.0"))
        .on_startup(async move |()| Ok::<_, std::convert::Infallible>(Plan::new(script)))
        .with_broker(
            PulsarBroker::new("pulsar://localhost:6650").namespace(NAMESPACE),
            |b| {
                b.include(forwarder);
                b.include(outbox);
                b.include(shared)
                    .max_attempts(NonZeroU32::new(2).expect("2 > 0"))
                    .dead_letter("jobs-dlq");
            },
        );
    let tb = TestApp::start(app).await.expect("starts");
    // The handlers subscribed in the namespace: a message there reaches them.
    tb.publish(Message::json("persistent://acme/prod/jobs-fwd", &Job { id: 7 }).unwrap())
        .await
        .expect("published");
    // `forwarder` published `Forwarded` to the short name `jobs-out`.
    let forwarded = tb.topic("persistent://acme/prod/jobs-out");
    assert_eq!(forwarded.len(), 1, "{forwarded:?}");
    assert!(
        tb.topic("persistent://public/default/jobs-out").is_empty(),
        "nothing reaches the default namespace"
    );
    assert_eq!(tb.calls_of("outbox").len(), 1);
    // A message out of attempts goes to the dead-letter topic in the namespace.
    tb.publish(Message::json("persistent://acme/prod/jobs", &Job { id: 8 }).unwrap())
        .await
        .expect("published");
    tb.advance(ruststream_tests::scenario::ACK_TIMEOUT * 2)
        .await
        .expect("settles");
    assert_eq!(tb.topic("persistent://acme/prod/jobs-dlq").len(), 1);
    assert!(tb.topic("persistent://public/default/jobs-dlq").is_empty());
    tb.stop().await;
}
