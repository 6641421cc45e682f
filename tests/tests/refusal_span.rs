//! A refused outcome is logged inside the delivery's span: the error line names its topic and
//! message id. (Its own test binary: it installs the process-wide tracing subscriber.)

use ruststream::message::Message;

use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::TestApp;
use ruststream_tests::captured_log::CapturedLog;
use ruststream_tests::scenario::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refusal_names_the_topic_and_message_id() {
    let captured = CapturedLog::default();
    captured.install("info");
    let tb = TestApp::with_state(
        app(|b| {
            b.include(shared);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::retry_after(
            ACK_TIMEOUT,
        )))),
    )
    .await
    .unwrap();
    tb.publish(Message::json("jobs", &Job { id: 1 }).unwrap())
        .await
        .unwrap();
    tb.stop().await;
    let log = captured.take();
    let refusal = log
        .lines()
        .find(|l| l.contains("outcome refused"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{log}"));
    assert!(refusal.contains("ERROR"), "{refusal}");
    assert!(
        refusal.contains("delivery{")
            && refusal.contains("topic=persistent://public/default/jobs")
            && refusal.contains("message_id=1:0:-1"),
        "the refusal is not in the delivery's span: {refusal}"
    );
}
