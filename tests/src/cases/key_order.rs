//! Order and concurrency: KeyShared's per-key order, Failover one message at a time or
//! `key_ordered`, and ordered retries.

use super::*;

/// KeyShared keeps the order of each key: five messages of two keys, all published before the
/// handlers run.
pub async fn key_shared_keeps_per_key_order(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(key_shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
        )
        .await;
    for (id, key) in [(1, "a"), (2, "b"), (3, "a"), (4, "a"), (5, "b")] {
        app.publish_unsettled("jobs-ks", job(id), vec![], Some(key.into()))
            .await;
    }
    let calls = app.until_calls("key_shared", 5, SOON).await;
    assert_eq!(calls.len(), 5);
    let ids = |wanted: &[u64]| -> Vec<u64> {
        calls
            .iter()
            .map(|c| c.payload::<Job>().expect("a job").id)
            .filter(|id| wanted.contains(id))
            .collect()
    };
    assert_eq!(ids(&[1, 3, 4]), [1, 3, 4], "key a out of order");
    assert_eq!(ids(&[2, 5]), [2, 5], "key b out of order");
    app.stop().await;
}

/// Messages published at once, as one batch, while the overlap handlers are held: they are
/// all there when the handlers start.
async fn publish_held(app: &dyn Running, script: &Script, topic: &str, keys: &[Option<&str>]) {
    script.hold();
    let records = keys
        .iter()
        .enumerate()
        .map(|(id, key)| {
            let record = Message::new(topic.to_owned(), job(id as u64));
            match key {
                Some(key) => record.key(*key),
                None => record,
            }
        })
        .collect();
    app.publish_batch_unsettled(records).await;
}

/// How many overlap handlers started while held: waits until `expected` have, then a moment
/// more (live) for any that should not have.
async fn started_while_held(
    env: &Env,
    app: &dyn Running,
    script: &Arc<Script>,
    expected: usize,
) -> usize {
    let probe = script.clone();
    let reached = move || probe.overlap().started.len() >= expected;
    assert!(
        app.wait_for(SOON, &reached).await,
        "{expected} handlers should have started: {:?}",
        script.overlap()
    );
    if !env.exact() {
        app.pass(Duration::from_secs(1)).await;
    } else {
        // In process: give the app every chance to start more.
        let never = || false;
        app.wait_for(SOON, &never).await;
    }
    script.overlap().started.len()
}

/// Failover runs one message at a time by default, in the broker's order; with
/// `concurrency(4)` chosen explicitly four run at once.
pub async fn failover_runs_one_message_at_a_time(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let ordered = env
        .start(
            app(|b| {
                b.include(ordered_failover);
            }),
            script.clone(),
        )
        .await;
    publish_held(&*ordered, &script, "jobs-fo-order", &[None; 8]).await;
    assert_eq!(
        started_while_held(&env, &*ordered, &script, 1).await,
        1,
        "one at a time: {:?}",
        script.overlap()
    );
    script.release();
    ordered.until_calls("ordered_failover", 8, SOON).await;
    let overlap = script.overlap();
    assert_eq!(overlap.most, 1, "{overlap:?}");
    assert_eq!(overlap.started, (0..8).collect::<Vec<u64>>(), "in order");
    ordered.stop().await;

    // The control: four at once when asked for, so the check above can fail.
    let script = Script::always(ret(HandlerOutcome::ack()));
    let concurrent = env
        .start(
            app(|b| {
                b.include(concurrent_failover);
            }),
            script.clone(),
        )
        .await;
    publish_held(&*concurrent, &script, "jobs-fo-conc", &[None; 8]).await;
    assert_eq!(
        started_while_held(&env, &*concurrent, &script, 4).await,
        4,
        "{:?}",
        script.overlap()
    );
    script.release();
    concurrent.until_calls("concurrent_failover", 8, SOON).await;
    assert_eq!(script.overlap().most, 4);
    concurrent.stop().await;
}

/// Failover with four at once and `key_ordered`: one message per key at a time, each key's
/// in order, the keys side by side.
pub async fn failover_key_ordered_keeps_each_key_in_order(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(key_ordered_failover);
            }),
            script.clone(),
        )
        .await;
    let keys = [
        Some("a"),
        Some("b"),
        Some("a"),
        Some("b"),
        Some("a"),
        Some("b"),
    ];
    publish_held(&*app, &script, "jobs-fo-keys", &keys).await;
    assert_eq!(
        started_while_held(&env, &*app, &script, 2).await,
        2,
        "one per key: {:?}",
        script.overlap()
    );
    script.release();
    app.until_calls("key_ordered_failover", keys.len(), SOON)
        .await;
    let overlap = script.overlap();
    let of_key = |key: &str| -> Vec<u64> {
        overlap
            .started
            .iter()
            .copied()
            .filter(|id| keys[*id as usize] == Some(key))
            .collect()
    };
    assert_eq!(of_key("a"), [0, 2, 4]);
    assert_eq!(of_key("b"), [1, 3, 5]);
    assert_eq!(overlap.most, 2, "{overlap:?}");
    app.stop().await;
}

/// KeyShared with ordered retries: key K's first message is retried twice (`retry()`, then
/// `retry_after(1 s)`) while K's next three arrive; the handler sees K's messages in publish
/// order (the first three times, then the others), and key B's are not delayed.
pub async fn ordered_retries_keep_each_key_in_publish_order(env: Env) {
    let app = env
        .start(
            app(|b| {
                b.include(retries_in_order);
            }),
            Script::by_job(|id, attempt| match (id, attempt) {
                (1, 0) => HandlerOutcome::retry(),
                (1, 1) => HandlerOutcome::retry_after(DELAY),
                _ => HandlerOutcome::ack(),
            }),
        )
        .await;
    for (id, key) in [(1, "K"), (2, "K"), (3, "K"), (4, "K"), (10, "B"), (11, "B")] {
        app.publish_unsettled("jobs-ordered", job(id), vec![], Some(key.into()))
            .await;
    }
    let calls = app.until_calls("retries_in_order", 8, DELAY + SOON).await;
    assert_eq!(calls.len(), 8, "{calls:?}");
    let of = |ids: &[u64]| -> Vec<u64> {
        calls
            .iter()
            .map(|c| c.payload::<Job>().expect("a job").id)
            .filter(|id| ids.contains(id))
            .collect()
    };
    assert_eq!(
        of(&[1, 2, 3, 4]),
        [1, 1, 1, 2, 3, 4],
        "key K in publish order"
    );
    assert_eq!(of(&[10, 11]), [10, 11]);
    let first_of = |id: u64| {
        calls
            .iter()
            .find(|c| c.payload::<Job>().expect("a job").id == id)
            .expect("handled")
            .at()
    };
    let last_one = calls
        .iter()
        .rfind(|c| c.payload::<Job>().expect("a job").id == 1)
        .expect("handled")
        .at();
    assert!(first_of(2) >= last_one, "2 only after 1 settled");
    if env.exact() {
        assert_eq!(first_of(10), Duration::ZERO, "B not delayed");
        assert_eq!(first_of(11), Duration::ZERO, "B not delayed");
        assert_eq!(last_one, DELAY);
        assert_eq!(first_of(4), DELAY);
    } else {
        assert!(
            first_of(11) < last_one,
            "B handled while K's first message was away"
        );
    }
    app.pass(QUIET).await;
    assert_eq!(
        app.calls_of("retries_in_order").len(),
        8,
        "nothing handled twice"
    );
    if let Some(backlog) = app.backlog("jobs-ordered", "ordered").await {
        assert_eq!(backlog, 0);
    }
    app.stop().await;
}
