//! Chunked messages (PIP-37) on the in-process Pulsar, on the virtual clock: a message stored
//! as chunks, as another client's chunking producer writes it, reaches the handler once and
//! whole; a retry brings it back whole; out of attempts it reaches the dead-letter topic whole
//! (published in chunks by ruststream, which joins them again on the way out); through a batch
//! handler each reaches it whole and is settled on its own. Run on tokio,
//! async-std and smol.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use ruststream::message::Message;
use ruststream::runtime::Spawn;
use ruststream::HandlerOutcome;
use ruststream_pulsar::testing::TestApp;
use ruststream_pulsar::INCOMPLETE_CHUNKED_MESSAGE_EXPIRY;
use ruststream_tests::scenario::*;

/// The chunk size of the chunking producers here: a 10 000-byte job makes 4 chunks.
const CHUNK: usize = 3000;

/// The broker limit the app publishes under: its dead-letter copies of such a job are chunked.
const LIMIT: usize = 4096;

/// A job of about `size` bytes of JSON (its padding is ignored when it is decoded).
fn big_job(id: u64, size: usize) -> Vec<u8> {
    let head = format!("{{\"id\":{id},\"pad\":\"");
    let pad = "x".repeat(size - head.len() - 2);
    format!("{head}{pad}\"}}").into_bytes()
}

/// A message to `jobs`.
fn message(payload: Vec<u8>, properties: &[(&str, &str)], key: Option<&str>) -> Message {
    let mut message = Message::new("jobs", payload);
    message.properties = properties
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    message.key = key.map(str::to_owned);
    message
}

