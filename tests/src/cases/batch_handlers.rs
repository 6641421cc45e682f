//! Batch handlers: each message of a batch settled on its own, per-key order kept across
//! batches, and a partial batch handed over at its max wait.

use super::*;

/// The batch handler in batches of at most 10, with an attempt limit and a dead-letter topic.
fn mount_batches(b: &mut ruststream_pulsar::PulsarBroker<Plan>) {
    b.include(
        batch_handler
            .batch(ruststream::nonzero!(10))
            .batch_wait(BATCH_WAIT),
    )
    .max_attempts(n(3))
    .dead_letter("jobs-bh-dlq");
    b.include(batch_handler_dead_letters);
}

/// Every partition of the batch handler's topic has nothing left unacknowledged.
async fn nothing_left(app: &dyn Running) {
    for i in 0..PARTITIONS {
        let partition = format!("jobs-bh-partition-{i}");
        if let Some(backlog) = app.backlog(&partition, "bh-ks").await {
            assert_eq!(backlog, 0, "every entry of {partition} acknowledged");
        }
    }
}

/// A batch of 10 from a batching producer: messages 3 and 7 are retried once, message 5 does
/// not decode. 5 goes to the dead-letter topic with `undecodable` and its batch-mates are
/// still handled, 3 and 7 come back once (together, in a later batch) and are then
/// acknowledged, the others are acknowledged once.
pub async fn a_batch_settles_each_message_on_its_own(env: Env) {
    let exact = env.exact();
    let script = Script::by_job(|id, attempt| match (id, attempt) {
        (3 | 7, 0) => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    });
    let app = env
        .start_partitioned(
            app(mount_batches),
            script.clone(),
            &[("jobs-bh", PARTITIONS)],
        )
        .await;
    let records: Vec<Message> = (1..=10)
        .map(|id| match id {
            5 => Message::new("jobs-bh", b"not json".to_vec()),
            id => Message::new("jobs-bh", job(id)),
        })
        .collect();
    let ids = app.publish_batch(records).await;
    assert_one_entry(&ids);
    let dead = app.until_calls("batch_handler_dead_letters", 1, SOON).await;
    let calls = app.until_calls("batch_handler", 12, SOON).await;
    app.pass(QUIET).await;
    assert_eq!(dead.len(), 1, "one dead letter: {dead:?}");
    assert_eq!(dead[0].payload_bytes(), b"not json");
    assert_eq!(dead[0].property("DEAD_LETTER_REASON"), Some("undecodable"));
    let calls_now = app.calls_of("batch_handler");
    assert_eq!(calls_now.len(), calls.len(), "nothing more came back");
    let undecodable: Vec<_> = (calls.iter())
        .filter(|c| c.payload_bytes() == b"not json")
        .collect();
    assert_eq!(undecodable.len(), 1, "message 5 handled once");
    assert_eq!(undecodable[0].completion(), Completion::DeadLettered);
    let decoded: Vec<_> = (calls.iter())
        .filter(|c| c.payload_bytes() != b"not json")
        .cloned()
        .collect();
    let seen = calls_per_job(&decoded);
    for id in [1, 2, 4, 6, 8, 9, 10] {
        assert_eq!(seen.get(&id), Some(&1), "job {id} once: {seen:?}");
    }
    for id in [3, 7] {
        assert_eq!(seen.get(&id), Some(&2), "job {id} retried once: {seen:?}");
    }
    let mut last = std::collections::BTreeMap::new();
    for call in &decoded {
        let job: Job = call.payload().expect("a job");
        last.insert(job.id, call.outcome());
    }
    assert!(
        last.values().all(|o| *o == Some(HandlerOutcome::ack())),
        "every job ends acknowledged: {last:?}"
    );
    let batches = script.batches();
    let first: Vec<u64> = batches[0].iter().map(|(id, _)| *id).collect();
    if exact {
        assert_eq!(
            first,
            [1, 2, 3, 4, 6, 7, 8, 9, 10],
            "one batch of the nine that decode"
        );
        let again: Vec<u64> = batches[1].iter().map(|(id, _)| *id).collect();
        assert_eq!(again, [3, 7], "the two retried come back together");
        assert_eq!(batches.len(), 2, "{batches:?}");
    }
    assert!(batches.iter().all(|b| b.len() <= 10), "{batches:?}");
    nothing_left(&*app).await;
    app.stop().await;
}

