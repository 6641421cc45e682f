//! The Pulsar server transport: pulsar-rs on the app's runtime.
//!
//! Connecting, one consumer per subscription (type, ack timeout as pulsar-rs's unacked-message
//! resend delay, receiver queue sized to the concurrency), and one producer per topic
//! partition for publishing, batched and pipelined ([`publish`]).

mod authorization;
mod connect;
mod consumer;
#[cfg(feature = "async-std")]
mod executor;
mod in_flight;
mod probe;
mod publish;
mod replay;
mod transactions;

use std::sync::Arc;

use pulsar::consumer::ConsumerOptions;
use pulsar::{Executor, Pulsar};
use ruststream::app::{Health, HealthCheck, RunningBroker, StartError};
use ruststream::handler::{BoxFuture, Publish};
use ruststream::message::{Message, MessageId};
use ruststream::runtime::{Flavor, Runtime};
use ruststream::PublishError;
use ruststream_pulsar_model::{InitialPosition, TopicSelection};

use crate::chunked::Chunked;
use consumer::RemoteConsumer;
use in_flight::InFlight;
use probe::Probe;
use publish::Publisher;
pub(crate) use publish::{MAX_PENDING_BYTES, MAX_PENDING_MESSAGES};
pub(crate) use replay::replay;

use crate::registration::{Checked, CheckedSubscription};
use crate::transport::{start_on, LaunchSettings, Transport};
use ruststream_driver::Mount;

/// Make `handler` runnable on pulsar-rs's consumers, for every executor this build connects
/// with.
pub(crate) fn add_drivers<S: Send + Sync + 'static, H: ruststream::Handler<S>>(
    mount: &mut Mount<S>,
    handler: &Arc<H>,
) {
    #[cfg(feature = "tokio")]
    mount.add::<Chunked<RemoteConsumer<pulsar::TokioExecutor>>, H>(handler);
    #[cfg(feature = "async-std")]
    mount.add::<Chunked<RemoteConsumer<executor::AppExecutor>>, H>(handler);
    let _ = (mount, handler);
}

/// How to reach the server, besides its URL (its `Debug` shows no secret).
#[derive(Debug, Clone, Default)]
pub(crate) struct Connection {
    pub(crate) credentials: Option<crate::credentials::Credentials>,
    pub(crate) trust_certificates: Option<std::path::PathBuf>,
    pub(crate) client_certificate: Option<crate::credentials::ClientCertificate>,
    pub(crate) allow_insecure_tls: bool,
}

/// How the broker reaches its server, as configured.
#[derive(Debug, Clone)]
pub(crate) struct RemoteSettings {
    pub(crate) connection: Connection,
    pub(crate) namespace: Option<String>,
    pub(crate) connect_timeout: std::time::Duration,
    pub(crate) batch_index_acks: bool,
    /// How keyed messages pick a partition of a partitioned topic.
    pub(crate) key_hashing: ruststream_pulsar_model::HashingScheme,
    /// Publish messages larger than this many bytes as chunks, if set.
    pub(crate) chunk_over: Option<usize>,
    /// How messages that name no setting of their own are batched.
    pub(crate) batching: ruststream::publish::Batching,
    /// The most messages, and payload bytes, handed to the producers and not answered.
    pub(crate) pending: (usize, usize),
}

/// Connect with pulsar-rs on the runtime the app started on and start the drivers.
///
/// On tokio pulsar-rs runs its tokio transport; on smol and async-std its async-std transport,
/// whose sockets and timers run on async-io's reactor (shared by both), with its tasks spawned
/// on the app's runtime. Either way every `retry_after` wait runs on the app's timer.
pub(crate) async fn start<S: Send + Sync + 'static>(
    settings: RemoteSettings,
    checked: Checked<S>,
    state: Arc<S>,
    launch: LaunchSettings,
) -> Result<Box<dyn RunningBroker>, StartError> {
    let flavor = launch.runtime.flavor();
    if flavor == Flavor::Tokio {
        #[cfg(feature = "tokio")]
        {
            let transport =
                RemoteTransport::connect(settings, &checked, &launch, pulsar::TokioExecutor)
                    .await?;
            return start_on(transport, checked, state, launch).await;
        }
    }
    #[cfg(feature = "async-std")]
    {
        let exe = executor::AppExecutor::new(launch.runtime.clone());
        let transport = RemoteTransport::connect(settings, &checked, &launch, exe).await?;
        start_on(transport, checked, state, launch).await
    }
    #[cfg(not(feature = "async-std"))]
    {
        let _ = (settings, state);
        Err(StartError::Connect {
            broker: "pulsar",
            source: format!(
                "the app runs on {flavor:?}, but `rstream-pulsar` was built with pulsar-rs's \
                 tokio transport only: enable its `smol` or `async-std` feature, or run the app \
                 on tokio"
            )
            .into(),
        })
    }
}

fn connect_error(url: &str, what: impl std::fmt::Display) -> StartError {
    let what = what.to_string();
    StartError::Connect {
        broker: "pulsar",
        source: format!(
            "cannot connect to the Pulsar broker at {url}: {what}. {}",
            advice(&what)
        )
        .into(),
    }
}

