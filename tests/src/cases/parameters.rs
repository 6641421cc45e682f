//! What reaches the handler: a message's parts, a raw payload, a MessagePack payload.

use super::*;

/// A handler's message parameters: properties, key, id, redelivery count, publish and event
/// time, topic. Retried once, so the second delivery shows the same id with count 1.
pub async fn message_parts_reach_the_handler(env: Env) {
    let script = Script::new([ret(HandlerOutcome::retry())], ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(inspect);
            }),
            script.clone(),
        )
        .await;
    let properties = vec![
        ("tenant".to_owned(), "acme".to_owned()),
        ("trace".to_owned(), "t-7".to_owned()),
    ];
    app.publish("jobs-parts", job(7), properties, Some("card-7".into()))
        .await;
    let calls = app.until_calls("inspect", 2, SOON).await;
    assert_eq!(calls.len(), 2, "delivered, retried, delivered again");
    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    for (n, (seen, call)) in seen.iter().zip(&calls).enumerate() {
        let mut properties = seen.properties.clone();
        properties.sort();
        assert_eq!(
            properties,
            [
                ("tenant".to_owned(), "acme".to_owned()),
                ("trace".to_owned(), "t-7".to_owned())
            ]
        );
        assert_eq!(seen.key.as_deref(), Some("card-7"));
        assert_eq!(
            seen.message_id,
            call.message_id().to_string(),
            "the broker's id, as recorded"
        );
        assert_eq!(seen.redelivery_count, Some(n as u32), "delivery {n}");
        assert!(seen.topic.ends_with("/jobs-parts"), "{}", seen.topic);
        assert_eq!(seen.event_time, None, "published without one");
        assert_eq!(seen.payload, b"7");
    }
    assert_eq!(
        seen[0].message_id, seen[1].message_id,
        "same message, same id"
    );
    assert_eq!(seen[0].publish_time, seen[1].publish_time, "stored once");
    if !env.exact() {
        // A real broker stamps the Unix time: after 2020-01-01.
        assert!(seen[0].publish_time > Duration::from_secs(1_577_836_800));
    }
    app.stop().await;
}

/// A `&[u8]` payload parameter receives the bytes as published, even when they are not JSON.
pub async fn raw_payload_reaches_the_handler_undecoded(env: Env) {
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(raw_reader);
            }),
            script.clone(),
        )
        .await;
    let bytes = vec![0xff, 0x00, b'n', b'o', b't', b' ', b'j', b's', b'o', b'n'];
    app.publish("jobs-raw", bytes.clone(), vec![], None).await;
    let calls = app.until_calls("raw_reader", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::ack()));
    assert_eq!(script.seen()[0].payload, bytes);
    app.stop().await;
}

/// A type published in MessagePack (`#[outgoing(codec = "msgpack")]`) is decoded by a
/// `&MsgPack<T>` payload parameter.
pub async fn msgpack_payload_round_trips(env: Env) {
    use ruststream::Outgoing;
    let script = Script::always(ret(HandlerOutcome::ack()));
    let app = env
        .start(
            app(|b| {
                b.include(packed_reader);
            }),
            script.clone(),
        )
        .await;
    let bytes = PackedJob { id: 9 }.encode().expect("encodes");
    assert_eq!(bytes[0], 0x81, "MessagePack (a one-entry map), not JSON");
    app.publish(PackedJob::TOPIC, bytes, vec![], None).await;
    let calls = app.until_calls("packed_reader", 1, SOON).await;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].outcome(), Some(HandlerOutcome::ack()));
    assert_eq!(script.seen()[0].payload, b"9");
    app.stop().await;
}
