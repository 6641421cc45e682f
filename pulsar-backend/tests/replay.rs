//! The dead-letter replay's library call on the in-process Pulsar: what it moves, what it
//! leaves, and what the copies carry; its rate on a virtual clock; a stop; and a replay into a
//! running app, whose handler gets the message again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ruststream::app::StartContext;
use ruststream::message::Message;
use ruststream::runtime::{Runtime, WithClock};
use ruststream::ManualClock;
use ruststream_pulsar::replay::{
    self, Rate, Replay, ReplayEnd, ReplayEvent, ReplayOptions, ReplaySummary, DEAD_LETTER_REASON,
    DEFAULT_REPLAY_SUBSCRIPTION, ORIGIN_MESSAGE_ID, REAL_TOPIC, REPLAYED_FROM,
};
use ruststream_pulsar::{InProcessPulsar, PulsarBroker, TopicMessage};

const DLQ: &str = "persistent://public/default/refunds-dlq";
const REFUNDS: &str = "persistent://public/default/refunds";

fn runtime() -> Arc<dyn Runtime> {
    Arc::new(ruststream_tokio::TokioRuntime::current())
}

/// A dead-lettered message as the dead-letter step writes it: from `REFUNDS`, for `reason`.
fn dead(n: u32, reason: &str) -> Message {
    Message::new(DLQ, format!("{{\"id\":{n}}}").into_bytes())
        .key(format!("card-{n}"))
        .property("origin", "test")
        .property(REAL_TOPIC, REFUNDS)
        .property(ORIGIN_MESSAGE_ID, format!("3:{n}:-1"))
        .property(DEAD_LETTER_REASON, reason)
}

/// Run `options` on `pulsar`; the summary and every event.
async fn replay_on(
    pulsar: &InProcessPulsar,
    options: ReplayOptions,
) -> (ReplaySummary, Vec<ReplayEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let replay = Replay::new(options).on_event(move |e| seen.lock().unwrap().push(e.clone()));
    let context = StartContext::new(runtime())
        .in_process()
        .with(pulsar.clone());
    let summary = replay::run(
        PulsarBroker::<()>::new("pulsar://unused:6650"),
        replay,
        context,
    )
    .await
    .expect("the replay runs");
    let events = events.lock().unwrap().clone();
    (summary, events)
}

fn ids(messages: &[TopicMessage]) -> Vec<String> {
    let mut ids: Vec<String> = messages
        .iter()
        .map(|m| String::from_utf8(m.payload.clone()).unwrap())
        .collect();
    ids.sort();
    ids
}

fn backlog(pulsar: &InProcessPulsar) -> Option<usize> {
    pulsar.backlog(DLQ, DEFAULT_REPLAY_SUBSCRIPTION).unwrap()
}

