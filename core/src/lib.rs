//! # ruststream core
//!
//! The part of ruststream that knows what a handler's answer means and nothing about how bytes
//! reach a broker. It is `#![no_std]` with `alloc`, depends on no async runtime and on no broker
//! client, never performs I/O and never reads a clock. Everything time-dependent takes `now` as
//! an argument and answers with the actions to perform and the next deadline, in the style of a
//! sans-IO protocol core; the broker drivers and the runtime adapters live in other crates.
//!
//! Where to look:
//!
//! | concept | module |
//! |---|---|
//! | what a handler returns | [`outcome`] ([`HandlerOutcome`]) |
//! | what that outcome becomes (ack, nack, nack at a deadline, nothing) | [`completion`] |
//! | whether a retry / dead-letter declaration is valid | [`registration`] |
//! | everything a subscription decides, as one sans-IO machine (admission, per-key order, the completion table, batched entries, waits, transactions, release), and what a broker author needs besides | [`broker`] ([`broker::machine`]) |
//! | the four subscription types and which of them count redeliveries | [`subscription`] |
//! | publishing: the port a broker offers, and who is told each publish's answer | [`publish`] |
//! | handlers, payload decoding, parameters | [`handler`], [`state`], [`message`], [`params`] |
//! | code around handlers and publishes (middleware) | [`middleware`] |
//! | the app: startup, brokers | [`mod@app`] |
//! | what a service says about itself (AsyncAPI's model) | [`describe`] |
//! | moving dead-lettered messages back (`dead-letter replay`) | [`replay`] |
//! | spawn and timer contracts, and a manual clock | [`runtime`] |
//! | the clock-free instant type | [`time`] |
#![no_std]

extern crate alloc;
// apache-avro's `#[derive(AvroSchema)]`, which the Avro codec's tests use, names `::std`.
#[cfg(all(test, feature = "avro"))]
extern crate std;

pub mod app;
pub mod batch;
mod batch_policy;
mod batching;
mod boxed;
pub mod broker;
pub mod codec;
pub mod completion;
mod compression;
pub mod describe;
pub mod handler;
pub mod message;
mod message_id;
pub mod middleware;
mod nonzero;
pub mod outcome;
pub mod outgoing;
pub mod params;
pub mod publish;
pub mod registration;
pub mod replay;
pub mod runtime;
pub mod schema;
pub mod state;
pub mod subscription;
pub mod time;
pub mod transaction;

pub use app::{App, AppInfo, RustStream, StartContext};
pub use completion::{Completion, Settlement, SettlementError, SubscriptionRules};
pub use compression::Compression;
pub use handler::{Handler, Publisher, Rejection};
pub use message::{IntoMessage, Message};
pub use message_id::MessageId;
pub use outcome::{Answer, HandlerOutcome, IntoOutcome};
pub use outgoing::{EncodeError, Outgoing};
pub use publish::PublishError;
pub use registration::{dead_letter_policy, DeadLetterPolicy, RegistrationError};
pub use runtime::{ManualClock, Runtime, Spawn, Timer};
pub use schema::{Schema, SchemaKind};
pub use state::{FromRef, State};
pub use subscription::SubscriptionType;
pub use time::Instant;

pub use ruststream_macros::{app, subscriber, FromRef, Outgoing};

/// Items the macros' expansions refer to. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use alloc::vec::Vec;
    pub use serde;
    pub use serde_json;
}