/// What to check for a connection that failed with `what` (`docs/connecting.md`).
fn advice(what: &str) -> &'static str {
    let has = |needle: &str| what.contains(needle);
    if has("certificate verify failed") {
        "The broker's certificate was not signed by a CA the service trusts, or does not name \
         the URL's host: check `PulsarBroker::with_trust_certificates` (--pulsar-tls-trust-certs) \
         and the host in the URL"
    } else if has("alert certificate expired") {
        "The broker refused the client certificate as expired: renew it \
         (`PulsarBroker::with_client_certificate`, --pulsar-tls-cert)"
    } else if has("alert") && has("SSL") {
        "The broker refused the TLS handshake: check the client certificate and the CA that \
         signed it (`PulsarBroker::with_client_certificate`)"
    } else if has("Authentication error") || has("AuthenticationError") {
        "The broker or the issuer refused the credentials: check the token or the OAuth2 \
         client credentials"
    } else {
        "Check that it runs and listens there, or run with `--embedded` to use the in-process \
         broker"
    }
}

/// Why subscribing did not succeed within the startup bound, and what to do.
fn subscribe_timed_out<S>(planned: &CheckedSubscription<S>, bound: std::time::Duration) -> String {
    let why = match planned.kind {
        ruststream::SubscriptionType::Exclusive => format!(
            "an Exclusive subscription takes one consumer and another one holds `{}` (another \
             instance of this service, or one that died and that the broker has not dropped \
             yet). Stop the other instance, or use Failover (one active, standbys take over) \
             or Shared",
            planned.subscription
        ),
        _ => "the broker kept refusing the consumer (see the warnings above: ServiceNotReady \
              or ConsumerBusy)"
            .to_owned(),
    };
    format!(
        "cannot subscribe `{}` to {} as {} within {bound:?} (`PulsarBroker::connect_timeout`): \
         {why}",
        planned.subscription, planned.topics, planned.kind
    )
}

/// A topic to look up to tell whether the broker answers: the first one read, or for a
/// pattern a name in its namespace (a lookup needs no topic to exist).
fn probe_topic(topics: &TopicSelection) -> String {
    match topics {
        TopicSelection::Topics(names) if !names.is_empty() => names[0].to_string(),
        TopicSelection::Pattern { pattern, .. } => {
            format!("persistent://{}/ruststream-probe", pattern.namespace())
        }
        _ => "persistent://public/default/ruststream-probe".to_owned(),
    }
}

/// A consumer builder for `topics`: one topic, several, or a pattern with its namespace and
/// refresh (pulsar-rs then lists the namespace again at every refresh and subscribes the new
/// matches; the regex selects exactly what the in-process Pulsar's pattern selects).
fn with_topics<Exe: Executor>(
    builder: pulsar::ConsumerBuilder<Exe>,
    topics: &TopicSelection,
) -> pulsar::ConsumerBuilder<Exe> {
    match topics {
        TopicSelection::Topics(names) if names.len() == 1 => {
            builder.with_topic(names[0].to_string())
        }
        TopicSelection::Topics(names) => builder.with_topics(names.iter().map(|t| t.to_string())),
        TopicSelection::Pattern { pattern, refresh } => builder
            .with_topic_regex(pattern.full_name_regex().clone())
            .with_lookup_namespace(pattern.namespace())
            .with_topic_refresh(*refresh),
        _ => unreachable!("the registration check makes only the selections above"),
    }
}

/// A Pulsar server through pulsar-rs, as one broker's transport.
struct RemoteTransport<Exe: Executor> {
    pulsar: Pulsar<Exe>,
    url: String,
    settings: RemoteSettings,
    runtime: Arc<dyn Runtime>,
    publisher: Arc<Publisher<Exe>>,
    in_flight: InFlight,
    /// Whether the server answers; `None` for a broker with no subscription (nothing to ask
    /// about), which counts as ready once connected.
    probe: Option<Probe>,
}

impl<Exe: Executor> RemoteTransport<Exe> {
    async fn connect<S>(
        settings: RemoteSettings,
        checked: &Checked<S>,
        launch: &LaunchSettings,
        exe: Exe,
    ) -> Result<Self, StartError> {
        let pulsar: Pulsar<Exe> = connect::connect(
            &checked.url,
            &settings.connection,
            settings.connect_timeout,
            exe,
        )
        .await?;
        let probe = checked.subscriptions.first().map(|first| {
            Probe::start(
                pulsar.clone(),
                probe_topic(&first.topics),
                launch.runtime.clone(),
            )
        });
        Ok(RemoteTransport {
            publisher: Arc::new(
                Publisher::new(
                    pulsar.clone(),
                    launch.runtime.clone(),
                    settings.namespace.clone(),
                    settings.key_hashing,
                )
                .chunking(settings.chunk_over)
                .credentials(settings.connection.credentials.clone())
                .batching(settings.batching)
                .pending(settings.pending.0, settings.pending.1),
            ),
            probe,
            pulsar,
            url: checked.url.to_string(),
            settings,
            runtime: launch.runtime.clone(),
            in_flight: InFlight::default(),
        })
    }
}