#[tokio::test]
async fn every_message_goes_back_once_with_its_key_and_properties_less_the_dead_letter_ones() {
    let pulsar = InProcessPulsar::new();
    pulsar
        .publish_batch((0..4).map(|n| dead(n, "timeout")))
        .unwrap();
    for n in 4..7 {
        pulsar.publish(dead(n, "timeout")).unwrap();
    }
    let (summary, events) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq")).await;
    assert_eq!((summary.moved, summary.failed), (7, 0), "{summary}");
    assert_eq!(summary.duplicates_possible, 0, "{summary}");
    assert_eq!(summary.end, ReplayEnd::Drained);
    assert_eq!(backlog(&pulsar), Some(0), "every original acknowledged");

    let back = pulsar.topic_messages(REFUNDS).unwrap();
    assert_eq!(
        ids(&back),
        (0..7)
            .map(|n| format!("{{\"id\":{n}}}"))
            .collect::<Vec<_>>()
    );
    let dead_ids: Vec<String> = pulsar
        .topic_messages(DLQ)
        .unwrap()
        .iter()
        .map(|m| m.message_id.to_string())
        .collect();
    for copy in &back {
        let n: u32 = copy.decode::<serde_json::Value>().unwrap()["id"]
            .as_u64()
            .unwrap() as u32;
        assert_eq!(copy.key.as_deref(), Some(format!("card-{n}").as_str()));
        assert_eq!(copy.property("origin"), Some("test"));
        for gone in [REAL_TOPIC, ORIGIN_MESSAGE_ID, DEAD_LETTER_REASON] {
            assert_eq!(copy.property(gone), None, "{gone} dropped");
        }
        let from = copy.property(REPLAYED_FROM).expect("REPLAYED_FROM set");
        let (topic, id) = from.split_once('@').unwrap();
        assert_eq!(topic, DLQ);
        assert!(
            dead_ids.iter().any(|d| d == id),
            "{from} names a DLQ message"
        );
    }
    assert!(matches!(&events[0], ReplayEvent::Started { from, .. } if from == DLQ));
    let moved = events
        .iter()
        .filter(|e| matches!(e, ReplayEvent::Moved { to, .. } if to == REFUNDS))
        .count();
    assert_eq!(moved, 7);

    // Nothing is left: a second replay moves nothing.
    let (again, _) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq")).await;
    assert_eq!(again.moved, 0, "{again}");
    assert_eq!(pulsar.topic_messages(REFUNDS).unwrap().len(), 7);
}

#[tokio::test]
async fn a_filter_moves_its_messages_and_leaves_the_others_for_a_later_replay() {
    let pulsar = InProcessPulsar::new();
    for n in 0..6 {
        let reason = if n % 2 == 0 {
            "timeout"
        } else {
            "card-declined"
        };
        pulsar.publish(dead(n, reason)).unwrap();
    }
    let options =
        ReplayOptions::new("refunds-dlq").filter("DEAD_LETTER_REASON=timeout".parse().unwrap());
    let (summary, events) = replay_on(&pulsar, options).await;
    assert_eq!(
        (summary.moved, summary.skipped_by_filter),
        (3, 3),
        "{summary}"
    );
    assert_eq!(backlog(&pulsar), Some(3), "the declined ones stay");
    assert_eq!(
        ids(&pulsar.topic_messages(REFUNDS).unwrap()),
        ["{\"id\":0}", "{\"id\":2}", "{\"id\":4}"]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, ReplayEvent::Filtered { .. }))
            .count(),
        3
    );

    let (rest, _) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq")).await;
    assert_eq!((rest.moved, rest.skipped_by_filter), (3, 0), "{rest}");
    assert_eq!(backlog(&pulsar), Some(0));
    assert_eq!(
        pulsar.topic_messages(REFUNDS).unwrap().len(),
        6,
        "none twice"
    );
}