/// Keyed batches from a key-based batching producer on 4 partitions, KeyShared: every job is
/// handled once, each key's jobs in publish order, within a batch and across batches.
pub async fn batches_keep_each_keys_order(env: Env) {
    let script = Script::by_job(|_, _| HandlerOutcome::ack());
    let app = env
        .start_partitioned(
            app(mount_batches),
            script.clone(),
            &[("jobs-bh", PARTITIONS)],
        )
        .await;
    const KEYS: u64 = 4;
    const PER_KEY: u64 = 5;
    for key in 0..KEYS {
        let records: Vec<Message> = (0..PER_KEY)
            .map(|i| Message::new("jobs-bh", job(key * PER_KEY + i)).key(format!("key-{key}")))
            .collect();
        assert_one_entry(&app.publish_batch(records).await);
    }
    let calls = app
        .until_calls("batch_handler", (KEYS * PER_KEY) as usize, SOON)
        .await;
    app.pass(QUIET).await;
    let seen = calls_per_job(&calls);
    assert_eq!(seen.len(), (KEYS * PER_KEY) as usize, "{seen:?}");
    assert!(seen.values().all(|n| *n == 1), "each once: {seen:?}");
    let mut order: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for batch in script.batches() {
        for (id, key) in batch {
            let key = key.expect("every job has its key");
            assert_eq!(key, format!("key-{}", id / PER_KEY), "job {id}'s key");
            order.entry(key).or_default().push(id);
        }
    }
    for (key, ids) in &order {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{key} out of order: {ids:?}"
        );
    }
    nothing_left(&*app).await;
    app.stop().await;
}

/// Three messages, fewer than the batch holds: they are handed over together once the first
/// has waited the max wait, on the virtual clock exactly then.
pub async fn a_partial_batch_goes_at_the_max_wait(env: Env) {
    let exact = env.exact();
    let script = Script::by_job(|_, _| HandlerOutcome::ack());
    let app = env
        .start_partitioned(
            app(mount_batches),
            script.clone(),
            &[("jobs-bh", PARTITIONS)],
        )
        .await;
    let records: Vec<Message> = (1..=3).map(|id| Message::new("jobs-bh", job(id))).collect();
    assert_one_entry(&app.publish_batch(records).await);
    let calls = app.until_calls("batch_handler", 3, SOON).await;
    assert_eq!(calls.len(), 3, "{calls:?}");
    if exact {
        for call in &calls {
            assert_eq!(call.at(), BATCH_WAIT, "handed over at exactly the max wait");
        }
    }
    let ids: Vec<Vec<u64>> = (script.batches().iter())
        .map(|b| b.iter().map(|(id, _)| *id).collect())
        .collect();
    assert_eq!(ids, [vec![1, 2, 3]], "one partial batch");
    nothing_left(&*app).await;
    app.stop().await;
}

/// A batch's messages have their whole ack timeout once handed over, however long the batch
/// took to fill: job 1, alone, waits its batch's max wait (2 s) before it is handed over, and
/// its handler then holds it 2 s, longer than the ack timeout (3 s) left from its receipt but
/// shorter than the ack timeout from its hand-over. It is handled once and never comes back.
pub async fn a_batch_s_ack_timeout_starts_at_hand_over(env: Env) {
    const WAIT: Duration = Duration::from_secs(2);
    let script = Script::by_job(|_, _| HandlerOutcome::ack());
    let gate = script.with_gate();
    let app = env
        .start_partitioned(
            app(|b| {
                b.include(
                    batch_handler
                        .batch(ruststream::nonzero!(10))
                        .batch_wait(WAIT),
                );
                b.include(batch_handler_dead_letters);
            }),
            script.clone(),
            &[("jobs-bh", PARTITIONS)],
        )
        .await;
    app.publish_unsettled("jobs-bh", job(1), vec![], None).await;
    // Job 1 is received now (in process: once the app is idle at this instant), and handed
    // over at its batch's max wait to its handler, which holds it.
    app.pass(Duration::ZERO).await;
    app.pass_while_held(WAIT).await;
    let held = || script.gate_taken();
    assert!(
        app.wait_for(SOON, &held).await,
        "job 1 never reached its handler"
    );
    // Counted from receipt, job 1's timeout would fire at the first tick after 3 s (3.5 s),
    // while its handler holds it until 4 s; from hand-over, at 5.5 s.
    app.pass_while_held(WAIT).await;
    assert!(
        app.calls_of("batch_handler").is_empty(),
        "no call ended while job 1 was held"
    );
    gate.send(()).expect("job 1 still waits at its gate");
    app.until_calls("batch_handler", 1, SOON).await;
    app.pass(QUIET).await;
    let calls = app.calls_of("batch_handler");
    let seen: Vec<(u32, Duration)> = (calls.iter())
        .map(|c| (c.redelivery_count(), c.at()))
        .collect();
    assert_eq!(seen.len(), 1, "handled once, never redelivered: {seen:?}");
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::ack()));
    if env.exact() {
        assert_eq!(seen, [(0, WAIT)], "handed over at the max wait");
    }
    assert_eq!(script.batches().len(), 1, "{:?}", script.batches());
    nothing_left(&*app).await;
    app.stop().await;
}

