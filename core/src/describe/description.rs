//! One broker's description: where it connects, its channels, its operations.

use alloc::string::String;
use alloc::vec::Vec;

use super::{Channel, Operation};

/// What one broker of an app says about the service (see the [module](super)).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Description {
    /// Where it connects.
    pub servers: Vec<Server>,
    /// The topics (and patterns) it reads or writes, each once.
    pub channels: Vec<Channel>,
    /// What each handler does on which channel.
    pub operations: Vec<Operation>,
}

impl Description {
    /// Nothing described yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The channel whose address is `address`, added (with `role`) if it is not there yet.
    pub fn channel_mut(&mut self, address: &str, role: super::ChannelRole) -> &mut Channel {
        match self.channels.iter().position(|c| c.address == address) {
            Some(i) => &mut self.channels[i],
            None => {
                self.channels.push(Channel::new(address, role));
                self.channels.last_mut().expect("just pushed")
            }
        }
    }
}

/// A broker the service connects to, as a document names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Server {
    /// A short name for the server ("pulsar").
    pub name: String,
    /// The protocol, as the URL's scheme says it (`pulsar`, `pulsar+ssl`).
    pub protocol: String,
    /// `host:port`, without credentials.
    pub host: String,
    /// The tenant its topics resolve in, where the broker has tenants.
    pub tenant: Option<String>,
}

impl Server {
    /// `name` at `host` over `protocol`.
    pub fn new(
        name: impl Into<String>,
        protocol: impl Into<String>,
        host: impl Into<String>,
    ) -> Self {
        Server {
            name: name.into(),
            protocol: protocol.into(),
            host: host.into(),
            tenant: None,
        }
    }

    /// The tenant its topics resolve in.
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}
