//! Transactional registrations (`docs/transactions.md`): what a handler publishes is seen
//! exactly when its message is acknowledged. Live on Apache Pulsar with its transaction
//! coordinator (pulsar-lite has none); in process on the model's transactions.

use super::*;

/// The transaction timeout of these cases: short, so that a transaction left open by a case
/// ends soon on a real broker too.
const TXN_TIMEOUT: Duration = Duration::from_secs(5);

/// The scripted transactional forwarder, and the reader of what it commits.
fn forwarding() -> impl ruststream::app::App<State = Plan> {
    app(|b| {
        b.include(tx_forwarder).transactional_with(
            ruststream::transaction::TransactionPolicy::new().timeout(TXN_TIMEOUT),
        );
        b.include(tx_reader);
    })
}

/// The job ids `tx_reader` saw: what was committed to `tx-out`, in the order seen.
fn committed(app: &dyn Running) -> Vec<u64> {
    (app.calls_of("tx_reader").iter())
        .map(|c| c.payload::<Job>().expect("a job").id)
        .collect()
}

/// `ack` commits what the handler published with the acknowledgement: each job's copy is
/// seen once, and nothing comes back.
pub async fn a_transactional_ack_commits_what_the_handler_published(env: Env) {
    let app = env
        .start(forwarding(), Script::always(ret(HandlerOutcome::ack())))
        .await;
    for id in 1..=3 {
        app.publish("tx-in", job(id), vec![], None).await;
    }
    app.until_calls("tx_reader", 3, SOON).await;
    app.pass(QUIET).await;
    let mut seen = committed(&*app);
    seen.sort_unstable();
    assert_eq!(seen, [1, 2, 3], "each once");
    assert_eq!(app.calls_of("tx_forwarder").len(), 3, "none came back");
    if let Some(backlog) = app.backlog("tx-in", "tx").await {
        assert_eq!(backlog, 0);
    }
    app.stop().await;
}

/// A handler that publishes and then returns `retry` has that publish aborted: only the
/// attempt that acknowledges is seen, once.
pub async fn a_retried_handler_s_publishes_are_never_seen(env: Env) {
    let script = Script::by_job(|_, attempt| match attempt {
        0 => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    });
    let app = env.start(forwarding(), script).await;
    app.publish("tx-in", job(7), vec![], None).await;
    app.until_calls("tx_reader", 1, SOON).await;
    app.pass(QUIET).await;
    assert_eq!(app.calls_of("tx_forwarder").len(), 2, "retried once");
    assert_eq!(committed(&*app), [7], "exactly once");
    app.stop().await;
}

/// A panicking handler's publish is aborted; the attempt after it (by the ack timeout: a
/// panic has no outcome) is seen, once.
pub async fn a_panicking_handler_s_publishes_are_never_seen(env: Env) {
    let script = Script::new([Step::Panic], ret(HandlerOutcome::ack()));
    let app = env.start(forwarding(), script).await;
    app.publish("tx-in", job(5), vec![], None).await;
    app.until_calls("tx_reader", 1, TX_ACK_TIMEOUT + TICK + SOON)
        .await;
    app.pass(QUIET).await;
    assert_eq!(
        app.calls_of("tx_forwarder").len(),
        2,
        "panicked, then acknowledged"
    );
    assert_eq!(committed(&*app), [5], "exactly once");
    app.stop().await;
}

/// A handler that publishes and then waits with `retry_after` twice publishes exactly once in
/// the end, when it acknowledges: nothing is seen before its third attempt.
pub async fn a_transactional_retry_after_publishes_once_when_it_acks(env: Env) {
    let script = Script::by_job(|_, attempt| match attempt {
        0 | 1 => HandlerOutcome::retry_after(DELAY),
        _ => HandlerOutcome::ack(),
    });
    let app = env.start(forwarding(), script).await;
    app.publish("tx-in", job(3), vec![], None).await;
    let out = app.until_calls("tx_reader", 1, DELAY * 2 + SOON).await;
    app.pass(QUIET).await;
    let calls = app.calls_of("tx_forwarder");
    assert_eq!(calls.len(), 3, "two waits, then the acknowledgement");
    assert_eq!(committed(&*app), [3], "exactly once");
    assert!(
        out[0].at() >= calls[2].at(),
        "seen only once the third attempt acknowledged: {:?} before {:?}",
        out[0].at(),
        calls[2].at()
    );
    if env.exact() {
        assert_eq!(out[0].at(), calls[2].at(), "at the acknowledgement itself");
    }
    app.stop().await;
}

/// A transactional batch handler: each call is one transaction, whatever the grouping. A
/// batch of 3 (one batched entry) in which job 2's first attempt retries aborts as one: none
/// of its sends is seen and all 3 come back; the next call acknowledges all 3 and commits
/// their copies with the acknowledgements, each seen once.
pub async fn a_transactional_batch_commits_or_aborts_as_one(env: Env) {
    let exact = env.exact();
    let script = Script::by_job(|id, attempt| match (id, attempt) {
        (2, 0) => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    });
    let policy = ruststream::transaction::TransactionPolicy::new().timeout(TXN_TIMEOUT);
    let forwarding = app(move |b| {
        b.include(
            batch_forwarder
                .batch(ruststream::nonzero!(10))
                .batch_wait(BATCH_WAIT),
        )
        .transactional_with(policy);
        b.include(tx_reader);
    });
    let app = env.start(forwarding, script.clone()).await;
    let records: Vec<Message> = (1..=3)
        .map(|id| Message::new("bh-fwd-in", job(id)))
        .collect();
    assert_one_entry(&app.publish_batch(records).await);
    app.until_calls("tx_reader", 3, SOON).await;
    app.pass(QUIET).await;
    let mut seen = committed(&*app);
    seen.sort_unstable();
    assert_eq!(
        seen,
        [1, 2, 3],
        "each once, from the call that acknowledged"
    );
    let batches = script.batches();
    let ids = |batch: &Vec<(u64, Option<String>)>| batch.iter().map(|(id, _)| *id).collect();
    let first: Vec<u64> = ids(&batches[0]);
    let handled = calls_per_job(&app.calls_of("batch_forwarder"));
    for id in [1, 2, 3] {
        let expected = 1 + usize::from(first.contains(&2) && first.contains(&id));
        assert_eq!(handled.get(&id), Some(&expected), "job {id}: {batches:?}");
    }
    if exact {
        assert_eq!(first, [1, 2, 3], "one batch");
        assert_eq!(
            ids(&batches[1]),
            [1, 2, 3],
            "all back, the acknowledged too"
        );
        assert_eq!(batches.len(), 2, "{batches:?}");
    }
    if let Some(backlog) = app.backlog("bh-fwd-in", "bh-fwd").await {
        assert_eq!(backlog, 0);
    }
    app.stop().await;
}
