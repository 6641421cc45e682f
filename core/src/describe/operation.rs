//! What a handler does on a channel.

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;

use crate::SubscriptionType;

/// One thing a handler does on one channel: receive its messages, or send to it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Operation {
    /// A name unique in the service: the handler's name for what it receives, the handler's
    /// name and what it sends for the rest (`process_refund_dead_letter`).
    pub id: String,
    /// Receive or send.
    pub action: Action,
    /// The address of its channel.
    pub channel: String,
    /// The handler it belongs to.
    pub handler: String,
    /// A sentence on what it is for.
    pub summary: String,
    /// The names of the messages it carries (of its channel's).
    pub messages: Vec<String>,
    /// For a receive: the subscription it reads through.
    pub subscription: Option<SubscriptionInfo>,
}

impl Operation {
    /// `handler`'s operation `id`, `action` on the channel at `channel`.
    pub fn new(
        id: impl Into<String>,
        action: Action,
        channel: impl Into<String>,
        handler: impl Into<String>,
        summary: impl Into<String>,
    ) -> Self {
        Operation {
            id: id.into(),
            action,
            channel: channel.into(),
            handler: handler.into(),
            summary: summary.into(),
            messages: Vec::new(),
            subscription: None,
        }
    }
}

/// Whether an operation reads a channel or writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// The service reads the channel.
    Receive,
    /// The service writes to the channel.
    Send,
}

impl Action {
    /// `receive` or `send`, as AsyncAPI 3 spells them.
    pub fn name(self) -> &'static str {
        match self {
            Action::Receive => "receive",
            Action::Send => "send",
        }
    }
}

/// How a handler's subscription reads, as registered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubscriptionInfo {
    /// The subscription's name.
    pub name: String,
    /// Its type.
    pub kind: SubscriptionType,
    /// How long a delivery may stay unsettled before it comes back.
    pub ack_timeout: Option<Duration>,
    /// How many deliveries of one message, the first included, before it is dead-lettered.
    pub max_attempts: Option<u32>,
    /// Where messages out of attempts go.
    pub dead_letter_topic: Option<String>,
    /// Where `retry_later` copies wait.
    pub retry_topic: Option<String>,
    /// Where a new subscription starts (`latest`, `earliest`).
    pub initial_position: String,
    /// How many of its messages run at once.
    pub concurrency: usize,
    /// Whether its deliveries run in transactions.
    pub transactional: bool,
    /// For a batch handler, the most messages of one call.
    pub batch_max_messages: Option<usize>,
}

impl SubscriptionInfo {
    /// Subscription `name` of type `kind`, starting at the latest message, one at a time.
    pub fn new(name: impl Into<String>, kind: SubscriptionType) -> Self {
        SubscriptionInfo {
            name: name.into(),
            kind,
            ack_timeout: None,
            max_attempts: None,
            dead_letter_topic: None,
            retry_topic: None,
            initial_position: String::from("latest"),
            concurrency: 1,
            transactional: false,
            batch_max_messages: None,
        }
    }
}
