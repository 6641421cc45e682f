//! The guide's delay test: a busy processor, on the in-process Pulsar with a stopped clock.

use ruststream_pulsar::testing::TestApp;

use super::*;

#[tokio::test]
async fn a_busy_refund_comes_back_every_backoff_then_goes_to_review() {
    let busy = Clients {
        processor: Arc::new(Processor {
            refuse: Some(Refusal::Busy),
        }),
    };
    let tb = TestApp::with_state(app(), busy).await.unwrap();
    let refund = Refund {
        id: 7,
        card: "4111-1111-1111-1111".into(),
        amount_cents: 1250,
    };
    tb.publish(&refund).await.unwrap();
    tb.advance(BACKOFF * 5).await.unwrap();
    let at: Vec<Duration> = tb
        .calls_of("process_refund")
        .iter()
        .map(|call| call.at())
        .collect();
    assert_eq!(at, [0, 30, 60, 90, 120].map(Duration::from_secs));
    let reviewed = tb.calls_of("review");
    assert_eq!(reviewed.len(), 1, "out of attempts: reviewed once");
    assert_eq!(reviewed[0].payload::<Refund>().unwrap(), refund);
    tb.stop().await;
}
