//! `PulsarBroker`: handlers mounted on Pulsar, checked, then started.

mod overrides;
mod replay;
mod start;

use crate::credentials::Credentials;
use std::sync::Arc;

use ruststream::app::{Broker, RunningBroker, SettingSpec, StartContext, StartError};
use ruststream::handler::BoxFuture;
use ruststream::handler::Described;
use ruststream::Handler;

pub use overrides::PulsarOverrides;
pub(crate) use replay::replay;

use crate::registration::{Mounted, Registration};
use crate::remote::Connection;
use crate::subscription::PulsarDescriptor;
use crate::HashingScheme;
use ruststream_driver::Mount;

/// The Pulsar broker of an app, with the handlers mounted on it.
///
/// `PulsarBroker::new(url)` does no I/O: the URL is checked when the app starts and the
/// connection is made on the app's runtime. Handlers are mounted with
/// [`PulsarBroker::include`] inside `RustStream::with_broker`.
pub struct PulsarBroker<S> {
    url: String,
    default_subscription: String,
    registrations: Vec<Registration<S>>,
    connection: Connection,
    namespace: Option<String>,
    shutdown_grace: std::time::Duration,
    connect_timeout: std::time::Duration,
    batch_index_acks: bool,
    key_hashing: HashingScheme,
    /// [`PulsarBroker::chunk_messages_over`].
    chunk_over: Option<usize>,
    /// [`PulsarBroker::batching`].
    batching: ruststream::publish::Batching,
    /// [`PulsarBroker::max_pending_publishes`].
    pending: (usize, usize),
    /// [`PulsarBroker::builtins`].
    builtins: ruststream::middleware::Stack,
    /// [`PulsarBroker::layer`].
    layers: ruststream::middleware::Stack,
}

/// How long a stopping service lets running handlers finish, unless
/// [`PulsarBroker::shutdown_grace`] says otherwise.
pub const DEFAULT_SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a starting service tries to reach its Pulsar broker before it fails to start,
/// unless [`PulsarBroker::connect_timeout`] says otherwise: long enough for a broker that is
/// still coming up, short enough that a wrong URL is reported within seconds.
pub const DEFAULT_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a deployment may override without a code change: the values in `app()` are defaults,
/// the environment variables replace them, the runner's flags replace both.
pub const SETTINGS: [SettingSpec; 11] = [
    SettingSpec::new(
        "pulsar.url",
        "RUSTSTREAM_PULSAR_URL",
        "pulsar-url",
        "the Pulsar broker to connect to (pulsar:// or pulsar+ssl://)",
    ),
    SettingSpec::new(
        "pulsar.token",
        "RUSTSTREAM_PULSAR_TOKEN",
        "pulsar-token",
        "the JWT token to authenticate with",
    )
    .secret(),
    SettingSpec::new(
        "pulsar.namespace",
        "RUSTSTREAM_PULSAR_NAMESPACE",
        "pulsar-namespace",
        "the tenant/namespace short topic names resolve in",
    ),
    SettingSpec::new(
        "pulsar.token_file",
        "RUSTSTREAM_PULSAR_TOKEN_FILE",
        "pulsar-token-file",
        "a file holding the JWT token, read again whenever a token is needed",
    ),
    SettingSpec::new(
        "pulsar.tls_trust_certs",
        "RUSTSTREAM_PULSAR_TLS_TRUST_CERTS",
        "pulsar-tls-trust-certs",
        "a PEM file of the CA certificates to trust for pulsar+ssl://",
    ),
    SettingSpec::new(
        "pulsar.tls_cert",
        "RUSTSTREAM_PULSAR_TLS_CERT",
        "pulsar-tls-cert",
        "the client certificate (PEM) for mutual TLS",
    ),
    SettingSpec::new(
        "pulsar.tls_key",
        "RUSTSTREAM_PULSAR_TLS_KEY",
        "pulsar-tls-key",
        "the client certificate's private key (PEM, PKCS#8) for mutual TLS",
    ),
    SettingSpec::new(
        "pulsar.oauth2_issuer_url",
        "RUSTSTREAM_PULSAR_OAUTH2_ISSUER_URL",
        "pulsar-oauth2-issuer-url",
        "the OAuth2 issuer to trade client credentials at",
    ),
    SettingSpec::new(
        "pulsar.oauth2_credentials",
        "RUSTSTREAM_PULSAR_OAUTH2_CREDENTIALS",
        "pulsar-oauth2-credentials",
        "the OAuth2 credentials file (JSON: client_id, client_secret)",
    ),
    SettingSpec::new(
        "pulsar.oauth2_audience",
        "RUSTSTREAM_PULSAR_OAUTH2_AUDIENCE",
        "pulsar-oauth2-audience",
        "the audience to ask OAuth2 tokens for",
    ),
    SettingSpec::new(
        "pulsar.oauth2_scope",
        "RUSTSTREAM_PULSAR_OAUTH2_SCOPE",
        "pulsar-oauth2-scope",
        "the scope to ask OAuth2 tokens for",
    ),
];

