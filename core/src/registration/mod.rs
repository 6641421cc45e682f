//! Whether a subscription's retry declaration makes sense, checked before anything connects.
//!
//! A registration may declare an attempt limit (`max_attempts(n)`, every delivery counted, the
//! first included) and a dead-letter topic (`dead_letter(topic)`). The rules, from the guide:
//!
//! - both or neither: a limit without a topic has nowhere to send a message out of attempts,
//!   and a topic without a limit never receives anything;
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