/// KeyShared with ordered retries, in batches: key K's first message is retried twice
/// (`retry()`, then `retry_after(1 s)`) while K's next three wait. They go in later batches,
/// in publish order, only once K's first is acknowledged; key B's are not held; no batch holds
/// two messages of one key.
pub async fn a_retried_message_holds_its_key_out_of_the_following_batches(env: Env) {
    let script = Script::by_job(|id, attempt| match (id, attempt) {
        (1, 0) => HandlerOutcome::retry(),
        (1, 1) => HandlerOutcome::retry_after(DELAY),
        _ => HandlerOutcome::ack(),
    });
    let app = env
        .start(
            app(|b| {
                b.include(
                    batch_retries_in_order
                        .batch(ruststream::nonzero!(10))
                        .batch_wait(BATCH_WAIT),
                );
            }),
            script.clone(),
        )
        .await;
    for (id, key) in [(1, "K"), (2, "K"), (3, "K"), (4, "K"), (10, "B"), (11, "B")] {
        app.publish_unsettled("jobs-bh-ordered", job(id), vec![], Some(key.into()))
            .await;
    }
    let calls = app
        .until_calls("batch_retries_in_order", 8, DELAY + SOON)
        .await;
    assert_eq!(calls.len(), 8, "{calls:?}");
    let id_of = |c: &ruststream_pulsar::testing::Call| c.payload::<Job>().expect("a job").id;
    let of = |ids: &[u64]| -> Vec<u64> {
        (calls.iter().map(id_of))
            .filter(|id| ids.contains(id))
            .collect()
    };
    assert_eq!(
        of(&[1, 2, 3, 4]),
        [1, 1, 1, 2, 3, 4],
        "key K in publish order"
    );
    assert_eq!(of(&[10, 11]), [10, 11]);
    let first_of = |id: u64| calls.iter().find(|c| id_of(c) == id).expect("handled").at();
    let last_one = calls.iter().rfind(|c| id_of(c) == 1).expect("handled").at();
    assert!(first_of(2) >= last_one, "2 only after 1 settled");
    assert!(
        first_of(11) < last_one,
        "B not held while K's first was away"
    );
    if env.exact() {
        assert!(last_one >= DELAY, "1 back after its delay: {last_one:?}");
    }
    for batch in script.batches() {
        let mut keys: Vec<_> = batch.iter().map(|(_, key)| key.clone()).collect();
        let all = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), all, "one message of a key a batch: {batch:?}");
    }
    app.pass(QUIET).await;
    assert_eq!(
        app.calls_of("batch_retries_in_order").len(),
        8,
        "nothing handled twice"
    );
    if let Some(backlog) = app.backlog("jobs-bh-ordered", "bh-ordered").await {
        assert_eq!(backlog, 0);
    }
    app.stop().await;
}

/// The batch forwarder in batches of at most 10, without transactions, and the reader of its
/// output.
fn mount_batch_forwarder(b: &mut ruststream_pulsar::PulsarBroker<Plan>) {
    b.include(
        batch_forwarder
            .batch(ruststream::nonzero!(10))
            .batch_wait(BATCH_WAIT),
    );
    b.include(tx_reader);
}

/// A batch handler's `Publisher`: every message it was called for is acknowledged only once
/// all the batch's sends are confirmed. A batch of 3 (one batched entry) acknowledges every
/// message, but job 1,000's send fails on its first attempt: every message of that batch
/// comes back, as after `retry()`, and is forwarded again; in the end nothing is left.
pub async fn a_batch_s_failed_send_brings_its_messages_back(env: Env) {
    let exact = env.exact();
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env.start(app(mount_batch_forwarder), script.clone()).await;
    let ids = [1, 2, FAILING_SEND];
    let records: Vec<Message> = (ids.iter())
        .map(|&id| Message::new("bh-fwd-in", job(id)))
        .collect();
    assert_one_entry(&app.publish_batch(records).await);
    app.until_calls("tx_reader", 3, SOON).await;
    app.pass(QUIET).await;
    let batches = script.batches();
    let first: Vec<u64> = batches[0].iter().map(|(id, _)| *id).collect();
    assert!(first.contains(&FAILING_SEND), "{batches:?}");
    // Each message of the first batch was handled twice (its first batch's sends did not all
    // succeed), any other once; each job is forwarded once more than it failed to be.
    let handled = calls_per_job(&app.calls_of("batch_forwarder"));
    let out = app.calls_of("tx_reader");
    let forwarded = |id: u64| {
        (out.iter())
            .filter(|c| c.payload::<Job>().expect("a job").id == id)
            .count()
    };
    for id in ids {
        let twice = first.contains(&id);
        assert_eq!(
            handled.get(&id),
            Some(&(1 + usize::from(twice))),
            "job {id}: {batches:?}"
        );
    }
    assert_eq!(forwarded(FAILING_SEND), 1, "once, on its second attempt");
    for id in [1, 2] {
        let expected = 1 + usize::from(first.contains(&id));
        assert_eq!(forwarded(id), expected, "job {id}: {batches:?}");
    }
    if exact {
        assert_eq!(first, ids, "one batch");
        assert_eq!(batches.len(), 2, "{batches:?}");
    }
    if let Some(backlog) = app.backlog("bh-fwd-in", "bh-fwd").await {
        assert_eq!(backlog, 0, "every message acknowledged in the end");
    }
    app.stop().await;
}
