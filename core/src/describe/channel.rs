//! A topic (or a pattern of topics) the service reads or writes.

use alloc::string::String;
use alloc::vec::Vec;

use super::MessageInfo;

/// A topic, or a pattern of topics, and the messages seen on it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Channel {
    /// The topic as the broker names it (fully qualified on Pulsar), or the pattern.
    pub address: String,
    /// Why the service uses it; the first role it was added with.
    pub role: ChannelRole,
    /// The namespace it is in, where the broker has namespaces (`public/default`).
    pub namespace: Option<String>,
    /// Whether the broker keeps its messages on disk (`persistent://` on Pulsar).
    pub persistent: bool,
    /// The messages it carries, each once.
    pub messages: Vec<MessageInfo>,
}

impl Channel {
    /// The channel at `address`, used as `role`, persistent, with no message yet.
    pub fn new(address: impl Into<String>, role: ChannelRole) -> Self {
        Channel {
            address: address.into(),
            role,
            namespace: None,
            persistent: true,
            messages: Vec::new(),
        }
    }

    /// Add `message`, unless a message of the same name is there.
    pub fn add_message(&mut self, message: MessageInfo) {
        if !self.messages.iter().any(|m| m.name == message.name) {
            self.messages.push(message);
        }
    }
}

/// Why a service uses a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelRole {
    /// A handler subscribes to it.
    Subscribed,
    /// A handler subscribes to the topics a pattern matches.
    Pattern,
    /// Where `retry_later` copies wait (written and read by the service).
    Retry,
    /// Where messages out of attempts, or dead-lettered by a handler, go.
    DeadLetter,
    /// A handler publishes to it.
    Outgoing,
}

impl ChannelRole {
    /// The role as one word, for documents and messages.
    pub fn name(self) -> &'static str {
        match self {
            ChannelRole::Subscribed => "subscribed",
            ChannelRole::Pattern => "pattern",
            ChannelRole::Retry => "retry",
            ChannelRole::DeadLetter => "dead-letter",
            ChannelRole::Outgoing => "outgoing",
        }
    }
}
