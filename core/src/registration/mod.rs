//! Whether a subscription's retry declaration makes sense, checked before anything connects.
//!
//! A registration may declare an attempt limit (`max_attempts(n)`, every delivery counted, the
//! first included) and a dead-letter topic (`dead_letter(topic)`). The rules, from the guide:
//!
//! - a limit needs a topic: without one a message out of attempts would have nowhere to go; a
//!   topic alone takes what handlers dead-letter themselves (`HandlerOutcome::dead_letter`)
//!   and payloads that do not decode;
//! - a limit needs a subscription type on which the broker counts redeliveries (Shared,
//!   KeyShared); on Exclusive and Failover it would never be reached.
//!
//! [`dead_letter_policy`] applies them and yields the [`DeadLetterPolicy`] to give the consumer,
//! or a [`RegistrationError`] that names the subscription and the fix.

mod error;
mod policy;

pub use error::RegistrationError;
pub use policy::{dead_letter_policy, DeadLetterPolicy};

#[cfg(test)]
mod tests;
