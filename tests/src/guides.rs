//! The guides in `docs/`, compiled and run as doctests so that they cannot go stale.

#[doc = include_str!("../../docs/completion.md")]
pub struct Completion;

#[doc = include_str!("../../docs/retries-and-dead-letter.md")]
pub struct RetriesAndDeadLetter;

#[doc = include_str!("../../docs/topics.md")]
pub struct Topics;

#[doc = include_str!("../../docs/chunked-messages.md")]
pub struct ChunkedMessages;

#[doc = include_str!("../../docs/testing.md")]
pub struct Testing;

#[doc = include_str!("../../docs/runtimes.md")]
pub struct Runtimes;

#[doc = include_str!("../../docs/live-brokers.md")]
pub struct LiveBrokers;

#[doc = include_str!("../../README.md")]
pub struct Readme;

#[doc = include_str!("../../docs/delivery-guarantees.md")]
pub struct DeliveryGuarantees;

#[doc = include_str!("../../docs/connecting.md")]
pub struct Connecting;

#[doc = include_str!("../../docs/architecture.md")]
pub struct Architecture;

#[doc = include_str!("../../docs/handler-parameters.md")]
pub struct HandlerParameters;

#[doc = include_str!("../../docs/configuration.md")]
pub struct Configuration;

#[doc = include_str!("../../docs/transactions.md")]
pub struct Transactions;

#[doc = include_str!("../../docs/operations.md")]
pub struct Operations;

#[doc = include_str!("../../docs/observability.md")]
pub struct Observability;

#[doc = include_str!("../../docs/performance.md")]
pub struct Performance;

#[doc = include_str!("../../docs/schemas.md")]
pub struct Schemas;
#[doc = include_str!("../../docs/interoperability.md")]
pub struct Interoperability;

#[doc = include_str!("../../docs/middleware.md")]
pub struct Middleware;

#[doc = include_str!("../../docs/batch-handlers.md")]
pub struct BatchHandlers;

#[doc = include_str!("../../docs/publishing.md")]
pub struct Publishing;

#[doc = include_str!("../../docs/releasing.md")]
pub struct Releasing;

#[doc = include_str!("../../docs/broker-authors.md")]
pub struct BrokerAuthors;

#[doc = include_str!("../../docs/asyncapi.md")]
pub struct Asyncapi;
