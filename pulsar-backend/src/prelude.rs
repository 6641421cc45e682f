//! Everything a service needs, in one import: `use ruststream_pulsar::prelude::*;`.

pub use crate::{InitialPosition, PulsarBroker, PulsarSubscription};
pub use ruststream::app::App;
pub use ruststream::params::{
    EventTime, MessageId, MessageKey, Properties, PublishTime, RedeliveryCount, Topic,
};
pub use ruststream::{
    nonzero, subscriber, AppInfo, FromRef, HandlerOutcome, IntoOutcome, Message, Outgoing,
    PublishError, Publisher, RustStream, State, SubscriptionType,
};
