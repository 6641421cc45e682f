//! Real Pulsar-protocol brokers for ruststream's live tests, started by the tests themselves on
//! 127.0.0.1.
//!
//! The in-process Pulsar model can only show what we believe Pulsar does; a live test checks it
//! against a broker that speaks the real wire protocol to the real client (pulsar-rs). No Docker
//! engine runs on this project's machines, so the broker is
//! [pulsar-lite](https://pypi.org/project/pulsar-lite/) (a PyPI package that ships a broker
//! binary), or any broker named by `RUSTSTREAM_PULSAR_URL`.
//!
//! pulsar-rs cannot talk to pulsar-lite directly: pulsar-lite leaves out the optional checksum
//! of delivered messages, which pulsar-rs's decoder requires. [`LiteBridge`] is a loopback proxy
//! that adds it (and keeps lookups pointing at itself); [`LiveBroker`] starts both and is the
//! one handle a test needs. [`require_broker`] is the policy a live test follows: a missing
//! broker fails the test, it never skips it.
//!
//! [`python_keyed_partitions`] and [`java_keyed_partitions`] run the official Python and Java
//! clients against the same broker, so that a live test can compare ruststream with them.
//!
//! [`ApacheStandalone::start_secured`] starts an Apache Pulsar standalone with TLS, token and
//! client-certificate authentication and authorization, its certificates and keys made by the
//! test ([`SecuredStandalone`]); [`IssuerStandIn`] is an OAuth2 issuer on 127.0.0.1 whose
//! tokens it accepts, and [`SecuredPythonClient`] runs the official Python client against it.
//!
//! What was measured with both brokers, and which case runs on which, is in
//! `docs/live-brokers.md`.

mod apache;
mod bridge;
mod checksum;
mod client_certificate;
mod delivery_log;
mod frame;
mod frame_error;
mod frame_fixer;
mod issuer_stand_in;
mod launch_security;
mod live_broker;
mod live_broker_error;
mod oauth_client;
mod other_clients;
mod policy;
mod pulsar_lite;
mod pulsar_lite_binary;
mod secret;
mod secured_python_client;
mod secured_standalone;
mod security_setup;
mod test_pki;
mod token_request;
mod token_signer;
mod topic;

pub use apache::{ApacheStandalone, APACHE_PULSAR_VERSION, NAMESPACE_READY_WITHIN};
pub use bridge::LiteBridge;
pub use checksum::crc32c;
pub use client_certificate::ClientCertificate;
pub use delivery_log::{DeliveryLog, ObservedDelivery};
pub use frame::frame_len;
pub use frame_error::FrameError;
pub use frame_fixer::FrameFixer;
pub use issuer_stand_in::IssuerStandIn;
pub use live_broker::{LiveBroker, EXTERNAL_URL_ENV};
pub use live_broker_error::BrokerError;
pub use oauth_client::OAuthClient;
pub use other_clients::{
    java_count_distinct, java_forward, java_keyed_partitions, java_produce, java_produce_aborted,
    java_produce_committed, python_chunked_publish, python_consume, python_keyed_partitions,
    python_orders, python_produce, python_receive, python_snapshot, python_typed, ChunkedMessage,
    Distinct, ForwardFigures, ReceivedByPython,
};
pub use policy::require_broker;
pub use pulsar_lite::PulsarLite;
pub use pulsar_lite_binary::{PULSAR_LITE_BIN_ENV, PULSAR_LITE_VERSION};
pub use secured_python_client::{PythonAuth, PythonOutcome, PythonRefusal, SecuredPythonClient};
pub use secured_standalone::SecuredStandalone;
pub use security_setup::SecuritySetup;
pub use token_request::TokenRequest;
pub use token_signer::TokenSigner;
pub use topic::unique_topic;
