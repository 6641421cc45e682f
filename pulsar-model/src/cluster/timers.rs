//! The client timers the cluster runs by hand: ack timeouts, delayed deliveries and the
//! coordinator's transaction timeouts, due at instants the caller passes in.

use ruststream::Instant;

use super::Cluster;
use crate::subscription::Subscription;
use crate::ConsumerId;

impl Cluster {
    /// When a timer fires next: the earliest unacked-message tick
    /// ([`UNACKED_REDELIVERY_TICK`](crate::UNACKED_REDELIVERY_TICK)) at which some consumer
    /// has an expired ack timeout, the earliest delayed delivery coming due, or the earliest
    /// instant the coordinator aborts an open transaction whose timeout passed
    /// ([`crate::transaction`]). `None` when nothing is waiting.
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        if !self.may_have_timers() {
            return None;
        }
        self.next_deadline.get_or(|| self.compute_next_deadline())
    }

    fn compute_next_deadline(&self) -> Option<Instant> {
        let ticks = self
            .consumers
            .values()
            .filter_map(|c| c.unacked.as_ref()?.next_tick());
        let delayed = self
            .topics
            .values()
            .flat_map(|t| t.subscriptions.values())
            .filter_map(Subscription::next_delayed);
        ticks
            .chain(delayed)
            .chain(self.coordinator.next_timeout())
            .min()
    }

    /// Run every timer due at or before `now`, in order, each at its own instant: delayed
    /// messages coming due join their subscription's replay set, the coordinator aborts the
    /// transactions whose timeout passed (as [`Cluster::abort`] does), the consumers whose
    /// tick comes ask for their expired messages again, with the same effect per type as
    /// [`Cluster::nack`], and the broker dispatches.
    #[inline]
    pub fn handle_timeouts(&mut self, now: Instant) {
        // Every call starts here: the common case, no timer at all, without a call.
        if self.may_have_timers() {
            self.run_timers(now);
        }
    }

    /// Whether any timer can exist: a consumer with an ack timeout is connected, a delayed
    /// message was ever published, or a transaction is open. While not, no call runs a timer
    /// or moves a deadline.
    #[inline]
    pub fn may_have_timers(&self) -> bool {
        self.timed_consumers > 0 || self.delayed_published || self.coordinator.has_open()
    }

    fn run_timers(&mut self, now: Instant) {
        while let Some(tick) = self.next_deadline().filter(|&t| t <= now) {
            for topic in self.topics.values_mut() {
                for sub in topic.subscriptions.values_mut() {
                    sub.release_delayed(tick);
                }
            }
            for txn in self.coordinator.take_timed_out(tick) {
                self.time_out(txn, tick);
            }
            let due: Vec<ConsumerId> = self
                .consumers
                .iter()
                .filter(|(_, c)| c.unacked.as_ref().and_then(|u| u.next_tick()) == Some(tick))
                .map(|(id, _)| *id)
                .collect();
            for id in due {
                let expired = self
                    .consumers
                    .get_mut(&id)
                    .and_then(|c| c.unacked.as_mut())
                    .map(|u| u.expire(tick))
                    .unwrap_or_default();
                if !expired.is_empty() {
                    self.redeliver(id, &expired);
                }
            }
            self.pump(tick);
        }
    }
}
