//! Everything that can be wrong with the registrations, found before anything connects.

use std::collections::BTreeMap;
use std::time::Duration;

use ruststream::app::{BoxError, StartError};
use ruststream::batch::BatchPolicy;
use ruststream::completion::SubscriptionRules;
use ruststream::SubscriptionType;
use ruststream_pulsar_model::{TopicPattern, TopicSelection};

use super::{Checked, CheckedSubscription, Registration};
use crate::subscription::{PulsarSubscription, Topics, DEFAULT_CONCURRENCY};
use crate::url::BrokerUrl;

/// The broker-wide settings the checks need.
pub(crate) struct BrokerSettings<'a> {
    pub(crate) url: &'a str,
    pub(crate) default_subscription: &'a str,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) connect_timeout: Duration,
}

/// Check every registration and resolve its names; all problems are reported together.
pub(crate) fn check<S: Send + Sync + 'static>(
    settings: &BrokerSettings<'_>,
    registrations: &[Registration<S>],
) -> Result<Checked<S>, StartError> {
    let resolve = |topic: &str| crate::topic::resolve(topic, settings.namespace);
    let mut problems: Vec<BoxError> = Vec::new();
    let url = match BrokerUrl::parse(settings.url) {
        Ok(url) => Some(url),
        Err(e) => {
            problems.push(Box::new(e));
            None
        }
    };
    if settings.connect_timeout.is_zero() {
        problems.push(
            "the connect timeout is 0 s, so starting could not even try to reach the \
                 broker; give it a bound such as `PulsarBroker::connect_timeout(\
                 Duration::from_secs(10))` (the default)"
                .into(),
        );
    }
    let mut planned = Vec::new();
    let mut seen: BTreeMap<(String, String), &'static str> = BTreeMap::new();
    for reg in registrations {
        let name = reg.handler.name();
        let descriptor = &reg.descriptor;
        let subscription = descriptor
            .subscription
            .clone()
            .unwrap_or_else(|| settings.default_subscription.to_owned());
        let mut topics = match selection(descriptor, settings.namespace) {
            Ok(t) => Some(t),
            Err(e) => {
                problems.push(format!("handler `{name}`: {e}").into());
                None
            }
        };
        let retry_topic = match reg.retry_topic.as_deref() {
            None => None,
            Some(declared) => match crate::topic::resolve(declared, settings.namespace) {
                Ok(resolved) => Some(resolved),
                Err(e) => {
                    problems.push(format!("handler `{name}`: retry topic: {e}").into());
                    None
                }
            },
        };
        // The broker delays delivery only on Shared and KeyShared subscriptions: an Exclusive
        // or Failover one reads its retry topic through a Shared subscription of its own.
        let single_active = matches!(
            descriptor.kind,
            SubscriptionType::Exclusive | SubscriptionType::Failover
        );
        // The subscription reads its retry topic too.
        match (&mut topics, &retry_topic) {
            (Some(TopicSelection::Topics(_)), Some(_)) if single_active => {}
            (Some(TopicSelection::Topics(names)), Some(retry)) if !names.contains(retry) => {
                names.push(retry.clone());
            }
            (Some(TopicSelection::Pattern { pattern, .. }), Some(retry)) => problems.push(
                format!(
                    "handler `{name}`: a retry topic ({retry}) on the pattern \
                     {pattern}: a pattern subscription reads the topics its pattern matches, \
                     so the retry topic would be read only if it matched; mount the handler \
                     on named topics (`PulsarSubscription::topics`) to use retry_later"
                )
                .into(),
            ),
            _ => {}
        }
        // With a retry topic, durable retries count on every type (`RECONSUMETIMES`), so an
        // attempt limit can be reached on Exclusive and Failover too: checked as on Shared.
        let counted_kind = match (single_active, &retry_topic) {
            (true, Some(_)) => SubscriptionType::Shared,
            _ => descriptor.kind,
        };
        let policy = match ruststream::dead_letter_policy(
            &subscription,
            counted_kind,
            reg.max_attempts,
            reg.dead_letter.as_deref(),
            reg.dead_letters,
        ) {
            Ok(p) => p,
            Err(e) => {
                problems.push(Box::new(e));
                None
            }
        };
        if reg.dead_letters && reg.dead_letter.is_none() {
            problems.push(
                format!(
                    "handler `{name}` declares that it dead-letters messages \
                     (`#[subscriber(.., dead_letter)]`), but its registration names no \
                     dead-letter topic, so such a message would have nowhere to go: add \
                     `.dead_letter(\"<topic>\")` after `include({name})`, or remove \
                     `dead_letter` from its #[subscriber]"
                )
                .into(),
            );
        }
        let dead_letter = match policy {
            Some(p) => match resolve(p.dead_letter_topic()) {
                Ok(t) => Some((p.max_attempts(), t)),
                Err(e) => {
                    problems.push(format!("handler `{name}`: dead-letter topic: {e}").into());
                    None
                }
            },
            None => None,
        };
        if subscription.is_empty() {
            problems.push(
                format!(
                    "handler `{name}`: the subscription name is empty on {}; give it a name, \
                     e.g. PulsarSubscription::new(\"refunds\", \"refunds\")",
                    descriptor.topics.written()
                )
                .into(),
            );
            continue;
        }
        let mut publishes = Vec::new();
        for (declared, message) in &reg.publishes {
            match resolve(declared) {
                Ok(topic) => publishes.push((topic, message.clone())),
                Err(e) => problems.push(
                    format!(
                        "handler `{name}`: the topic it publishes `{}` to: {e}",
                        message.name
                    )
                    .into(),
                ),
            }
        }
        let Some(topics) = topics else { continue };
        if let Some(other) = seen.insert((topics.to_string(), subscription.clone()), name) {
            problems.push(
                format!(
                    "handlers `{other}` and `{name}` are both mounted on subscription \
                         `{subscription}` of {topics}: they would split its messages between \
                         them. Give one of them its own subscription name"
                )
                .into(),
            );
            continue;
        }
        let mut rules = SubscriptionRules::new(
            subscription.as_str(),
            descriptor.kind,
            descriptor.ack_timeout,
        );
        if let Some(policy) = reg.backoff {
            match backoff(&policy, descriptor.ack_timeout, reg.retry_topic.is_some()) {
                Ok(()) => rules = rules.with_backoff(policy),
                Err(e) => problems.push(format!("handler `{name}`: {e}").into()),
            }
        }
        let concurrency = reg
            .concurrency
            .or(descriptor.concurrency)
            .unwrap_or(default_concurrency(descriptor.kind));
        let batch = match batch_policy(reg.batch, reg.handler_batch, descriptor.ack_timeout) {
            Ok(batch) => batch,
            Err(e) => {
                problems.push(format!("handler `{name}`: {e}").into());
                None
            }
        };
        // A batch fills from the receiver queue: by default it holds the running batches and
        // the next one.
        let receiver_queue =
            reg.receiver_queue
                .or(descriptor.receiver_queue)
                .unwrap_or(match batch {
                    Some(policy) => policy.messages().get().saturating_mul(concurrency + 1),
                    None => concurrency,
                });
        if let (true, Some(retry)) = (single_active, &retry_topic) {
            let retry_selection = TopicSelection::Topics(vec![retry.clone()]);
            if let Some(other) =
                seen.insert((retry_selection.to_string(), subscription.clone()), name)
            {
                problems.push(
                    format!(
                        "handlers `{other}` and `{name}` both read the retry topic {retry} on \
                         subscription `{subscription}`; give each its own retry topic"
                    )
                    .into(),
                );
            } else {
                let mut retry_rules = SubscriptionRules::new(
                    subscription.as_str(),
                    SubscriptionType::Shared,
                    descriptor.ack_timeout,
                );
                if let Some(policy) = rules.backoff() {
                    retry_rules = retry_rules.with_backoff(*policy);
                }
                planned.push(CheckedSubscription {
                    handler: reg.handler.clone(),
                    topics: retry_selection,
                    key_ordered: descriptor.key_ordered,
                    ordered_retries: descriptor.ordered_retries,
                    // Copies are published only once this exists; from the earliest all the
                    // same, so that none written by an earlier instance is skipped.
                    initial_position: ruststream_pulsar_model::InitialPosition::Earliest,
                    subscription: subscription.clone(),
                    kind: SubscriptionType::Shared,
                    ack_timeout: descriptor.ack_timeout,
                    dead_letter: dead_letter.clone(),
                    retry_topic: retry_topic.clone(),
                    compression: reg.compression,
                    layers: reg.layers.clone(),
                    concurrency,
                    receiver_queue,
                    rules: retry_rules,
                    batch,
                    transaction: reg.transaction,
                    schema: None,
                    message: reg.message.clone(),
                    publishes: publishes.clone(),
                });
            }
        }
        planned.push(CheckedSubscription {
            handler: reg.handler.clone(),
            topics,
            key_ordered: descriptor.key_ordered || descriptor.kind == SubscriptionType::KeyShared,
            ordered_retries: descriptor.ordered_retries,
            initial_position: descriptor.initial_position,
            subscription,
            kind: descriptor.kind,
            ack_timeout: descriptor.ack_timeout,
            dead_letter,
            retry_topic,
            compression: reg.compression,
            layers: reg.layers.clone(),
            concurrency,
            receiver_queue,
            rules,
            batch,
            transaction: reg.transaction,
            schema: reg.payload_schema.clone(),
            message: reg.message.clone(),
            publishes,
        });
    }
    match (problems.is_empty(), url) {
        (true, Some(url)) => Ok(Checked {
            url,
            subscriptions: planned,
        }),
        _ => Err(StartError::Invalid {
            broker: "pulsar",
            problems,
        }),
    }
}

