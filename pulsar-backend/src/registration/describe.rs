//! What the checked registrations say about the service: its channels and operations
//! (`<service> asyncapi`).
//!
//! Each subscribed topic, pattern, retry topic, dead-letter topic and declared outgoing topic
//! is a channel; what a handler does on one is an operation named after it: its own name for
//! what it receives, `<handler>_retry` and `<handler>_dead_letter` for the copies it sends,
//! `<handler>_publish_<message>` for what it declared it publishes.

use ruststream::describe::{
    Action, Channel, ChannelRole, Description, MessageInfo, Operation, Server, SubscriptionInfo,
};
use ruststream_pulsar_model::{InitialPosition, TopicName, TopicSelection};

use super::{Checked, CheckedSubscription};

/// The description of a broker's checked registrations; `tenant` is the one short names
/// resolve in.
pub(crate) fn describe<S: Send + Sync + 'static>(
    checked: &Checked<S>,
    tenant: &str,
) -> Description {
    let mut description = Description::new();
    let url = &checked.url;
    let protocol = if url.tls { "pulsar+ssl" } else { "pulsar" };
    description
        .servers
        .push(Server::new("pulsar", protocol, format!("{}:{}", url.host, url.port)).tenant(tenant));
    for sub in &checked.subscriptions {
        describe_subscription(&mut description, sub);
    }
    description
}

fn describe_subscription<S: Send + Sync + 'static>(
    description: &mut Description,
    sub: &CheckedSubscription<S>,
) {
    let handler = sub.handler.name();
    let message = &sub.message;
    let mut info = SubscriptionInfo::new(sub.subscription.clone(), sub.kind);
    info.ack_timeout = sub.ack_timeout;
    info.max_attempts = sub
        .dead_letter
        .as_ref()
        .and_then(|(max, _)| max.map(|m| m.get()));
    info.dead_letter_topic = sub.dead_letter.as_ref().map(|(_, t)| t.as_str().to_owned());
    info.retry_topic = sub.retry_topic.as_ref().map(|t| t.as_str().to_owned());
    info.initial_position = match sub.initial_position {
        InitialPosition::Earliest => "earliest",
        _ => "latest",
    }
    .to_owned();
    info.concurrency = sub.concurrency;
    info.transactional = sub.transaction.is_some();
    info.batch_max_messages = sub.batch.map(|b| b.messages().get());

    // What it reads.
    // The namespace of a pattern's topics (`tenant/namespace`).
    let mut pattern_namespace = None;
    let read: Vec<(String, ChannelRole, Option<&TopicName>)> = match &sub.topics {
        TopicSelection::Topics(names) => names
            .iter()
            .map(|t| {
                let role = if Some(t) == sub.retry_topic.as_ref() {
                    ChannelRole::Retry
                } else {
                    ChannelRole::Subscribed
                };
                (t.as_str().to_owned(), role, Some(t))
            })
            .collect(),
        TopicSelection::Pattern { pattern, .. } => {
            pattern_namespace = Some(pattern.namespace().to_owned());
            vec![(pattern.to_string(), ChannelRole::Pattern, None)]
        }
        other => vec![(other.to_string(), ChannelRole::Subscribed, None)],
    };
    let main_topics = read
        .iter()
        .filter(|(_, role, _)| *role != ChannelRole::Retry)
        .count();
    for (address, role, topic) in &read {
        let id = match (role, topic) {
            (ChannelRole::Retry, _) => format!("{handler}_retry_receive"),
            (_, Some(topic)) if main_topics > 1 => format!("{handler}_{}", topic.local_name()),
            _ => handler.to_owned(),
        };
        let summary = match role {
            ChannelRole::Retry => format!(
                "`{handler}` reads the copies its `retry_later` outcomes left here, once due"
            ),
            ChannelRole::Pattern => {
                format!("`{handler}` handles the messages of every topic the pattern matches")
            }
            _ => format!("`{handler}` handles each message"),
        };
        let channel = add_channel(description, address, *role, *topic, message);
        if let Some(namespace) = &pattern_namespace {
            let local = namespace.rsplit('/').next().unwrap_or(namespace);
            description.channel_mut(address, *role).namespace = Some(local.to_owned());
        }
        let mut operation = Operation::new(id, Action::Receive, channel, handler, summary);
        operation.messages.push(message.name.clone());
        operation.subscription = Some(info.clone());
        push_operation(description, operation);
    }
    // What it sends.
    if let Some(retry) = &sub.retry_topic {
        send(
            description,
            retry,
            ChannelRole::Retry,
            format!("{handler}_retry"),
            handler,
            format!("`{handler}` copies a message here when it returns `retry_later`"),
            message,
        );
    }
    if let Some((max, topic)) = &sub.dead_letter {
        let why = match max {
            Some(max) => format!("after {max} deliveries, or when it dead-letters one"),
            None => "when it dead-letters one".to_owned(),
        };
        send(
            description,
            topic,
            ChannelRole::DeadLetter,
            format!("{handler}_dead_letter"),
            handler,
            format!("`{handler}` sends a message here {why}, or when its payload does not decode"),
            message,
        );
    }
    for (topic, sent) in &sub.publishes {
        send(
            description,
            topic,
            ChannelRole::Outgoing,
            format!("{handler}_publish_{}", sent.name),
            handler,
            format!("`{handler}` publishes `{}` here", sent.type_name),
            sent,
        );
    }
}

/// Add a send operation on `topic` carrying `message`.
fn send(
    description: &mut Description,
    topic: &TopicName,
    role: ChannelRole,
    id: String,
    handler: &str,
    summary: String,
    message: &MessageInfo,
) {
    let channel = add_channel(description, topic.as_str(), role, Some(topic), message);
    let mut operation = Operation::new(id, Action::Send, channel, handler, summary);
    operation.messages.push(message.name.clone());
    push_operation(description, operation);
}

/// The channel at `address` with `message` on it; its address.
fn add_channel(
    description: &mut Description,
    address: &str,
    role: ChannelRole,
    topic: Option<&TopicName>,
    message: &MessageInfo,
) -> String {
    let channel: &mut Channel = description.channel_mut(address, role);
    if let Some(topic) = topic {
        channel.namespace = Some(topic.namespace().to_owned());
        channel.persistent = topic.is_persistent();
    }
    channel.add_message(message.clone());
    address.to_owned()
}

/// Add `operation` unless one of its id is there (a handler's retry subscription and its main
/// one both send to the same retry and dead-letter topics).
fn push_operation(description: &mut Description, operation: Operation) {
    if !description.operations.iter().any(|o| o.id == operation.id) {
        description.operations.push(operation);
    }
}