async fn a_chunked_message_reaches_the_handler_once_and_whole(spawn: Arc<dyn Spawn>) {
    let app = TestApp::with_state(
        app(|b| {
            b.include(shared);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    let payload = big_job(1, 10_000);
    app.pulsar()
        .publish_chunked(message(payload.clone(), &[("trace", "t1")], None), CHUNK)
        .expect("stored");
    app.settle().await.unwrap();
    assert_eq!(app.topic("jobs").len(), 4, "stored as 4 chunks");
    let calls = app.calls_of("shared");
    assert_eq!(calls.len(), 1, "once: {calls:?}");
    assert_eq!(calls[0].payload_bytes(), payload, "whole");
    assert_eq!(calls[0].property("trace"), Some("t1"));
    app.advance(Duration::from_secs(30)).await.unwrap();
    assert_eq!(app.calls_of("shared").len(), 1, "and never again");
    assert_eq!(
        app.pulsar().backlog("jobs", "shared").unwrap(),
        Some(0),
        "every chunk acknowledged"
    );
    app.stop().await;
}

async fn a_retried_chunked_message_comes_back_whole(spawn: Arc<dyn Spawn>) {
    let app = TestApp::with_state(
        app(|b| {
            b.include(shared);
        }),
        Plan::new(Script::new(
            [ret(HandlerOutcome::retry())],
            ret(HandlerOutcome::ack()),
        )),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    let payload = big_job(2, 10_000);
    app.pulsar()
        .publish_chunked(Message::new("jobs", payload.clone()), CHUNK)
        .expect("stored");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(30)).await.unwrap();
    let calls = app.calls_of("shared");
    assert_eq!(calls.len(), 2, "retried once: {calls:?}");
    for call in &calls {
        assert_eq!(call.payload_bytes(), payload, "whole each time");
    }
    let counts: Vec<u32> = calls.iter().map(|c| c.redelivery_count()).collect();
    assert_eq!(counts, [0, 1], "the message's redelivery count");
    assert_eq!(calls[0].at(), calls[1].at(), "the nack redelivers at once");
    assert_eq!(app.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    app.stop().await;
}

async fn out_of_attempts_a_chunked_message_is_dead_lettered_whole(spawn: Arc<dyn Spawn>) {
    let app = TestApp::with_state(
        chunking_app(LIMIT, |b| {
            b.include(shared)
                .max_attempts(NonZeroU32::new(2).unwrap())
                .dead_letter("jobs-dlq");
            b.include(dead_letters);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::retry()))),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    let payload = big_job(3, 10_000);
    app.pulsar()
        .publish_chunked(message(payload.clone(), &[], Some("card-3")), CHUNK)
        .expect("stored");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(30)).await.unwrap();
    assert_eq!(app.calls_of("shared").len(), 2, "max_attempts calls");
    let dead = app.calls_of("dead_letters");
    assert_eq!(dead.len(), 1, "one message dead-lettered: {dead:?}");
    assert_eq!(dead[0].payload_bytes(), payload, "the whole payload");
    assert_eq!(
        dead[0].property("DEAD_LETTER_REASON"),
        Some("out-of-attempts")
    );
    let copy = app.topic("jobs-dlq");
    let sizes: Vec<usize> = copy.iter().map(|c| c.payload.len()).collect();
    // Chunks of 4096 less the metadata each repeats (1024, the copy's properties and key).
    assert_eq!(sizes.len(), 4, "the copy is chunked: {sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), payload.len());
    assert!(copy.iter().all(|c| c.key.as_deref() == Some("card-3")));
    assert_eq!(app.pulsar().backlog("jobs", "shared").unwrap(), Some(0));
    app.stop().await;
}

async fn a_message_over_the_limit_is_published_in_chunks(spawn: Arc<dyn Spawn>) {
    let app = TestApp::with_state(
        chunking_app(LIMIT, |b| {
            b.include(shared);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    let small = big_job(4, 1000);
    let large = big_job(5, 20_000);
    app.publish(Message::new("jobs", small.clone()))
        .await
        .unwrap();
    app.publish(Message::new("jobs", large.clone()))
        .await
        .unwrap();
    let stored = app.topic("jobs");
    assert_eq!(
        stored.len(),
        1 + 7,
        "one whole message, then 7 chunks of at most 3072 bytes"
    );
    let calls = app.calls_of("shared");
    let payloads: Vec<&[u8]> = calls.iter().map(|c| c.payload_bytes()).collect();
    assert_eq!(payloads, [&small[..], &large[..]]);
    app.stop().await;
}

async fn an_incomplete_chunked_message_is_dropped_after_the_expiry(spawn: Arc<dyn Spawn>) {
    let app = TestApp::with_state(
        app(|b| {
            b.include(shared);
        }),
        Plan::new(Script::always(ret(HandlerOutcome::ack()))),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    // The first two chunks of three: the producer died before the last.
    app.pulsar()
        .publish_first_chunks(Message::new("jobs", big_job(6, 9000)), CHUNK, 2)
        .expect("stored");
    app.settle().await.unwrap();
    assert!(
        app.calls_of("shared").is_empty(),
        "nothing whole to hand over"
    );
    app.advance(INCOMPLETE_CHUNKED_MESSAGE_EXPIRY)
        .await
        .unwrap();
    // The next delivery finds the expired message and its acknowledgement takes the chunks.
    app.publish(Message::new("jobs", big_job(7, 100)))
        .await
        .unwrap();
    assert_eq!(app.calls_of("shared").len(), 1);
    assert_eq!(
        app.pulsar().backlog("jobs", "shared").unwrap(),
        Some(0),
        "the dropped chunks are acknowledged with the next message"
    );
    app.stop().await;
}

/// Chunked messages through a batch handler: two messages stored as chunks and one whole go
/// in one batch, each whole; the one retried comes back alone, whole, and every chunk is
/// acknowledged.
async fn chunked_messages_reach_a_batch_handler_whole(spawn: Arc<dyn Spawn>) {
    let script = Script::by_job(|id, attempt| match (id, attempt) {
        (2, 0) => HandlerOutcome::retry(),
        _ => HandlerOutcome::ack(),
    });
    let app = TestApp::with_state(
        app(|b| {
            b.include(
                batch_handler
                    .batch(ruststream::nonzero!(10))
                    .batch_wait(BATCH_WAIT),
            );
        }),
        Plan::new(script.clone()),
    )
    .on(spawn)
    .await
    .expect("the app starts");
    let (one, two, three) = (big_job(1, 10_000), big_job(2, 7_000), big_job(3, 100));
    for payload in [&one, &two] {
        app.pulsar()
            .publish_chunked(Message::new("jobs-bh", payload.clone()), CHUNK)
            .expect("stored");
    }
    app.pulsar()
        .publish_chunked(Message::new("jobs-bh", three.clone()), CHUNK)
        .expect("stored");
    app.settle().await.unwrap();
    app.advance(Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        app.topic("jobs-bh").len(),
        4 + 3 + 1,
        "stored as chunks, and one whole"
    );
    let ids: Vec<Vec<u64>> = (script.batches().iter())
        .map(|b| b.iter().map(|(id, _)| *id).collect())
        .collect();
    let timeline: Vec<_> = (app.calls_of("batch_handler").iter())
        .map(|c| {
            (
                c.payload_bytes().len(),
                c.redelivery_count(),
                c.at(),
                c.completion(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [vec![1, 2, 3], vec![2]],
        "one batch, then the retried one alone: {timeline:?}"
    );
    let calls = app.calls_of("batch_handler");
    let seen: Vec<(usize, u32)> = (calls.iter())
        .map(|c| (c.payload_bytes().len(), c.redelivery_count()))
        .collect();
    assert_eq!(calls.len(), 4, "{seen:?}");
    for (payload, count) in [(&one, 1), (&two, 2), (&three, 1)] {
        let whole: Vec<_> = (calls.iter())
            .filter(|c| c.payload_bytes() == &payload[..])
            .collect();
        assert_eq!(
            whole.len(),
            count,
            "each whole, as often as answered: {seen:?}"
        );
    }
    assert_eq!(
        app.pulsar().backlog("jobs-bh", "bh-ks").unwrap(),
        Some(0),
        "every chunk acknowledged"
    );
    app.stop().await;
}

ruststream_tests::on_every_runtime!(
    chunked_messages_reach_a_batch_handler_whole,
    a_chunked_message_reaches_the_handler_once_and_whole,
    a_retried_chunked_message_comes_back_whole,
    out_of_attempts_a_chunked_message_is_dead_lettered_whole,
    a_message_over_the_limit_is_published_in_chunks,
    an_incomplete_chunked_message_is_dropped_after_the_expiry,
);
