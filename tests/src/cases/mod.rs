//! The behaviour cases written once and run in process and on real brokers.
//!
//! Each case is `async fn(Env)`; [`ALL`] lists them with the brokers they hold on. pulsar-lite
//! 0.2.0 has two gaps of its own (measured against the release, the same with the C++
//! client): it ignores a redelivery request on Exclusive and Failover, and redelivers a nacked
//! KeyShared message only once; the cases that need those run on Apache Pulsar and in process
//! only.
//!
//! One file per concern: `outcomes` (what each handler outcome does, and the ones a
//! registration refuses), `ack_timeout`, `dead_letter` (the attempt limit and
//! `dead_letter(reason)`), `unusable` (undecodable and unreadable deliveries), `retries`
//! (`retry_later`, the attempt count, backoff), `key_order`, `subscriptions`, `publishing`,
//! `parameters`, `batches` (batched entries), `batch_handlers`, `partitions`, `middleware` (layers at each scope) and `transactions`. This file holds what they share and [`ALL`], whose
//! order is the order the cases run in.
#![allow(missing_docs)]

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ruststream::completion::Completion;
use ruststream::message::Message;
use ruststream::HandlerOutcome;
use ruststream::MessageId;

use crate::harness::{Env, Running};
use crate::scenario::*;

mod ack_timeout;
mod batch_handlers;
mod batches;
mod dead_letter;
mod key_order;
mod middleware;
mod outcomes;
mod parameters;
mod partitions;
mod publishing;
mod retries;
mod subscriptions;
mod transactions;
mod unusable;

pub use ack_timeout::*;
pub use batch_handlers::*;
pub use batches::*;
pub use dead_letter::*;
pub use key_order::*;
pub use middleware::*;
pub use outcomes::*;
pub use parameters::*;
pub use partitions::*;
pub use publishing::*;
pub use retries::*;
pub use subscriptions::*;
pub use transactions::*;
pub use unusable::*;

/// Time for things that should happen at once (a real broker needs a moment).
const SOON: Duration = Duration::from_secs(10);
/// Longer than the ack timeout plus pulsar-rs's 500 ms redelivery tick, with margin: after
/// this, a message that was going to come back has come back.
const QUIET: Duration = Duration::from_secs(5);
/// pulsar-rs checks ack timeouts on a 500 ms ticker started with the consumer, so a delivery
/// received at t with timeout d comes back on the first tick strictly after t + d.
const TICK: Duration = Duration::from_millis(500);

fn n(v: u32) -> NonZeroU32 {
    NonZeroU32::new(v).expect("not zero")
}

fn job(id: u64) -> Vec<u8> {
    format!("{{\"id\":{id}}}").into_bytes()
}

/// Which real brokers a case holds on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Brokers {
    /// pulsar-lite and Apache Pulsar.
    Both,
    /// Apache Pulsar only (a pulsar-lite gap).
    ApacheOnly,
}

/// A case.
pub type Case = fn(Env) -> Pin<Box<dyn Future<Output = ()> + Send>>;

macro_rules! cases {
    ($($name:ident: $brokers:expr),* $(,)?) => {
        /// Every case, its name and the brokers it runs on.
        pub const ALL: &[(&str, Brokers, Case)] = &[
            $((stringify!($name), $brokers, |env| Box::pin($name(env)))),*
        ];
    };
}

