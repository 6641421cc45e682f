//! The guide's refunds service, in a crate of its own outside the ruststream workspace. The
//! block between the two markers is the service of the guide, verbatim.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};

// --- the guide's service, verbatim ---------------------------------------------------------

/// How long a busy processor asks its callers to wait.
const BACKOFF: Duration = Duration::from_secs(30);

#[derive(Debug, PartialEq, Serialize, Deserialize, Outgoing)]
#[outgoing(name = "refunds")]
struct Refund {
    id: u64,
    card: String,
    amount_cents: u64,
}

/// A refund left unsettled for two minutes comes back; a wait must be shorter than that.
#[subscriber(PulsarSubscription::new("refunds", "refunds").ack_timeout(Duration::from_secs(120)))]
async fn process_refund(
    refund: &Refund,
    State(processor): State<Arc<Processor>>,
) -> HandlerOutcome {
    match processor.refund(refund).await {
        Ok(()) => HandlerOutcome::ack(),
        // Past the rate limit: a delivery right now would be refused again.
        Err(Refusal::Busy) => HandlerOutcome::retry_after(BACKOFF),
        // No answer: try again at once, up to the attempt cap.
        Err(Refusal::Unavailable) => HandlerOutcome::retry(),
        Err(Refusal::Declined) => {
            tracing::warn!(refund.id, "card declined, refund dropped");
            HandlerOutcome::drop()
        }
    }
}

/// Reads the refunds that ran out of attempts.
#[subscriber(PulsarSubscription::new("refunds-dlq", "refunds-review"))]
async fn review(refund: &Refund) -> HandlerOutcome {
    tracing::error!(refund.id, "refund needs a person to look at it");
    HandlerOutcome::ack()
}

#[ruststream::app]
fn app() -> impl App<State = Clients> {
    RustStream::new(AppInfo::new("refunds", "0.1.0"))
        .on_startup(async move |()| Ok::<_, Infallible>(Clients::default()))
        .with_broker(PulsarBroker::new("pulsar://localhost:6650"), |b| {
            // Five deliveries of one refund, the first included; then the dead-letter topic.
            b.include(process_refund)
                .max_attempts(nonzero!(5u32))
                .dead_letter("refunds-dlq");
            b.include(review);
        })
}

// --- the service's own types ---------------------------------------------------------------

/// Why the card processor did not refund (the test refuses with `Busy` only).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Busy,
    Unavailable,
    Declined,
}

/// The card processor's client: refunds everything, unless told to refuse.
#[derive(Debug, Default)]
struct Processor {
    refuse: Option<Refusal>,
}

impl Processor {
    async fn refund(&self, _refund: &Refund) -> Result<(), Refusal> {
        self.refuse.map_or(Ok(()), Err)
    }
}

/// The clients the handlers share.
#[derive(Debug, Clone, Default, FromRef)]
struct Clients {
    processor: Arc<Processor>,
}

#[cfg(test)]
mod tests;
