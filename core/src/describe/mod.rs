//! What a service says about itself, without connecting: the channels its registrations read
//! and write, the operations on them, and the messages they carry.
//!
//! A broker builds a [`Description`] from its registrations ([`Broker::describe`]); the
//! runner turns the descriptions of an app's brokers into an AsyncAPI document
//! (`<service> asyncapi`). The model here is the broker-neutral part: what a handler reads
//! ([`MessageInfo`], from its payload type and parameters) and what a registration declares
//! ([`Channel`], [`Operation`], [`SubscriptionInfo`]).
//!
//! [`Broker::describe`]: crate::app::Broker::describe

mod channel;
mod description;
mod message;
mod operation;
mod payload;
#[doc(hidden)]
pub mod probe;

pub use channel::{Channel, ChannelRole};
pub use description::{Description, Server};
pub use message::MessageInfo;
pub use operation::{Action, Operation, SubscriptionInfo};
pub use payload::PayloadSchema;