cases!(
    ack: Brokers::Both,
    drop_goes_nowhere: Brokers::Both,
    retry: Brokers::Both,
    retry_after: Brokers::Both,
    an_error_returned_is_retried: Brokers::Both,
    retry_after_refused_against_ack_timeout: Brokers::Both,
    ack_timeout_redelivers_after_no_outcome: Brokers::Both,
    max_attempts_then_dead_letter: Brokers::Both,
    retry_after_counts_towards_the_limit: Brokers::Both,
    ack_timeouts_count_towards_the_limit: Brokers::Both,
    retry_after_without_ack_timeout_accepts_a_longer_delay: Brokers::Both,
    no_outcome_without_ack_timeout_stays_unacknowledged: Brokers::Both,
    undecodable_payload_dead_lettered_at_once: Brokers::Both,
    undecodable_payload_dead_lettered_without_ack_timeout: Brokers::Both,
    undecodable_payload_without_dead_letter_comes_back_after_the_ack_timeout: Brokers::Both,
    unreadable_message_dead_lettered_with_its_bytes: Brokers::ApacheOnly,
    unreadable_message_without_dead_letter_comes_back_after_the_ack_timeout: Brokers::ApacheOnly,
    a_slow_handler_does_not_block_the_others: Brokers::Both,
    the_ack_timeout_starts_when_a_handler_takes_the_message: Brokers::Both,
    bare_topic_on_the_default_subscription: Brokers::Both,
    key_shared_keeps_per_key_order: Brokers::Both,
    handler_publishes_through_the_broker: Brokers::Both,
    a_failed_send_brings_the_delivery_back: Brokers::Both,
    message_parts_reach_the_handler: Brokers::Both,
    raw_payload_reaches_the_handler_undecoded: Brokers::Both,
    msgpack_payload_round_trips: Brokers::Both,
    delayed_delivery_and_event_time: Brokers::ApacheOnly,
    exclusive_redelivers_by_rewinding: Brokers::ApacheOnly,
    failover_redelivers_by_rewinding: Brokers::ApacheOnly,
    batch_siblings_retry: Brokers::ApacheOnly,
    batch_siblings_retry_after: Brokers::ApacheOnly,
    batch_dead_letters_only_the_exhausted_message: Brokers::ApacheOnly,
    partitioned_shared_loses_nothing: Brokers::ApacheOnly,
    partitioned_key_shared_loses_nothing: Brokers::ApacheOnly,
    partitioned_failover_loses_nothing: Brokers::ApacheOnly,
    partitioned_dead_letter_names_the_partition: Brokers::ApacheOnly,
    keyed_publishes_keep_a_key_on_one_partition: Brokers::ApacheOnly,
    several_topics_one_handler: Brokers::Both,
    pattern_picks_up_topics_created_later: Brokers::ApacheOnly,
    initial_position_earliest_and_latest: Brokers::Both,
    failover_runs_one_message_at_a_time: Brokers::Both,
    failover_key_ordered_keeps_each_key_in_order: Brokers::Both,
    dead_letter_now_with_its_reason: Brokers::Both,
    dead_letter_now_leaves_batch_siblings: Brokers::ApacheOnly,
    dead_letter_without_a_topic_is_refused_and_comes_back: Brokers::Both,
    retry_later_comes_back_from_the_retry_topic: Brokers::ApacheOnly,
    attempts_count_every_way_back: Brokers::ApacheOnly,
    retry_later_without_a_topic_is_refused_and_comes_back: Brokers::Both,
    backoff_waits_by_attempt: Brokers::Both,
    backoff_later_waits_by_attempt_on_the_retry_topic: Brokers::ApacheOnly,
    ordered_retries_keep_each_key_in_publish_order: Brokers::ApacheOnly,
    failover_retry_later_waits_and_counts: Brokers::ApacheOnly,
    a_timing_layer_times_every_call: Brokers::Both,
    a_layer_dead_letters_what_lacks_a_tenant: Brokers::Both,
    a_publish_layer_stamps_every_message: Brokers::Both,
    a_batch_settles_each_message_on_its_own: Brokers::ApacheOnly,
    batches_keep_each_keys_order: Brokers::ApacheOnly,
    a_partial_batch_goes_at_the_max_wait: Brokers::ApacheOnly,
    a_batch_s_ack_timeout_starts_at_hand_over: Brokers::ApacheOnly,
    a_retried_message_holds_its_key_out_of_the_following_batches: Brokers::ApacheOnly,
    a_transactional_ack_commits_what_the_handler_published: Brokers::ApacheOnly,
    a_retried_handler_s_publishes_are_never_seen: Brokers::ApacheOnly,
    a_panicking_handler_s_publishes_are_never_seen: Brokers::ApacheOnly,
    a_transactional_retry_after_publishes_once_when_it_acks: Brokers::ApacheOnly,
    a_batch_s_failed_send_brings_its_messages_back: Brokers::ApacheOnly,
    a_transactional_batch_commits_or_aborts_as_one: Brokers::ApacheOnly,
);

/// The ids of a batch publish all name one entry, each with its index: the producer really
/// batched.
fn assert_one_entry(ids: &[MessageId]) {
    let entry = |id: &MessageId| id.parts()[..3].to_vec();
    assert_eq!(
        ids[0].parts().len(),
        4,
        "a batched id has an index: {}",
        ids[0]
    );
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(entry(id), entry(&ids[0]), "{ids:?}");
        assert_eq!(id.parts().get(3), Some(&(i as i64)), "index {i} in {id}");
    }
}

/// How many times the handler saw each job id, by id.
fn calls_per_job(
    calls: &[ruststream_pulsar::testing::Call],
) -> std::collections::BTreeMap<u64, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for call in calls {
        let job: Job = serde_json::from_slice(call.payload_bytes()).expect("a job");
        *seen.entry(job.id).or_default() += 1;
    }
    seen
}

const BATCH_SIZE: u64 = 10;
