//! What a broker author needs, and a service never does: the subscription machine that
//! decides every settlement, and the pieces a driver carries its decisions with.
//!
//! A broker (Pulsar's `rstream-pulsar`, or one of your own) implements the app's
//! [`Broker`](crate::app::Broker) trait and, for each subscription, runs a driver around a
//! [`machine::SubscriptionMachine`]: the broker-neutral one of `rstream-driver`, given the
//! broker's ports. `docs/broker-authors.md` in the repository walks through it.
//!
//! | what | where |
//! |---|---|
//! | every decision about a subscription's deliveries: events in, commands out | [`machine`] |
//! | where the answers of a delivery's publishes go, and how they are counted | [`Outbox`], [`Token`], [`Origin`], [`Answered`], [`HandlerPort`], [`Tracker`] |
//! | a received message's body and properties kept by an in-process broker and shared with each delivery | [`SharedMessage`] |

pub mod machine;
mod shared;

pub use crate::publish::outbox::{Answered, HandlerPort, Origin, Outbox, Token, Tracker};
pub use shared::SharedMessage;