impl<Exe: Executor> Transport for RemoteTransport<Exe> {
    type Consumer = Chunked<RemoteConsumer<Exe>>;

    fn label(&self) -> String {
        self.url.clone()
    }

    async fn subscribe<S: Send + Sync + 'static>(
        &self,
        planned: &CheckedSubscription<S>,
    ) -> Result<Chunked<RemoteConsumer<Exe>>, StartError> {
        let sub_type = crate::sub_type(planned.kind).ok_or_else(|| {
            connect_error(
                &self.url,
                format!("unsupported subscription type {}", planned.kind),
            )
        })?;
        let initial_position = match planned.initial_position {
            InitialPosition::Earliest => pulsar::consumer::InitialPosition::Earliest,
            _ => pulsar::consumer::InitialPosition::Latest,
        };
        let mut options = ConsumerOptions::default()
            .with_receiver_queue_size(u32::try_from(planned.receiver_queue).unwrap_or(u32::MAX))
            .with_initial_position(initial_position);
        // The broker checks the handler's payload schema against the topic's now, at startup.
        options.schema = planned.schema.as_ref().map(crate::schema::to_proto);
        let builder = with_topics(self.pulsar.consumer(), &planned.topics)
            .with_subscription(planned.subscription.clone())
            .with_subscription_type(sub_type)
            .with_consumer_name(format!("{}-{}", planned.handler.name(), std::process::id()))
            .with_options(options)
            .with_unacked_message_resend_delay(planned.ack_timeout);
        // pulsar-rs retries a refused subscription (ConsumerBusy, ServiceNotReady) every 5 s
        // without end; at startup the connect bound applies to it too.
        let bound = self.settings.connect_timeout;
        let subscribing = std::pin::pin!(builder.build::<Vec<u8>>());
        let timer = std::pin::pin!(self.runtime.sleep(bound));
        let consumer = match futures::future::select(subscribing, timer).await {
            futures::future::Either::Left((built, _)) => {
                built.map_err(|e| match &planned.schema {
                    Some(schema) if crate::schema::is_incompatible(&e.to_string()) => {
                        StartError::Connect {
                            broker: "pulsar",
                            source: crate::schema::subscription_refused(
                                planned.handler.name(),
                                &planned.topics,
                                &planned.subscription,
                                schema,
                                &e.to_string(),
                            )
                            .into(),
                        }
                    }
                    _ if authorization::is_refused(&e) => StartError::Connect {
                        broker: "pulsar",
                        source: format!(
                            "cannot subscribe `{}` to {} as {}: {}",
                            planned.subscription,
                            planned.topics,
                            planned.kind,
                            authorization::refused(
                                self.settings.connection.credentials.as_ref(),
                                "subscribe to",
                                &planned.topics.to_string(),
                                "consume",
                                &e
                            )
                        )
                        .into(),
                    },
                    _ => StartError::Connect {
                        broker: "pulsar",
                        source: format!(
                            "cannot subscribe `{}` to {} as {}: {e}",
                            planned.subscription, planned.topics, planned.kind
                        )
                        .into(),
                    },
                })?
            }
            futures::future::Either::Right(_) => {
                return Err(StartError::Connect {
                    broker: "pulsar",
                    source: subscribe_timed_out(planned, bound).into(),
                })
            }
        };
        Ok(Chunked::new(
            RemoteConsumer::new(
                consumer,
                self.in_flight.clone(),
                self.runtime.clone(),
                self.settings.batch_index_acks,
                planned.retry_topic.is_some(),
            ),
            self.runtime.clone(),
        ))
    }

    fn transactions(&self) -> Option<Arc<dyn ruststream_driver::port::TransactionPort>> {
        Some(Arc::new(transactions::RemoteTransactions {
            pulsar: self.pulsar.clone(),
            publisher: self.publisher.clone(),
        }))
    }

    fn publisher(&self) -> Arc<dyn Publish> {
        self.publisher.clone()
    }

    fn publish_port(&self) -> &dyn Publish {
        &*self.publisher
    }

    fn publish_batch(
        &self,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<Vec<MessageId>, PublishError>> {
        Box::pin(self.publisher.publish_batch(messages))
    }

    fn in_flight(&self) -> usize {
        self.in_flight.count()
    }

    fn idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.in_flight.idle())
    }

    fn health(&self) -> HealthCheck {
        let url = self.url.clone();
        let probe = self.probe.clone();
        HealthCheck::new(move || match &probe {
            Some(probe) if !probe.answered() => Health::not_ready(format!(
                "pulsar at {url}: no answer within {:?}; pulsar-rs is reconnecting",
                probe::PROBE_EVERY
            )),
            _ => Health::ready(format!("pulsar at {url}: connected")),
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        if let Some(probe) = &self.probe {
            probe.stop();
        }
        Box::pin(self.publisher.close())
    }
}
