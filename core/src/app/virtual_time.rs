//! Running a started app on a virtual clock: the one stepping loop of `TestApp` and
//! `run --embedded`.
//!
//! As in a sans-IO protocol core, the app says when it next needs time (the earliest sleep on
//! the clock) and the caller moves the clock there; in between, the caller waits until the app
//! has reacted to everything due, so that each instant is finished before the next begins.

use core::future::{poll_fn, Future};
use core::task::Poll;
use core::time::Duration;

use super::RunningApp;
use crate::runtime::{yield_now, ManualClock, Timer};
use crate::Instant;

/// How many deliveries one step (a settle, or one instant of an advance) may hand to handlers
/// before it gives up with [`Stalled`], unless [`VirtualTime::max_handled_per_instant`] says
/// otherwise. Far more than a finite scenario makes at one instant; reached by a loop, such as
/// a handler that always returns `retry()` on a subscription that keeps no redelivery count.
pub const DEFAULT_MAX_HANDLED_PER_INSTANT: usize = 10_000;

/// Moves a [`ManualClock`] for a started app, settling after every step.
#[derive(Debug, Clone)]
pub struct VirtualTime {
    clock: ManualClock,
    max_handled: usize,
}

/// The app kept handling deliveries at one virtual instant past the bound: on a virtual clock
/// it would never settle. Names the last handler call where the caller knows it (`TestApp`
/// does).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
#[error(
    "no progress at t={:?}: {handled} deliveries handled without time moving{}. A handler \
     that always returns `retry()` on a subscription that keeps no redelivery count \
     (Exclusive, Failover) is redelivered at once, forever (no attempt limit applies): return \
     `retry_after(..)` or `drop()`, or use a Shared subscription with `max_attempts`. If this \
     many calls at one instant is expected, raise the bound (`max_handled_per_instant`)",
    .at.elapsed_since_origin(),
    .last_call.as_ref().map(|c| alloc::format!(
        ", the last one `{}` on subscription `{}` with message {}",
        c.handler, c.subscription, c.message_id
    )).unwrap_or_default()
)]
pub struct Stalled {
    /// How many deliveries the step saw handed to handlers.
    pub handled: u64,
    /// The instant they were all handled at.
    pub at: Instant,
    /// The last handler call, where the caller knows it.
    pub last_call: Option<StalledCall>,
}

/// The last handler call of a step that made no progress.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StalledCall {
    /// The subscription.
    pub subscription: alloc::string::String,
    /// The handler.
    pub handler: &'static str,
    /// The message.
    pub message_id: crate::MessageId,
}

impl StalledCall {
    /// The call of `handler` on `subscription` with `message_id`.
    pub fn new(
        subscription: impl Into<alloc::string::String>,
        handler: &'static str,
        message_id: crate::MessageId,
    ) -> Self {
        StalledCall {
            subscription: subscription.into(),
            handler,
            message_id,
        }
    }
}

impl VirtualTime {
    /// Step `clock`, allowing [`DEFAULT_MAX_HANDLED_PER_INSTANT`] deliveries an instant.
    pub fn new(clock: ManualClock) -> Self {
        VirtualTime {
            clock,
            max_handled: DEFAULT_MAX_HANDLED_PER_INSTANT,
        }
    }

    /// How many deliveries one instant may hand to handlers before a step fails.
    pub fn max_handled_per_instant(mut self, bound: usize) -> Self {
        self.max_handled = bound;
        self
    }

    /// The clock.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Wait until `app` has reacted to everything due now: no fired sleep is left unobserved
    /// and nothing is in flight. Time does not move.
    ///
    /// Fails with [`Stalled`] once the app has handed more deliveries to handlers in this call
    /// than the bound.
    pub async fn settle(&self, app: &RunningApp) -> Result<(), Stalled> {
        let start = app.handled();
        let over = |app: &RunningApp| app.handled().saturating_sub(start) > self.max_handled as u64;
        loop {
            let mut idle = core::pin::pin!(app.idle());
            let stuck = poll_fn(|cx| {
                if idle.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(false);
                }
                app.wake_on_handled(cx.waker());
                if over(app) {
                    return Poll::Ready(true);
                }
                Poll::Pending
            })
            .await;
            if stuck || over(app) {
                return Err(Stalled {
                    handled: app.handled().saturating_sub(start),
                    at: self.clock.now(),
                    last_call: None,
                });
            }
            // Sleeps first: a broker counts what a fired sleep releases as in flight before it
            // lets the sleep go, so in this order nothing can slip between the two checks.
            if self.clock.unobserved() == 0 && app.in_flight() == 0 {
                return Ok(());
            }
            yield_now().await;
        }
    }

    /// Move the clock forward by `by`, firing every deadline on the way in order and settling
    /// after each.
    pub async fn advance(&self, app: &RunningApp, by: Duration) -> Result<(), Stalled> {
        self.settle(app).await?;
        let target = self.clock.now().saturating_add(by);
        while let Some(at) = self.clock.next_deadline().filter(|at| *at <= target) {
            self.clock.advance_to(at);
            self.settle(app).await?;
        }
        self.clock.advance_to(target);
        self.settle(app).await
    }

    /// Settle, jump to the next deadline, repeat until no sleep is pending. Returns the
    /// instant the app went quiet at.
    pub async fn run_until_quiet(&self, app: &RunningApp) -> Result<Instant, Stalled> {
        loop {
            self.settle(app).await?;
            match self.clock.next_deadline() {
                Some(at) => self.clock.advance_to(at),
                None => return Ok(self.clock.now()),
            }
        }
    }
}