/// The batch policy a registration runs with: its own (`.batch(policy)`) over the handler's;
/// refused for a handler of one message, and for a max wait the ack timeout would cut short.
fn batch_policy(
    registration: Option<BatchPolicy>,
    handler: Option<BatchPolicy>,
    ack_timeout: Option<Duration>,
) -> Result<Option<BatchPolicy>, String> {
    let policy = match (registration, handler) {
        (Some(_), None) => {
            return Err(
                "`.batch(..)` gathers messages for a batch handler, and this one takes \
                        one message: make its first parameter a slice (`&[T]`), or remove \
                        `.batch(..)`"
                    .to_owned(),
            )
        }
        (registration, handler) => registration.or(handler),
    };
    match (policy, ack_timeout) {
        (Some(policy), Some(timeout)) if policy.wait() >= timeout => Err(format!(
            "the batch's max wait {:?} is not shorter than the ack timeout {timeout:?}, which \
             counts from when a message is received: a message could come back while it \
             waits for its batch. Shorten the max wait or raise the ack timeout",
            policy.wait()
        )),
        (policy, _) => Ok(policy),
    }
}

/// Whether a backoff policy can work on its subscription: it must make sense, and where
/// `backoff()` keeps the wait in the service (no retry topic for `backoff_later()`), its cap
/// must end before the ack timeout, or the later attempts would all be refused.
fn backoff(
    policy: &ruststream::completion::Backoff,
    ack_timeout: Option<Duration>,
    retry_topic: bool,
) -> Result<(), String> {
    policy.check().map_err(|e| e.to_string())?;
    match ack_timeout {
        Some(ack_timeout) if !retry_topic && policy.longest() >= ack_timeout => Err(format!(
            "the backoff's cap {:?} is not shorter than the ack timeout {ack_timeout:?}, so \
             `backoff()`, whose wait is kept in the service, would be refused once the delay \
             reaches it (the client would redeliver the message first); lower the cap below \
             {ack_timeout:?}, raise the ack timeout above it, or declare a retry topic \
             (`.retry_topic(..)`) and return `backoff_later()`, whose wait the broker keeps",
            policy.longest()
        )),
        _ => Ok(()),
    }
}

