//! The refunds service of the guide "Retries and dead-letter".
//!
//! Refunds go through a card processor that refuses in three ways, each with its own outcome:
//! Busy (rate limited) waits 30 s, Unavailable retries at once up to the attempt cap, Declined
//! drops the refund. Refunds out of attempts land on `refunds-dlq`, which `review` reads.
//!
//! `cargo run -p refunds -- run --embedded --publish refunds=examples/refunds/samples.jsonl --publish-source`
//! runs it on the in-process Pulsar with the sample refunds; without `--embedded` it connects
//! to the broker in `app()`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};

/// How long a busy processor asks its callers to wait.
const BACKOFF: Duration = Duration::from_secs(30);

/// A refund to pay back to a card.
#[derive(Debug, PartialEq, Serialize, Deserialize, Outgoing, schemars::JsonSchema)]
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
    id: MessageId,
    properties: Properties,
) -> HandlerOutcome {
    // Which message this is, and where it came from (`--publish-source` sets `source`).
    tracing::info!(
        refund.id,
        message_id = %id,
        source = properties.get("source").unwrap_or("unknown"),
        "refund received"
    );
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

/// Why the card processor did not refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Rate limited: ask again later.
    Busy,
    /// No answer.
    Unavailable,
    /// The card account is closed: asking again gets the same answer.
    Declined,
}

/// The card processor's client. This one simulates a processor; a real service would hold an
/// HTTP client here.
#[derive(Debug)]
enum Processor {
    /// Answers by the card's last four digits: `0002` is declined, `0119` never answers,
    /// `9995` is busy for its first two attempts; every other card is refunded.
    Simulated { attempts: Mutex<HashMap<u64, u32>> },
    /// Refuses every refund in the same way (for tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Refusing(Refusal),
    /// Refunds everything (for tests).
    #[cfg_attr(not(test), allow(dead_code))]
    Accepting,
}

impl Default for Processor {
    fn default() -> Self {
        Processor::Simulated {
            attempts: Mutex::new(HashMap::new()),
        }
    }
}

impl Processor {
    async fn refund(&self, refund: &Refund) -> Result<(), Refusal> {
        match self {
            Processor::Refusing(refusal) => Err(*refusal),
            Processor::Accepting => Ok(()),
            Processor::Simulated { attempts } => {
                let attempt = {
                    let mut attempts = attempts.lock().unwrap_or_else(|e| e.into_inner());
                    let n = attempts.entry(refund.id).or_default();
                    *n += 1;
                    *n
                };
                let card = &refund.card;
                if card.ends_with("0002") {
                    Err(Refusal::Declined)
                } else if card.ends_with("0119") {
                    Err(Refusal::Unavailable)
                } else if card.ends_with("9995") && attempt <= 2 {
                    Err(Refusal::Busy)
                } else {
                    tracing::info!(refund.id, refund.amount_cents, attempt, "refunded");
                    Ok(())
                }
            }
        }
    }
}

/// The clients the handlers share.
#[derive(Debug, Clone, Default, FromRef)]
struct Clients {
    processor: Arc<Processor>,
}

#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;
