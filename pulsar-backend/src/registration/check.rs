//! Everything that can be wrong with the registrations, found before anything connects.

use std::collections::BTreeMap;
use std::time::Duration;

use ruststream::app::{BoxError, StartError};
use ruststream::completion::SubscriptionRules;

use super::{Checked, CheckedSubscription, Registration};
use crate::subscription::DEFAULT_CONCURRENCY;
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
        let topic = match resolve(&descriptor.topic) {
            Ok(t) => Some(t),
            Err(e) => {
                problems.push(format!("handler `{name}`: {e}").into());
                None
            }
        };
        let policy = match ruststream::dead_letter_policy(
            &subscription,
            descriptor.kind,
            reg.max_attempts,
            reg.dead_letter.as_deref(),
        ) {
            Ok(p) => p,
            Err(e) => {
                problems.push(Box::new(e));
                None
            }
        };
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
                    "handler `{name}`: the subscription name is empty; give it a name, e.g. \
                         PulsarSubscription::new(\"{}\", \"{}\")",
                    descriptor.topic, descriptor.topic
                )
                .into(),
            );
            continue;
        }
        let Some(topic) = topic else { continue };
        if let Some(other) = seen.insert((topic.to_string(), subscription.clone()), name) {
            problems.push(
                format!(
                    "handlers `{other}` and `{name}` are both mounted on subscription \
                         `{subscription}` of `{topic}`: they would split its messages between \
                         them. Give one of them its own subscription name"
                )
                .into(),
            );
            continue;
        }
        let rules = SubscriptionRules::new(
            subscription.as_str(),
            descriptor.kind,
            descriptor.ack_timeout,
        );
        let concurrency = reg
            .concurrency
            .or(descriptor.concurrency)
            .unwrap_or(DEFAULT_CONCURRENCY);
        planned.push(CheckedSubscription {
            handler: reg.handler.clone(),
            topic,
            subscription,
            kind: descriptor.kind,
            ack_timeout: descriptor.ack_timeout,
            dead_letter,
            concurrency,
            receiver_queue: reg
                .receiver_queue
                .or(descriptor.receiver_queue)
                .unwrap_or(concurrency),
            rules,
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
