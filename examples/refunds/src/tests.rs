//! The guide's behaviour, on the in-process Pulsar with a stopped clock, on tokio, async-std
//! and smol: each scenario is written once and run on all three.

use std::sync::Arc;
use std::time::Duration;

use ruststream::runtime::Spawn;
use ruststream_pulsar::testing::TestApp;

use super::*;

const DLQ_TOPIC: &str = "persistent://public/default/refunds-dlq";
const REFUNDS_TOPIC: &str = "persistent://public/default/refunds";

fn refund() -> Refund {
    Refund {
        id: 7,
        card: "4111-1111-1111-1111".into(),
        amount_cents: 1250,
    }
}

fn clients(processor: Processor) -> Clients {
    Clients {
        processor: Arc::new(processor),
    }
}

async fn start(spawn: Arc<dyn Spawn>, processor: Processor) -> TestApp {
    TestApp::with_state(app(), clients(processor))
        .on(spawn)
        .await
        .expect("the refunds app starts")
}

/// Busy: the second call comes exactly at BACKOFF, five calls in all, then `refunds-dlq`, where
/// `review` is called once.
async fn busy(spawn: Arc<dyn Spawn>) {
    let tb = start(spawn, Processor::Refusing(Refusal::Busy)).await;
    tb.publish(&refund()).await.unwrap();
    assert_eq!(tb.calls_of("process_refund").len(), 1);

    tb.advance(BACKOFF - Duration::from_millis(1))
        .await
        .unwrap();
    assert_eq!(
        tb.calls_of("process_refund").len(),
        1,
        "not a millisecond before BACKOFF"
    );
    tb.advance(Duration::from_millis(1)).await.unwrap();
    let calls = tb.calls_of("process_refund");
    assert_eq!(
        calls.len(),
        2,
        "redelivered at BACKOFF: {:?}",
        calls
            .iter()
            .map(|c| (c.at(), c.redelivery_count()))
            .collect::<Vec<_>>()
    );
    assert_eq!(calls[1].at(), BACKOFF);
    assert_eq!(calls[1].redelivery_count(), 1);

    tb.advance(BACKOFF * 4).await.unwrap();
    let calls = tb.calls_of("process_refund");
    let at: Vec<Duration> = calls.iter().map(|c| c.at()).collect();
    assert_eq!(
        at,
        [0, 30, 60, 90, 120].map(Duration::from_secs),
        "five deliveries, BACKOFF apart"
    );
    assert!(calls
        .iter()
        .all(|c| c.outcome() == Some(HandlerOutcome::retry_after(BACKOFF))));
    assert_eq!(
        calls
            .iter()
            .map(|c| c.redelivery_count())
            .collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );

    let dlq = tb.topic("refunds-dlq");
    assert_eq!(dlq.len(), 1, "one message on the dead-letter topic");
    assert_eq!(dlq[0].decode::<Refund>().unwrap(), refund());
    assert_eq!(dlq[0].property("REAL_TOPIC"), Some(REFUNDS_TOPIC));
    let original = &tb.topic("refunds")[0];
    assert_eq!(
        dlq[0].property("ORIGIN_MESSAGE_ID"),
        Some(original.message_id.to_string().as_str())
    );
    let reviews = tb.calls_of("review");
    assert_eq!(reviews.len(), 1, "review reads the dead-letter topic once");
    assert_eq!(reviews[0].topic(), DLQ_TOPIC);
    assert_eq!(reviews[0].payload::<Refund>().unwrap(), refund());
    assert_eq!(
        reviews[0].at(),
        BACKOFF * 5,
        "dead-lettered when the fifth wait ended"
    );

    tb.advance(Duration::from_secs(600)).await.unwrap();
    assert_eq!(tb.calls_of("process_refund").len(), 5, "nothing comes back");
    assert_eq!(tb.calls_of("review").len(), 1);
    tb.stop().await;
}

/// Unavailable: five immediate calls, then the dead-letter topic.
async fn unavailable(spawn: Arc<dyn Spawn>) {
    let tb = start(spawn, Processor::Refusing(Refusal::Unavailable)).await;
    tb.publish(&refund()).await.unwrap();
    let calls = tb.calls_of("process_refund");
    assert_eq!(calls.len(), 5, "five deliveries, the first included");
    assert!(
        calls.iter().all(|c| c.at() == Duration::ZERO),
        "all at once"
    );
    assert!(calls
        .iter()
        .all(|c| c.outcome() == Some(HandlerOutcome::retry())));
    let dlq = tb.topic("refunds-dlq");
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].decode::<Refund>().unwrap(), refund());
    assert_eq!(dlq[0].property("REAL_TOPIC"), Some(REFUNDS_TOPIC));
    assert_eq!(tb.calls_of("review").len(), 1);
    tb.advance(Duration::from_secs(600)).await.unwrap();
    assert_eq!(tb.calls_of("process_refund").len(), 5);
    tb.stop().await;
}

/// Declined: one call, nothing dead-lettered.
async fn declined(spawn: Arc<dyn Spawn>) {
    let tb = start(spawn, Processor::Refusing(Refusal::Declined)).await;
    tb.publish(&refund()).await.unwrap();
    tb.advance(Duration::from_secs(600)).await.unwrap();
    let calls = tb.calls_of("process_refund");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::drop()));
    assert!(tb.topic("refunds-dlq").is_empty());
    assert!(tb.calls_of("review").is_empty());
    tb.stop().await;
}

/// Success: one call.
async fn success(spawn: Arc<dyn Spawn>) {
    let tb = start(spawn, Processor::Accepting).await;
    tb.publish(&refund()).await.unwrap();
    tb.advance(Duration::from_secs(600)).await.unwrap();
    let calls = tb.calls_of("process_refund");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::ack()));
    assert_eq!(calls[0].payload::<Refund>().unwrap(), refund());
    assert!(tb.topic("refunds-dlq").is_empty());
    tb.stop().await;
}

/// The service as it runs in production, `on_startup` included, with the simulated processor.
async fn simulated(spawn: Arc<dyn Spawn>) {
    let tb = TestApp::start(app()).on(spawn).await.unwrap();
    for line in include_str!("../samples.jsonl").lines() {
        if line.starts_with('#') {
            continue;
        }
        let refund: Refund = serde_json::from_str(line).unwrap();
        tb.publish(&refund).await.unwrap();
    }
    tb.advance(Duration::from_secs(600)).await.unwrap();
    let per_id = |id: u64| {
        tb.calls_of("process_refund")
            .into_iter()
            .filter(|c| c.payload::<Refund>().unwrap().id == id)
            .count()
    };
    assert_eq!(per_id(1), 1, "refunded at once");
    assert_eq!(per_id(2), 1, "declined, dropped");
    assert_eq!(per_id(3), 5, "never answered: five attempts");
    assert_eq!(per_id(4), 3, "busy twice, then refunded");
    let dlq = tb.topic("refunds-dlq");
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].decode::<Refund>().unwrap().id, 3);
    tb.stop().await;
}

ruststream_tests::on_every_runtime!(busy, unavailable, declined, success, simulated);