/// The subscription a handler mounted by a bare topic name joins, unless
/// [`PulsarBroker::default_subscription`] names another.
pub const DEFAULT_SUBSCRIPTION: &str = "ruststream";

impl<S: Send + Sync + 'static> PulsarBroker<S> {
    /// A broker at `url` (`pulsar://host:6650` or `pulsar+ssl://host:6651`).
    pub fn new(url: impl Into<String>) -> Self {
        PulsarBroker {
            url: url.into(),
            default_subscription: DEFAULT_SUBSCRIPTION.to_owned(),
            registrations: Vec::new(),
            connection: Connection::default(),
            namespace: None,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            batch_index_acks: false,
            key_hashing: HashingScheme::default(),
            chunk_over: None,
            batching: ruststream::publish::Batching::new(),
            pending: (
                crate::remote::MAX_PENDING_MESSAGES,
                crate::remote::MAX_PENDING_BYTES,
            ),
            builtins: crate::layers::builtins(),
            layers: ruststream::middleware::Stack::new(),
        }
    }

    /// Put `layer` around every handler of this broker, and every message they and the app
    /// publish through it: inside the built-ins and the app's layers, outside the
    /// registrations' (see `ruststream::middleware`). Layers added later sit further in.
    pub fn layer(mut self, layer: impl ruststream::middleware::Layer) -> Self {
        self.layers = std::mem::take(&mut self.layers).push(layer);
        self
    }

    /// Edit the built-in layers, the outermost of every handler ([`crate::layers::builtins`]:
    /// the delivery span and its lines, trace context, the per-delivery metrics): drop one,
    /// replace one with the service's own, reorder them.
    ///
    /// ```
    /// use ruststream_pulsar::layers::{Metrics, Tracing};
    /// use ruststream_pulsar::PulsarBroker;
    /// # struct MyMetrics;
    /// # impl ruststream::middleware::Layer for MyMetrics {}
    ///
    /// let broker = PulsarBroker::<()>::new("pulsar://127.0.0.1:6650")
    ///     .builtins(|layers| layers.without::<Tracing>().replace::<Metrics>(MyMetrics));
    /// # drop(broker);
    /// ```
    pub fn builtins(
        mut self,
        edit: impl FnOnce(ruststream::middleware::Stack) -> ruststream::middleware::Stack,
    ) -> Self {
        self.builtins = edit(std::mem::take(&mut self.builtins));
        self
    }

    /// How the producers batch the messages this service publishes (default
    /// [`Batching::new`](ruststream::publish::Batching::new), the Java client's: at most 1,000
    /// messages and 128 KiB an entry, and a message waits at most 1 ms for others to join its
    /// entry). Handlers, the app's own publishes and the dead-letter and retry copies all go
    /// through them; a message or an `#[outgoing(batching = "..")]` type may say otherwise for
    /// itself. A message with a delivery time, and each chunk, is always an entry of its own.
    /// No effect on the in-process broker, which stores each message at the call.
    pub fn batching(mut self, batching: ruststream::publish::Batching) -> Self {
        self.batching = batching;
        self
    }

    /// How many messages (default 10,000) and payload bytes (default 64 MiB) the producers
    /// hold, handed over and not yet answered by the broker, before a publish waits for room:
    /// the backpressure a service that publishes faster than the broker stores feels, instead
    /// of failing or holding ever more memory.
    pub fn max_pending_publishes(mut self, messages: usize, bytes: usize) -> Self {
        self.pending = (messages.max(1), bytes.max(1));
        self
    }

    /// How long a stopping service lets running handlers finish (default
    /// [`DEFAULT_SHUTDOWN_GRACE`]). Handlers still running then are cancelled: no outcome, so
    /// their messages stay unacknowledged and come back.
    pub fn shutdown_grace(mut self, grace: std::time::Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Also acknowledge each message of a batched entry at batch-index level as it is settled
    /// (PIP-54), for brokers run with `acknowledgmentAtBatchIndexLevelEnabled=true` (Apache
    /// Pulsar's default is `false`). The broker then remembers which messages of an unfinished
    /// entry were acknowledged, so that after a restart, or on another instance, only the
    /// others come back. Off by default: the entry is acknowledged as a whole once all of it
    /// is settled either way (`docs/delivery-guarantees.md`).
    pub fn batch_index_acknowledgement(mut self, enabled: bool) -> Self {
        self.batch_index_acks = enabled;
        self
    }

    /// How a message with a key published to a partitioned topic picks its partition
    /// (default [`HashingScheme::JavaString`], the Java and Go clients' default): the same key
    /// always goes to the same partition, so its messages keep their order. Use the scheme the
    /// other producers of the topic use, for their messages and this service's of one key to
    /// share a partition: [`HashingScheme::Boost`] for the Python, C++ and Node.js clients'
    /// default, [`HashingScheme::Murmur3_32`] where every producer was set to it. Messages
    /// without a key take the partitions in turn (`docs/topics.md`).
    pub fn key_hashing(mut self, scheme: HashingScheme) -> Self {
        self.key_hashing = scheme;
        self
    }

    /// Publish a message whose payload is larger than `max_message_size` bytes as chunks
    /// (PIP-37), each under that size, which consumers join again: set it to the broker's
    /// `maxMessageSize` (Apache Pulsar's default is 5 MiB, 5 242 880 bytes), so that such a
    /// message is stored instead of refused. Off by default: without it the broker refuses a
    /// message over its limit and publishing fails. It applies to every publish of the service,
    /// dead-letter and retry copies included, so a large message a handler cannot process
    /// reaches its dead-letter topic whole.
    ///
    /// A chunked message is sent unbatched and uncompressed (the Java client's rule: chunking
    /// needs batching off); every chunk carries the message's properties and key, and the
    /// publish returns the last chunk's id. Consumers that join chunks: ruststream's, and the
    /// Java, C++ (Python) and Go clients' (`docs/chunked-messages.md`).
    pub fn chunk_messages_over(mut self, max_message_size: usize) -> Self {
        self.chunk_over = Some(max_message_size);
        self
    }

    /// How long starting tries to reach the broker (default [`DEFAULT_CONNECT_TIMEOUT`], 10 s)
    /// before the service fails to start with an error that names the URL and this bound.
    ///
    /// Each failed attempt is logged at WARN with its number, the URL and the reason; attempts
    /// repeat after a pause that doubles from 0.2 s up to 2 s. The bound covers startup only:
    /// once connected, a lost connection is re-established by pulsar-rs with its own retry
    /// options. It has no effect on the in-process broker. A zero bound is refused when the
    /// app starts, since no attempt could be made.
    pub fn connect_timeout(mut self, bound: std::time::Duration) -> Self {
        self.connect_timeout = bound;
        self
    }

    /// Resolve short topic names (`refunds`) in `tenant/namespace` instead of Pulsar's
    /// `public/default`. Fully qualified names and `tenant/namespace/topic` names are kept.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Authenticate with a JWT token (Pulsar's `token` authentication).
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        let token = crate::credentials::Secret(token.into().into());
        self.connection.credentials = Some(Credentials::Token(token));
        self
    }

    /// Authenticate with the JWT token in this file, read again each time one is needed (a
    /// new connection, the broker asking for fresh credentials): a token rotated by a sidecar
    /// is picked up without a restart.
    pub fn with_token_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.connection.credentials = Some(Credentials::TokenFile(path.into()));
        self
    }

    /// Authenticate with the JWT token in this environment variable, read again each time
    /// one is needed.
    pub fn with_token_from_env(mut self, variable: impl Into<String>) -> Self {
        self.connection.credentials = Some(Credentials::TokenEnv(variable.into()));
        self
    }

    /// Authenticate with OAuth2 client credentials: a short-lived token from the issuer,
    /// fetched again before it expires (`docs/connecting.md`).
    pub fn with_oauth2(mut self, oauth2: crate::OAuth2) -> Self {
        self.connection.credentials = Some(Credentials::OAuth2(oauth2));
        self
    }

    /// Trust the CA certificates in this PEM file for `pulsar+ssl://` connections (the
    /// server's certificate is checked against them, and its name against the URL's host).
    pub fn with_trust_certificates(mut self, pem_file: impl Into<std::path::PathBuf>) -> Self {
        self.connection.trust_certificates = Some(pem_file.into());
        self
    }

    /// Present this client certificate on `pulsar+ssl://` connections (mutual TLS): its PEM
    /// certificate file (the client's certificate first) and PEM PKCS#8 private key file
    /// (`BEGIN PRIVATE KEY`). Without a token or OAuth2, the service authenticates by the
    /// certificate (Pulsar's `tls` authentication: the role is the certificate's CN).
    pub fn with_client_certificate(
        mut self,
        certificate_pem: impl Into<std::path::PathBuf>,
        private_key_pem: impl Into<std::path::PathBuf>,
    ) -> Self {
        self.connection.client_certificate = Some(crate::credentials::ClientCertificate {
            certificate: certificate_pem.into(),
            private_key: private_key_pem.into(),
        });
        self
    }

    /// Accept any server certificate on `pulsar+ssl://` (testing only).
    pub fn allow_insecure_tls(mut self, allow: bool) -> Self {
        self.connection.allow_insecure_tls = allow;
        self
    }

    /// The subscription (Shared) that handlers mounted by a bare topic name join.
    pub fn default_subscription(mut self, name: impl Into<String>) -> Self {
        self.default_subscription = name.into();
        self
    }

    /// Mount `handler` where its `#[subscriber(..)]` says; the returned value declares the
    /// attempt limit and the dead-letter topic.
    pub fn include<H>(&mut self, handler: H) -> Mounted<'_, S>
    where
        H: Handler<S> + Described,
        H::Descriptor: PulsarDescriptor,
    {
        let descriptor = handler.descriptor().into_subscription();
        let dead_letters = handler.dead_letters();
        let payload_schema = handler.payload_schema();
        let message = handler.message();
        let handler_batch = handler.batch_policy();
        let handler = Arc::new(handler);
        let mut mount = Mount::new(handler.name());
        crate::inprocess::add_driver(&mut mount, &handler);
        crate::remote::add_drivers(&mut mount, &handler);
        let mut registration = Registration::new(Arc::new(mount), descriptor, dead_letters);
        registration.payload_schema = payload_schema;
        registration.message = message;
        registration.handler_batch = handler_batch;
        self.registrations.push(registration);
        Mounted::new(self.registrations.last_mut().expect("just pushed"))
    }

    /// The broker's URL, as given.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl<S: Send + Sync + 'static> Broker<S> for PulsarBroker<S> {
    fn kind(&self) -> &'static str {
        "pulsar"
    }

    fn check(&self) -> Result<(), StartError> {
        self.checked().map(|_| ())
    }

    fn settings(&self) -> &'static [SettingSpec] {
        &SETTINGS
    }

    fn describe(
        &self,
        settings: &ruststream::app::Settings,
    ) -> Result<ruststream::describe::Description, StartError> {
        // The URL and namespace the process would start with (credentials play no part).
        let overrides = PulsarOverrides::from_settings(settings);
        let url = overrides.url.as_deref().unwrap_or(&self.url);
        let namespace = overrides.namespace.as_deref().or(self.namespace.as_deref());
        let checked = crate::registration::check(
            &crate::registration::BrokerSettings {
                url,
                default_subscription: &self.default_subscription,
                namespace,
                connect_timeout: self.connect_timeout,
            },
            &self.registrations,
        )?;
        let tenant = namespace
            .and_then(|ns| ns.split('/').next())
            .unwrap_or("public");
        Ok(crate::registration::describe(&checked, tenant))
    }

    fn start(
        self: Box<Self>,
        state: Arc<S>,
        context: StartContext,
    ) -> BoxFuture<'static, Result<Box<dyn RunningBroker>, StartError>> {
        Box::pin(start::start(*self, state, context))
    }

    fn replay_dead_letters(
        self: Box<Self>,
        replay: ruststream::replay::Replay,
        context: StartContext,
    ) -> BoxFuture<
        'static,
        Result<ruststream::replay::ReplaySummary, ruststream::replay::ReplayError>,
    > {
        Box::pin(replay::replay(*self, replay, context))
    }
}
