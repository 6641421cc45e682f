//! Where an outcome becomes a consumer call.
//!
//! This module is the whole of the "Completion" table of the guide, as pure code:
//!
//! | the handler ended with | [`Settlement`] | the driver then calls |
//! |---|---|---|
//! | [`HandlerOutcome::Ack`](crate::HandlerOutcome::Ack) | [`Settlement::Ack`] | `ack_with_id` |
//! | [`HandlerOutcome::Drop`](crate::HandlerOutcome::Drop) | [`Settlement::Ack`] | `ack_with_id` |
//! | [`HandlerOutcome::Retry`](crate::HandlerOutcome::Retry) | [`Settlement::Nack`] | `nack_with_id` |
//! | [`HandlerOutcome::RetryAfter`](crate::HandlerOutcome::RetryAfter)`(d)` | [`Settlement::NackAt`]`(now + d)` | `nack_with_id` once the deadline is reached |
//! | `RetryAfter(d)` with `d >= ack_timeout` | [`SettlementError`], then [`Settlement::Leave`] | nothing |
//! | [`HandlerOutcome::DeadLetter`](crate::HandlerOutcome::DeadLetter)`(reason)`, the copy confirmed | [`Completion::DeadLettered`]: [`Settlement::Ack`] | `ack_with_id` (after the driver published the copy) |
//! | [`HandlerOutcome::RetryLater`](crate::HandlerOutcome::RetryLater)`(d)`, the copy (delivered by the broker after `d`) confirmed on the retry topic | [`Completion::Rescheduled`]: [`Settlement::Ack`] | `ack_with_id` (after the driver published the copy) |
//! | `RetryLater(d)` without a retry topic, or the copy failed | [`SettlementError`] or [`Completion::Rejected`], then [`Settlement::Leave`] | nothing |
//! | `DeadLetter(reason)` without a dead-letter topic, or the copy failed | [`SettlementError`] or [`Completion::Rejected`], then [`Settlement::Leave`] | nothing |
//! | [`HandlerOutcome::Backoff`](crate::HandlerOutcome::Backoff) / [`BackoffLater`](crate::HandlerOutcome::BackoffLater), with a [`Backoff`] policy | as `RetryAfter(d)` / `RetryLater(d)`, `d` the policy's delay for the attempt ([`SubscriptionRules::resolve`]) | as those |
//! | `Backoff` / `BackoffLater` without a policy | [`SettlementError`], then [`Settlement::Leave`] | nothing |
//! | no outcome: [`Completion::Panicked`], [`Completion::Rejected`] | [`Settlement::Leave`] | nothing; the broker's ack timeout or a disconnect brings the message back |
//!
//! The table is the same for all four subscription types: what differs between them is what
//! the broker does with a negative acknowledgement (count it, or rewind the cursor), not which
//! call the service makes.
//!
//! [`SubscriptionRules::settle`] is the decision for one delivery. The subscription machine
//! ([`crate::broker::machine`]) runs it for every delivery: it turns the decision into
//! consumer calls ([`Command`](crate::broker::machine::Command)), holds the delayed ones until
//! their deadline, and reports the next deadline so that the driver needs a single timer
//! however many deliveries are waiting.

mod backoff;
mod error;
mod input;
mod rules;
mod settlement;

pub use backoff::{Backoff, BackoffError};
pub use error::SettlementError;
pub use input::Completion;
pub use rules::SubscriptionRules;
pub use settlement::{Republish, Settlement, OUT_OF_ATTEMPTS, UNDECODABLE};

#[cfg(test)]
mod tests;
