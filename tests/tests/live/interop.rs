//! Messages as the official Python client writes and reads them, on Apache Pulsar: every
//! compression codec, batched, and a registered JSON schema, in both directions.
//!
//! The Python client (pulsar-client 3.13.0) runs the C++ client underneath, as the Go and Java
//! clients behave here: what it writes is what a Java or Go service on the same topic writes.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use ruststream::message::Message;
use ruststream::{Compression, HandlerOutcome};
use ruststream_pulsar::testing::LiveApp;
use ruststream_tests::scenario::{app, ret, shared, Job, Plan, Script};

use super::Target;

/// Messages per run: one batch.
const COUNT: usize = 50;
/// How long the other side has to see them all.
const WITHIN: Duration = Duration::from_secs(60);

/// The codecs every Pulsar client reads.
pub(crate) const CODECS: [&str; 5] = ["none", "lz4", "zlib", "zstd", "snappy"];

/// `{"id":0}` .. `{"id":49}`, as both sides write them.
fn expected_ids() -> BTreeSet<u64> {
    (0..COUNT as u64).collect()
}

/// The Python client publishes one batch of 50 with `codec` (and a registered JSON schema when
/// `json_schema`); a ruststream handler receives each exactly once, whole, and acknowledges it:
/// afterwards the Python client finds nothing left on the subscription.
pub(crate) fn python_writes(target: &Target, codec: &str, json_schema: bool) -> Result<(), Failed> {
    let what = if json_schema { "json-schema" } else { codec };
    let namespace = target.namespace("interop-from-python", what)?;
    let topic = format!("persistent://{namespace}/jobs");
    let (rt, runtime) = super::tokio_runtime()?;
    let seen: Vec<u64> = rt.block_on(async {
        let app = LiveApp::with_state(
            app(|b| {
                b.include(shared);
            }),
            Plan::new(Script::always(ret(HandlerOutcome::ack()))),
            runtime,
        )
        .url(target.url.clone())
        .namespace(namespace.clone())
        .await
        .map_err(|e| Failed::from(e.to_string()))?;
        // Published once the subscription exists (it starts at the latest message).
        let (url, to, codec) = (target.url.clone(), topic.clone(), codec.to_owned());
        tokio::task::spawn_blocking(move || {
            ruststream_test_brokers::python_produce(&url, &to, &codec, COUNT, json_schema)
        })
        .await
        .map_err(|e| Failed::from(e.to_string()))?
        .map_err(|e| Failed::from(e.to_string()))?;
        app.wait_until(WITHIN, |app| app.calls_of("shared").len() >= COUNT)
            .await;
        // A moment more: a message handed over twice would show now.
        app.sleep(Duration::from_secs(2)).await;
        let calls = app.calls_of("shared");
        app.stop().await;
        calls
            .iter()
            .map(|call| {
                call.payload::<Job>().map(|job| job.id).map_err(|e| {
                    Failed::from(format!(
                        "a message the Python client wrote with {what} did not decode: {e} \
                         (payload {:?})",
                        String::from_utf8_lossy(call.payload_bytes())
                    ))
                })
            })
            .collect::<Result<Vec<u64>, Failed>>()
    })?;
    let distinct: BTreeSet<u64> = seen.iter().copied().collect();
    if seen.len() != COUNT || distinct != expected_ids() {
        return Err(format!(
            "the handler saw {} messages ({} distinct) of the {COUNT} the Python client wrote \
             with {what}; missing: {:?}",
            seen.len(),
            distinct.len(),
            expected_ids().difference(&distinct).collect::<Vec<_>>()
        )
        .into());
    }
    let left = first_left(target, &topic, "shared", Duration::from_secs(3))?;
    if !left.is_empty() {
        return Err(format!(
            "the subscription still holds messages after the handler acknowledged all {COUNT} \
             ({what}): {left:?}"
        )
        .into());
    }
    eprintln!("interop: {COUNT} of {COUNT} written by the Python client with {what} handled and acknowledged");
    Ok(())
}

/// ruststream publishes one batch of 50 compressed with `codec`; the Python client reads each
/// exactly once, whole.
pub(crate) fn python_reads(target: &Target, codec: &str) -> Result<(), Failed> {
    let namespace = target.namespace("interop-to-python", codec)?;
    let topic = format!("persistent://{namespace}/from-ruststream");
    let compression = Compression::from_name(codec)
        .ok_or_else(|| Failed::from(format!("unknown codec {codec}")))?;
    // The Python subscription exists before anything is published, and reads from the start.
    let early = first_left(target, &topic, "python", Duration::from_millis(500))?;
    if !early.is_empty() {
        return Err(format!("a fresh topic held {early:?}").into());
    }
    let (rt, runtime) = super::tokio_runtime()?;
    rt.block_on(async {
        let app = LiveApp::with_state(
            app(|_| {}),
            Plan::new(Script::always(ret(HandlerOutcome::ack()))),
            runtime,
        )
        .url(target.url.clone())
        .namespace(namespace.clone())
        .await
        .map_err(|e| Failed::from(e.to_string()))?;
        let messages = (0..COUNT)
            .map(|id| {
                Message::new(topic.clone(), format!("{{\"id\":{id}}}").into_bytes())
                    .compression(compression)
            })
            .collect::<Vec<_>>();
        let published = app.publish_batch(messages).await;
        app.stop().await;
        published
            .map(drop)
            .map_err(|e| Failed::from(format!("publishing with {codec}: {e}")))
    })?;
    // What is stored, not only what a reader makes of it: the codec asked for.
    let apache = target
        .apache
        .as_ref()
        .ok_or_else(|| Failed::from("compression is checked on Apache Pulsar"))?;
    let stored = apache
        .first_message_compression(&topic)
        .map_err(|e| Failed::from(e.to_string()))?;
    let wanted = (codec != "none").then(|| codec.to_uppercase());
    if stored != wanted {
        return Err(format!(
            "ruststream published with {codec}, the broker stores the entry with {stored:?}"
        )
        .into());
    }
    let started = Instant::now();
    let payloads =
        ruststream_test_brokers::python_consume(&target.url, &topic, "python", COUNT, WITHIN)
            .map_err(|e| Failed::from(e.to_string()))?;
    let ids: Vec<u64> = payloads
        .iter()
        .map(|payload| {
            serde_json::from_str::<Job>(payload)
                .map(|job| job.id)
                .map_err(|e| Failed::from(format!("the Python client read {payload:?}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let distinct: BTreeSet<u64> = ids.iter().copied().collect();
    if ids.len() != COUNT || distinct != expected_ids() {
        return Err(format!(
            "the Python client read {} messages ({} distinct) of the {COUNT} ruststream wrote \
             with {codec} in {:?}",
            ids.len(),
            distinct.len(),
            started.elapsed()
        )
        .into());
    }
    eprintln!(
        "interop: {COUNT} of {COUNT} written by ruststream with {codec} read by the Python client"
    );
    Ok(())
}

/// The first message the Python client finds on `subscription` of `topic` within `within`
/// (creating the subscription, from the earliest message, if it is new), acknowledged: none
/// when the subscription holds nothing.
fn first_left(
    target: &Target,
    topic: &str,
    subscription: &str,
    within: Duration,
) -> Result<Vec<String>, Failed> {
    ruststream_test_brokers::python_consume(&target.url, topic, subscription, 1, within)
        .map_err(|e| Failed::from(e.to_string()))
}
