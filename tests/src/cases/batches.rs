//! Batched entries: retried siblings, and a dead-lettered message of a batch.

use super::*;

/// Messages of the batch cases, published in batches of [`BATCH_SIZE`] (one entry each).
const BATCH: u64 = 100;

/// Batching producers' entries where odd ids are retried once (with `first`) and even ids
/// acked: every id ends acknowledged, and no acknowledged sibling is handed over again.
async fn batch_siblings_retried_once(env: Env, first: HandlerOutcome) {
    let app = env
        .start(
            app(|b| {
                b.include(batched);
            }),
            Script::by_job(move |id, attempt| {
                if id % 2 == 1 && attempt == 0 {
                    first
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    let mut ids = Vec::new();
    for first_id in (0..BATCH).step_by(BATCH_SIZE as usize) {
        let entry = app
            .publish_batch(
                (first_id..first_id + BATCH_SIZE)
                    .map(|id| Message::new("jobs-batch", job(id)))
                    .collect(),
            )
            .await;
        assert_one_entry(&entry);
        ids.extend(entry);
    }
    let expected = (BATCH + BATCH / 2) as usize;
    app.until_calls("batched", expected, SOON).await;
    app.pass(QUIET).await;
    let calls = app.calls_of("batched");
    let seen = calls_per_job(&calls);
    let want: std::collections::BTreeMap<u64, usize> =
        (0..BATCH).map(|id| (id, 1 + (id % 2) as usize)).collect();
    assert_eq!(seen, want, "odd ids twice, even ids once, none lost");
    // Each delivery names its place in the entry.
    for call in &calls {
        assert!(
            ids.iter().any(|id| *id == call.message_id()),
            "{}",
            call.message_id()
        );
    }
    // Live, "acknowledged" is what the quiet period showed: an entry left unacknowledged
    // would have come back after the 3 s ack timeout and changed the counts above.
    if let Some(backlog) = app.backlog("jobs-batch", "batched").await {
        assert_eq!(backlog, 0, "every entry acknowledged");
    }
    app.stop().await;
}

/// `retry()` on odd ids of the batches.
pub async fn batch_siblings_retry(env: Env) {
    batch_siblings_retried_once(env, HandlerOutcome::retry()).await;
}

/// `retry_after(2 s)` on odd ids of the batches.
pub async fn batch_siblings_retry_after(env: Env) {
    batch_siblings_retried_once(env, HandlerOutcome::retry_after(Duration::from_secs(2))).await;
}

/// A message of a batch that runs out of attempts reaches the dead-letter topic alone, with
/// its index in `ORIGIN_MESSAGE_ID`; its acknowledged siblings never do.
pub async fn batch_dead_letters_only_the_exhausted_message(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(batched)
                    .max_attempts(n(3))
                    .dead_letter("jobs-batch-dlq");
                b.include(batch_dead_letters);
            }),
            Script::by_job(|id, _| {
                if id == 1 {
                    HandlerOutcome::retry()
                } else {
                    HandlerOutcome::ack()
                }
            }),
        )
        .await;
    let ids = app
        .publish_batch(
            (0..4)
                .map(|id| Message::new("jobs-batch", job(id)))
                .collect(),
        )
        .await;
    assert_one_entry(&ids);
    let dead = app.until_calls("batch_dead_letters", 1, SOON).await;
    app.pass(QUIET).await;
    let dead_now = app.calls_of("batch_dead_letters");
    assert_eq!(dead_now.len(), 1, "only the exhausted message: {dead:?}");
    let job1: Job = serde_json::from_slice(dead_now[0].payload_bytes()).unwrap();
    assert_eq!(job1.id, 1);
    assert_eq!(
        dead_now[0].property("ORIGIN_MESSAGE_ID"),
        Some(ids[1].to_string().as_str())
    );
    let real_topic = dead_now[0].property("REAL_TOPIC").expect("REAL_TOPIC");
    assert!(real_topic.starts_with("persistent://") && real_topic.ends_with("/jobs-batch"));
    let seen = calls_per_job(&app.calls_of("batched"));
    assert_eq!(
        seen,
        [(0, 1), (1, 3), (2, 1), (3, 1)].into_iter().collect(),
        "exactly max_attempts for the failing one, once for the others"
    );
    // Live, "acknowledged" is what the quiet period showed: an entry left unacknowledged
    // would have come back after the 3 s ack timeout and changed the counts above.
    if let Some(backlog) = app.backlog("jobs-batch", "batched").await {
        assert_eq!(backlog, 0, "every entry acknowledged");
    }
    app.stop().await;
}
