//! The metrics every driver and the built-in `Metrics` layer report through the `metrics`
//! facade; a service exports them by installing a recorder (Prometheus, StatsD, ...). Without
//! one they cost a no-op call.

/// Counter, label `handler`: deliveries handed to the handler.
pub const DELIVERIES: &str = "ruststream_deliveries_total";
/// Counter, labels `handler` and `outcome` (`ack`, `retry`, `retry_after`, `drop`,
/// `panicked`, `rejected`, `dead_lettered`, `rescheduled` (republished by `retry_later`),
/// and `dead_letter`, `retry_later`, `backoff` or `backoff_later` for such an outcome
/// refused for want of its topic or policy):
/// how deliveries ended.
pub const OUTCOMES: &str = "ruststream_outcomes_total";
/// Counter, labels `handler`, `call` (`ack`, `nack`, `ack_index`; `commit` and `abort` for a
/// transactional registration) and `result` (`ok`, `error`): the messages settled through
/// calls on the consumer, one for each message of a grouped call.
pub const CALLS: &str = "ruststream_settlement_calls_total";
/// Counter, labels `handler` and `call` (`ack`, `nack`, `ack_index`; `commit` and `abort` for
/// a transactional registration): the calls made on the consumer, each one broker command per
/// topic. The acknowledgements due at one flush (what settled while the driver had events
/// ready) go as one call, and so do the negative ones: under load this is far below [`CALLS`].
pub const COMMANDS: &str = "ruststream_settlement_commands_total";
/// Counter, label `handler`: outcomes refused (a `retry_after` not shorter than the ack
/// timeout, a `dead_letter` or `retry_later` without its topic); the delivery was left
/// unsettled.
pub const REFUSED: &str = "ruststream_refused_outcomes_total";
/// Counter, label `handler`: deliveries the client could not read (a compression it
/// cannot undo, corrupt bytes, a batch that does not parse); each also ends as `rejected`
/// or `dead_lettered` in [`OUTCOMES`].
pub const UNREADABLE: &str = "ruststream_unreadable_messages_total";
/// Counter, label `handler`: messages a handler published that the broker did not store;
/// each delivery that published one is not acknowledged and comes back as `retry()`
/// does.
pub const PUBLISH_FAILURES: &str = "ruststream_publish_failures_total";
/// Gauge, label `handler`: deliveries whose handler ended and whose acknowledgement waits
/// for the broker to confirm what it published (or the copy the outcome called for).
pub const AWAITING_PUBLISHES: &str = "ruststream_awaiting_publishes";
/// Gauge, label `handler`: deliveries in a `retry_after` wait.
pub const WAITING: &str = "ruststream_retry_after_waiting";
/// Gauge, label `handler`: deliveries whose handler is running now.
pub const IN_FLIGHT: &str = "ruststream_in_flight_deliveries";
/// Histogram, label `handler`: how long each handler call took, in seconds, on the app's
/// clock (OpenTelemetry's `messaging.process.duration`).
pub const DURATION: &str = "ruststream_process_duration_seconds";