#[tokio::test]
async fn a_limit_stops_the_replay_and_the_next_one_continues() {
    let pulsar = InProcessPulsar::new();
    for n in 0..5 {
        pulsar.publish(dead(n, "timeout")).unwrap();
    }
    let (first, _) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq").limit(2)).await;
    assert_eq!((first.moved, first.end), (2, ReplayEnd::Limit), "{first}");
    assert_eq!(backlog(&pulsar), Some(3));
    let (second, _) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq")).await;
    assert_eq!(
        (second.moved, second.end),
        (3, ReplayEnd::Drained),
        "{second}"
    );
    assert_eq!(
        ids(&pulsar.topic_messages(REFUNDS).unwrap()),
        (0..5)
            .map(|n| format!("{{\"id\":{n}}}"))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_dry_run_reports_what_would_move_and_changes_nothing() {
    let pulsar = InProcessPulsar::new();
    for n in 0..3 {
        pulsar.publish(dead(n, "timeout")).unwrap();
    }
    let (summary, events) =
        replay_on(&pulsar, ReplayOptions::new("refunds-dlq").dry_run(true)).await;
    assert!(summary.dry_run);
    assert_eq!(summary.moved, 3, "would move: {summary}");
    assert!(
        summary.to_string().starts_with("would move 3,"),
        "{summary}"
    );
    assert!(
        pulsar.topic_messages(REFUNDS).unwrap().is_empty(),
        "nothing published"
    );
    assert_eq!(backlog(&pulsar), Some(3), "nothing acknowledged");
    let would: Vec<String> = events
        .iter()
        .filter(|e| matches!(e, ReplayEvent::WouldMove { .. }))
        .map(ToString::to_string)
        .collect();
    assert_eq!(would.len(), 3);
    assert!(
        would[0].starts_with("would move ") && would[0].ends_with(REFUNDS),
        "{would:?}"
    );
}

#[tokio::test]
async fn a_message_that_names_no_topic_stays_unless_one_is_given() {
    let pulsar = InProcessPulsar::new();
    pulsar
        .publish(Message::new(DLQ, b"orphan".to_vec()).property("k", "v"))
        .unwrap();
    let (summary, events) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq")).await;
    assert_eq!(
        (summary.moved, summary.skipped_without_topic),
        (0, 1),
        "{summary}"
    );
    assert_eq!(backlog(&pulsar), Some(1), "left unacknowledged");
    let line = events
        .iter()
        .find(|e| matches!(e, ReplayEvent::NoTarget { .. }))
        .expect("reported")
        .to_string();
    assert!(
        line.contains("no REAL_TOPIC") && line.contains("--to"),
        "{line}"
    );

    let (to, _) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq").to("orphans")).await;
    assert_eq!(to.moved, 1, "{to}");
    let copy = &pulsar.topic_messages("orphans").unwrap()[0];
    assert_eq!(
        (copy.payload.as_slice(), copy.property("k")),
        (&b"orphan"[..], Some("v"))
    );
    assert_eq!(backlog(&pulsar), Some(0));
}

#[tokio::test]
async fn a_batched_entry_moved_in_part_stays_and_its_moved_messages_are_counted_as_possible_duplicates(
) {
    // The model, like a broker without batch-index acknowledgement, acknowledges whole
    // entries: an entry with a message left must stay, and its moved messages come again.
    let pulsar = InProcessPulsar::new();
    pulsar
        .publish_batch([
            dead(0, "timeout"),
            dead(1, "card-declined"),
            dead(2, "timeout"),
        ])
        .unwrap();
    let options =
        ReplayOptions::new("refunds-dlq").filter("DEAD_LETTER_REASON=timeout".parse().unwrap());
    let (summary, events) = replay_on(&pulsar, options).await;
    assert_eq!(
        (
            summary.moved,
            summary.skipped_by_filter,
            summary.duplicates_possible
        ),
        (2, 1, 2),
        "{summary}"
    );
    assert_eq!(backlog(&pulsar), Some(1), "the entry stays, whole");
    assert!(events
        .iter()
        .any(|e| matches!(e, ReplayEvent::Unacknowledged { ids, .. } if ids.len() == 2)));
    // As reported: the next replay moves the entry's three messages, two of them again.
    let (rest, _) = replay_on(&pulsar, ReplayOptions::new("refunds-dlq")).await;
    assert_eq!((rest.moved, rest.duplicates_possible), (3, 0), "{rest}");
    assert_eq!(backlog(&pulsar), Some(0));
    assert_eq!(
        ids(&pulsar.topic_messages(REFUNDS).unwrap()),
        [
            "{\"id\":0}",
            "{\"id\":0}",
            "{\"id\":1}",
            "{\"id\":2}",
            "{\"id\":2}"
        ]
    );
}

#[tokio::test]
async fn moves_are_spaced_at_the_rate_on_the_clock_the_replay_runs_on() {
    let pulsar = InProcessPulsar::new();
    for n in 0..5 {
        pulsar.publish(dead(n, "timeout")).unwrap();
    }
    let clock = ManualClock::new();
    let runtime = Arc::new(WithClock::new(
        ruststream_tokio::TokioRuntime::current(),
        clock.clone(),
    ));
    let context = StartContext::new(runtime).in_process().with(pulsar.clone());
    let options = ReplayOptions::new("refunds-dlq").rate("2/s".parse::<Rate>().unwrap());
    let replaying = tokio::spawn(replay::run(
        PulsarBroker::<()>::new("pulsar://unused:6650"),
        Replay::new(options),
        context,
    ));
    // Move the virtual clock to each sleep the replay arms, until it is done.
    while !replaying.is_finished() {
        tokio::task::yield_now().await;
        clock.advance_to_next_deadline();
    }
    let summary = replaying.await.unwrap().unwrap();
    assert_eq!(summary.moved, 5, "{summary}");
    let at: Vec<Duration> = pulsar
        .topic_messages(REFUNDS)
        .unwrap()
        .iter()
        .map(|m| m.published_at.elapsed_since_origin())
        .collect();
    assert_eq!(
        at,
        [0, 500, 1000, 1500, 2000].map(Duration::from_millis),
        "one every 500 ms"
    );
}

#[tokio::test]
async fn a_stop_ends_the_replay_between_two_messages() {
    let pulsar = InProcessPulsar::new();
    for n in 0..4 {
        pulsar.publish(dead(n, "timeout")).unwrap();
    }
    let (tx, rx) = futures::channel::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let moved = Arc::new(Mutex::new(0));
    let count = moved.clone();
    // Stop once the second message moved.
    let replay = Replay::new(ReplayOptions::new("refunds-dlq"))
        .on_event(move |e| {
            if matches!(e, ReplayEvent::Moved { .. }) {
                *count.lock().unwrap() += 1;
                if *count.lock().unwrap() == 2 {
                    let _ = tx.lock().unwrap().take().map(|tx| tx.send(()));
                }
            }
        })
        .stop_when(async move {
            let _ = rx.await;
        });
    let context = StartContext::new(runtime())
        .in_process()
        .with(pulsar.clone());
    let summary = replay::run(
        PulsarBroker::<()>::new("pulsar://unused:6650"),
        replay,
        context,
    )
    .await
    .unwrap();
    assert_eq!(
        (summary.moved, summary.end),
        (2, ReplayEnd::Stopped),
        "{summary}"
    );
    assert_eq!(pulsar.topic_messages(REFUNDS).unwrap().len(), 2);
    assert_eq!(
        backlog(&pulsar),
        Some(2),
        "the others wait for the next replay"
    );
}

/// A chunked dead letter (a message over the broker's limit, dead-lettered in chunks) stops the
/// replay before anything of it is copied: the replay does not join chunks, and a chunk copied
/// on its own would reach the original topic broken. The chunks stay on the dead-letter topic.
#[tokio::test]
async fn a_chunked_dead_letter_stops_the_replay_and_stays() {
    let pulsar = InProcessPulsar::new();
    let mut large = dead(1, "out-of-attempts");
    large.payload = vec![b'x'; 10_000];
    pulsar.publish_chunked(large, 3000).unwrap();
    let context = StartContext::new(runtime())
        .in_process()
        .with(pulsar.clone());
    let refused = replay::run(
        PulsarBroker::<()>::new("pulsar://unused:6650"),
        Replay::new(ReplayOptions::new("refunds-dlq")),
        context,
    )
    .await
    .expect_err("the replay stops at the chunk");
    let text = refused.to_string();
    assert!(
        text.contains("chunks of a chunked message"),
        "the error says why: {text}"
    );
    assert!(
        pulsar.topic_messages(REFUNDS).unwrap().is_empty(),
        "nothing copied to the original topic"
    );
    assert_eq!(
        pulsar.topic_messages(DLQ).unwrap().len(),
        4,
        "the chunks stay"
    );
}
