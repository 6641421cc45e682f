//! Partitioned topics: nothing lost on Shared, KeyShared and Failover, the dead letter
//! names the partition, and a key keeps to one partition.

use super::*;

/// Messages of the partitioned cases, in batches of [`BATCH_SIZE`].
const PARTITIONED: u64 = 100;

/// The names of a partitioned topic's partitions.
fn partitions_of(topic: &str) -> Vec<String> {
    (0..PARTITIONS)
        .map(|i| format!("{topic}-partition-{i}"))
        .collect()
}

/// The partition a call's message came from, by its topic.
fn partition_of(call: &ruststream_pulsar::testing::Call) -> u32 {
    let (_, index) = call
        .topic()
        .rsplit_once("-partition-")
        .unwrap_or_else(|| panic!("{} is not a partition", call.topic()));
    index
        .parse()
        .unwrap_or_else(|e| panic!("{} is not a partition: {e}", call.topic()))
}

/// A 4-partition topic read by `handler`, published to by batching producers, odd ids
/// retried once: every id is handled and acknowledged, from every partition. `keyed` publishes
/// with key-based batching (each batch one key, as the Java client's `KEY_BASED` batcher
/// does), which KeyShared needs; otherwise each batch is keyless and goes to the next
/// partition in turn. `exact`: each id is handled exactly as often as retried (Shared and
/// KeyShared); Failover's redelivery rewinds its partition's cursor, and pulsar-rs hands over
/// what was queued again, so there an id may come more often, never less.
async fn partitioned_retried_once(
    env: Env,
    (handler, topic, subscription): (&'static str, &'static str, &'static str),
    mount: fn(&mut ruststream_pulsar::PulsarBroker<Plan>),
    keyed: bool,
    exact: bool,
) {
    let app = env
        .start_partitioned(
            app(mount),
            Script::by_job(|id, attempt| {
                if id % 2 == 1 && attempt == 0 {
                    HandlerOutcome::retry()
                } else {
                    HandlerOutcome::ack()
                }
            }),
            &[(topic, PARTITIONS)],
        )
        .await;
    for batch in 0..PARTITIONED / BATCH_SIZE {
        let records: Vec<Message> = (0..BATCH_SIZE)
            .map(|i| {
                let id = batch * BATCH_SIZE + i;
                let record = Message::new(topic, job(id));
                if keyed {
                    record.key(format!("key-{batch}"))
                } else {
                    record
                }
            })
            .collect();
        let ids = app.publish_batch(records).await;
        assert_one_entry(&ids);
    }
    let expected = (PARTITIONED + PARTITIONED / 2) as usize;
    app.until_calls(handler, expected, SOON).await;
    app.pass(QUIET).await;
    let calls = app.calls_of(handler);
    let seen = calls_per_job(&calls);
    for id in 0..PARTITIONED {
        let times = seen.get(&id).copied().unwrap_or(0);
        let want = 1 + (id % 2) as usize;
        if exact {
            assert_eq!(times, want, "job {id}: {seen:?}");
        } else {
            assert!(
                times >= want,
                "job {id} handled {times} times, fewer than {want}"
            );
        }
    }
    // The last outcome of every job is an acknowledgement.
    let mut last = std::collections::BTreeMap::new();
    for call in &calls {
        let job: Job = serde_json::from_slice(call.payload_bytes()).expect("a job");
        last.insert(job.id, call.outcome());
    }
    assert!(
        last.values().all(|o| *o == Some(HandlerOutcome::ack())),
        "every job ends acknowledged: {last:?}"
    );
    let partitions: std::collections::BTreeSet<u32> = calls.iter().map(partition_of).collect();
    assert_eq!(
        partitions.len(),
        PARTITIONS as usize,
        "read from every partition"
    );
    // Each delivery's id names its partition, as the Java client prints it.
    for call in &calls {
        let id = call.message_id();
        assert_eq!(id.parts()[2], i64::from(partition_of(call)), "{id}");
    }
    for partition in partitions_of(topic) {
        if let Some(backlog) = app.backlog(&partition, subscription).await {
            assert_eq!(backlog, 0, "every entry of {partition} acknowledged");
        }
    }
    app.stop().await;
}

/// Shared on a 4-partition topic.
pub async fn partitioned_shared_loses_nothing(env: Env) {
    partitioned_retried_once(
        env,
        ("part_shared", "jobs-part", "part-shared"),
        |b| {
            b.include(part_shared);
        },
        false,
        true,
    )
    .await;
}

/// KeyShared on a 4-partition topic, with key-based batching.
pub async fn partitioned_key_shared_loses_nothing(env: Env) {
    partitioned_retried_once(
        env,
        ("part_key_shared", "jobs-part-ks", "part-key-shared"),
        |b| {
            b.include(part_key_shared);
        },
        true,
        true,
    )
    .await;
}

/// Failover on a 4-partition topic.
pub async fn partitioned_failover_loses_nothing(env: Env) {
    partitioned_retried_once(
        env,
        ("part_failover", "jobs-part-fo", "part-failover"),
        |b| {
            b.include(part_failover);
        },
        false,
        false,
    )
    .await;
}

/// A message of a partitioned topic that runs out of attempts reaches the dead-letter topic
/// with `REAL_TOPIC` naming its partition (as the Java client writes it) and its id.
pub async fn partitioned_dead_letter_names_the_partition(env: Env) {
    let app = env
        .start_partitioned(
            app(|b| {
                b.include(part_shared)
                    .max_attempts(n(2))
                    .dead_letter("jobs-part-dlq");
                b.include(part_dead_letters);
            }),
            Script::always(ret(HandlerOutcome::retry())),
            &[("jobs-part", PARTITIONS)],
        )
        .await;
    app.publish("jobs-part", job(9), vec![], Some("card-9".into()))
        .await;
    let dead = app.until_calls("part_dead_letters", 1, SOON).await;
    assert_eq!(dead.len(), 1);
    let calls = app.calls_of("part_shared");
    assert_eq!(calls.len(), 2, "exactly max_attempts deliveries");
    let expected = key_partition(ruststream_pulsar::HashingScheme::JavaString, "card-9");
    assert_eq!(partition_of(&calls[0]), expected, "routed by its key");
    let real_topic = dead[0].property("REAL_TOPIC").expect("REAL_TOPIC");
    assert_eq!(real_topic, calls[0].topic());
    assert!(
        real_topic.starts_with("persistent://")
            && real_topic.ends_with(&format!("/jobs-part-partition-{expected}")),
        "{real_topic}"
    );
    assert_eq!(
        dead[0].property("ORIGIN_MESSAGE_ID"),
        Some(calls[0].message_id().to_string().as_str())
    );
    app.stop().await;
}

/// The partition a key goes to on a topic of [`PARTITIONS`] partitions.
fn key_partition(hashing: ruststream_pulsar::HashingScheme, key: &str) -> u32 {
    ruststream_pulsar_model::partition_for_key(hashing, key, PARTITIONS)
}

/// Keyed publishes to a partitioned topic: every message of a key lands on the partition its
/// key hashes to (the Java client's default hash), so a key keeps its order; keyless ones take
/// the partitions in turn.
pub async fn keyed_publishes_keep_a_key_on_one_partition(env: Env) {
    let app = env
        .start_partitioned(
            app(|b| {
                b.include(part_shared);
            }),
            Script::always(ret(HandlerOutcome::ack())),
            &[("jobs-part", PARTITIONS)],
        )
        .await;
    for id in 0..40u64 {
        app.publish(
            "jobs-part",
            job(id),
            vec![],
            Some(format!("card-{}", id % 10)),
        )
        .await;
    }
    for id in 40..48u64 {
        app.publish("jobs-part", job(id), vec![], None).await;
    }
    let calls = app.until_calls("part_shared", 48, SOON).await;
    assert_eq!(calls.len(), 48);
    let mut keyless = Vec::new();
    for call in &calls {
        let job: Job = serde_json::from_slice(call.payload_bytes()).expect("a job");
        if job.id < 40 {
            let key = format!("card-{}", job.id % 10);
            assert_eq!(
                partition_of(call),
                key_partition(ruststream_pulsar::HashingScheme::JavaString, &key),
                "job {} with key {key}",
                job.id
            );
        } else {
            keyless.push(partition_of(call));
        }
    }
    keyless.sort();
    assert_eq!(
        keyless,
        [0, 0, 1, 1, 2, 2, 3, 3],
        "keyless: each partition in turn"
    );
    app.stop().await;
}
