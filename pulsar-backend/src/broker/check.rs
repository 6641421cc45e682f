//! Everything that can be wrong with the registrations, found before anything connects.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use ruststream::app::{BoxError, StartError};
use ruststream::completion::SubscriptionRules;
use ruststream::{Handler, SubscriptionType};
use ruststream_pulsar_model::TopicName;

use super::PulsarBroker;
use crate::subscription::{PulsarSubscription, DEFAULT_CONCURRENCY};
use crate::url::BrokerUrl;

/// A registration that passed every check, with its names resolved.
pub(crate) struct Planned<S> {
    pub(crate) handler: Arc<dyn Handler<S>>,
    pub(crate) topic: TopicName,
    pub(crate) subscription: String,
    pub(crate) kind: SubscriptionType,
    pub(crate) ack_timeout: Option<Duration>,
    pub(crate) dead_letter: Option<(NonZeroU32, TopicName)>,
    pub(crate) concurrency: usize,
    pub(crate) rules: SubscriptionRules,
}

/// The checked plan of a broker: its URL and its subscriptions.
pub(crate) struct Plan<S> {
    pub(crate) url: BrokerUrl,
    pub(crate) subscriptions: Vec<Planned<S>>,
}

impl<S: Send + Sync + 'static> PulsarBroker<S> {
    /// Check every registration and resolve its names; all problems are reported together.
    pub(crate) fn plan(&self) -> Result<Plan<S>, StartError> {
        let mut problems: Vec<BoxError> = Vec::new();
        let url = match BrokerUrl::parse(&self.url) {
            Ok(url) => Some(url),
            Err(e) => {
                problems.push(Box::new(e));
                None
            }
        };
        if self.connect_timeout.is_zero() {
            problems.push(
                "the connect timeout is 0 s, so starting could not even try to reach the \
                 broker; give it a bound such as `PulsarBroker::connect_timeout(\
                 Duration::from_secs(10))` (the default)"
                    .into(),
            );
        }
        let mut planned = Vec::new();
        let mut seen: BTreeMap<(String, String), &'static str> = BTreeMap::new();
        for reg in &self.registrations {
            let name = reg.handler.name();
            let descriptor = reg.handler.descriptor();
            let descriptor = match descriptor.downcast::<PulsarSubscription>() {
                Ok(d) => *d,
                Err(other) => match other.downcast::<&'static str>() {
                    Ok(topic) => PulsarSubscription::topic(*topic),
                    Err(other) => match other.downcast::<String>() {
                        Ok(topic) => PulsarSubscription::topic(*topic),
                        Err(_) => {
                            problems.push(
                                format!(
                                    "handler `{name}`: its #[subscriber(..)] argument is not a \
                                     Pulsar descriptor; write `#[subscriber(\"topic\")]` or \
                                     `#[subscriber(PulsarSubscription::new(\"topic\", \
                                     \"subscription\"))]`"
                                )
                                .into(),
                            );
                            continue;
                        }
                    },
                },
            };
            let subscription = descriptor
                .subscription
                .clone()
                .unwrap_or_else(|| self.default_subscription.clone());
            let topic = match self.resolve(&descriptor.topic) {
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
                Some(p) => match self.resolve(p.dead_letter_topic()) {
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
            planned.push(Planned {
                handler: reg.handler.clone(),
                topic,
                subscription,
                kind: descriptor.kind,
                ack_timeout: descriptor.ack_timeout,
                dead_letter,
                concurrency: reg
                    .concurrency
                    .or(descriptor.concurrency)
                    .unwrap_or(DEFAULT_CONCURRENCY),
                rules,
            });
        }
        match (problems.is_empty(), url) {
            (true, Some(url)) => Ok(Plan {
                url,
                subscriptions: planned,
            }),
            _ => Err(StartError::Invalid {
                broker: "pulsar",
                problems,
            }),
        }
    }
}