/// Handlers at once when neither the registration nor the descriptor says: one on Exclusive
/// and Failover, whose point is the broker's order, [`DEFAULT_CONCURRENCY`] on the others.
fn default_concurrency(kind: SubscriptionType) -> usize {
    match kind {
        SubscriptionType::Exclusive | SubscriptionType::Failover => 1,
        _ => DEFAULT_CONCURRENCY,
    }
}

/// The descriptor's topics resolved: names fully qualified (short ones in `namespace`), a
/// pattern compiled with its namespace.
fn selection(
    descriptor: &PulsarSubscription,
    namespace: Option<&str>,
) -> Result<TopicSelection, String> {
    match &descriptor.topics {
        Topics::Named(names) if names.is_empty() => Err(
            "`PulsarSubscription::topics` was given no topic; name at least one, or use \
             `PulsarSubscription::pattern` for a namespace's topics"
                .to_owned(),
        ),
        Topics::Named(names) => {
            let mut resolved = Vec::with_capacity(names.len());
            for name in names {
                let topic = crate::topic::resolve(name, namespace).map_err(|e| e.to_string())?;
                if !resolved.contains(&topic) {
                    resolved.push(topic);
                }
            }
            Ok(TopicSelection::Topics(resolved))
        }
        Topics::Pattern(pattern) => {
            if descriptor.pattern_refresh.is_zero() {
                return Err(format!(
                    "the pattern refresh of `{pattern}` is 0 s, which would list the \
                     namespace's topics without pause; give it a period such as \
                     `.pattern_refresh(Duration::from_secs(30))` (the default)"
                ));
            }
            let pattern = TopicPattern::parse(pattern, namespace).map_err(|e| e.to_string())?;
            Ok(TopicSelection::Pattern {
                pattern,
                refresh: descriptor.pattern_refresh,
            })
        }
    }
}
