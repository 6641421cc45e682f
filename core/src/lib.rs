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
//! | the four subscription types and which of them count redeliveries | [`subscription`] |
//! | spawn and timer contracts, and a manual clock | [`runtime`] |
//! | the clock-free instant type | [`time`] |
#![no_std]
#![doc(html_no_source)]

extern crate alloc;

pub mod completion;
pub mod outcome;
pub mod registration;
pub mod runtime;
pub mod subscription;
pub mod time;

pub use completion::{Action, Completion, Settlement, SettlementError, Settler, SubscriptionRules};
pub use outcome::HandlerOutcome;
pub use registration::{dead_letter_policy, DeadLetterPolicy, RegistrationError};
pub use runtime::{ManualClock, Runtime, Spawn, Timer};
pub use subscription::SubscriptionType;
pub use time::Instant;
