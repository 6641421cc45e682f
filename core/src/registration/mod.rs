//! Whether a subscription's retry declaration makes sense, checked before anything connects.
//!
//! A registration may declare an attempt limit (`max_attempts(n)`, every delivery counted, the
//! first included) and a dead-letter topic (`dead_letter(topic)`). The rules, from the guide:
//!
//! - both steps or neither: a limit without a topic would send a message out of attempts
//!   nowhere, and a topic without a limit would never receive one; a topic alone is for a
//!   handler that declares `#[subscriber(.., dead_letter)]`, and takes what it dead-letters
//!   itself (`HandlerOutcome::dead_letter`) and payloads that do not decode;
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
