//! Connecting at startup: every attempt logged, the whole bounded by
//! [`PulsarBroker::connect_timeout`](crate::PulsarBroker::connect_timeout).
//!
//! Left to itself, pulsar-rs's `build` retries an unreachable broker 12 times with a pause
//! that grows to 30 s: 41.6 s without a word before the error. Here each attempt is one
//! pulsar-rs connection with no retry of its own (`max_retries: 0`), a failed attempt is
//! logged at WARN, and attempts repeat until the bound is spent.
//!
//! pulsar-rs keeps the retry options it is built with for the client's whole life: a consumer
//! whose connection drops reconnects with them, and gives up for good once they are spent. So
//! the attempts are made with a probe client, dropped as soon as the broker answers, and the
//! service's client is then built with pulsar-rs's default retry options, within what is left
//! of the bound: a broker outage after startup is ridden out exactly as before.
//!
//! Every wait is the executor's own timer (tokio's on tokio, async-io's on smol and
//! async-std), so this runs on any of the app's runtimes.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::future::{select, Either};
use pulsar::{ConnectionRetryOptions, Executor, Pulsar, PulsarBuilder};
use ruststream::app::StartError;

use super::{connect_error, Connection};
use crate::url::BrokerUrl;

/// The pause after the first failed attempt; it doubles after each one, up to [`MAX_PAUSE`]:
/// short at first for a broker that is just starting, then sparse enough not to flood the log.
const FIRST_PAUSE: Duration = Duration::from_millis(200);

/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// No attempt starts with less than this left of the bound: a connection needs a moment to
/// answer, and an attempt cut short at once would only add a line to the log.
const LAST_WINDOW: Duration = Duration::from_millis(250);

/// Connect to the broker at `url` within `bound`, as the app's client.
///
/// Errors that another attempt cannot mend (a rejected token, a TLS failure, an unknown
/// host) end the attempts at once; a refused or unanswered connection is tried again.
pub(crate) async fn connect<Exe: Executor>(
    url: &BrokerUrl,
    connection: &Connection,
    bound: Duration,
    exe: Exe,
) -> Result<Pulsar<Exe>, StartError> {
    let deadline = Instant::now() + bound;
    let certificates = match &connection.trust_certificates {
        Some(path) => Some(read_pem(url, path, "the trust certificates", TRUST)?),
        None => None,
    };
    let identity = match &connection.client_certificate {
        Some(client) => Some((
            read_pem(url, &client.certificate, "the client certificate", CLIENT)?,
            read_pem(
                url,
                &client.private_key,
                "the client certificate's key",
                CLIENT,
            )?,
        )),
        None => None,
    };
    let tls = Tls {
        certificates,
        identity,
    };
    let builder = || client_builder(url, connection, &tls, exe.clone());
    let mut pause = FIRST_PAUSE;
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let window = left(deadline).min(ConnectionRetryOptions::default().connection_timeout);
        let probe = builder().with_connection_retry_options(ConnectionRetryOptions {
            max_retries: 0,
            connection_timeout: window,
            ..ConnectionRetryOptions::default()
        });
        let failure = match within(&exe, window, probe.build()).await {
            Some(Ok(probe)) => {
                drop(probe);
                match within(&exe, left(deadline), builder().build()).await {
                    Some(Ok(pulsar)) => {
                        tracing::info!(url = %url, attempt, "connected to the Pulsar broker");
                        return Ok(pulsar);
                    }
                    Some(Err(e)) if !worth_retrying(&e) => {
                        return Err(connect_error(&url.to_string(), e))
                    }
                    Some(Err(e)) => e.to_string(),
                    None => "the broker answered, but the service's client did not connect in \
                             the time left"
                        .to_owned(),
                }
            }
            Some(Err(e)) if !worth_retrying(&e) => return Err(connect_error(&url.to_string(), e)),
            Some(Err(e)) => e.to_string(),
            None => format!("no answer within {window:?}"),
        };
        let remaining = left(deadline);
        if remaining <= LAST_WINDOW {
            tracing::warn!(
                url = %url,
                attempt,
                error = %failure,
                "cannot reach the Pulsar broker; giving up, the connect timeout is spent"
            );
            return Err(timed_out(url, bound, attempt, &failure));
        }
        let wait = pause.min(remaining - LAST_WINDOW);
        tracing::warn!(
            url = %url,
            attempt,
            error = %failure,
            retry_in = ?wait,
            "cannot reach the Pulsar broker; retrying"
        );
        exe.delay(wait).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// The TLS material, read once for every attempt: the CA certificates to trust, and the
/// client certificate and its key.
struct Tls {
    certificates: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// A client builder with the broker's authentication and TLS settings.
fn client_builder<Exe: Executor>(
    url: &BrokerUrl,
    connection: &Connection,
    tls: &Tls,
    exe: Exe,
) -> PulsarBuilder<Exe> {
    let mut builder = Pulsar::builder(url.to_string(), exe);
    match (&connection.credentials, &tls.identity) {
        (Some(credentials), _) => builder = builder.with_auth_provider(credentials.provider()),
        // Authenticated by its certificate alone: the broker's `tls` provider takes the
        // role from the certificate's CN.
        (None, Some(_)) => {
            builder = builder.with_auth(pulsar::Authentication {
                name: "tls".into(),
                data: Vec::new(),
            })
        }
        (None, None) => {}
    }
    if let Some(pem) = &tls.certificates {
        builder = builder.with_certificate_chain(pem.clone());
    }
    if let Some((certificate, key)) = &tls.identity {
        builder = builder.with_client_certificate(certificate.clone(), key.clone());
    }
    if connection.allow_insecure_tls {
        builder = builder.with_allow_insecure_connection(true);
    }
    builder
}

/// Where the trust certificates are given.
const TRUST: &str = "PulsarBroker::with_trust_certificates(..)";
/// Where the client certificate is given.
const CLIENT: &str = "PulsarBroker::with_client_certificate(..)";

/// A PEM file given at `given`, read once for every attempt.
fn read_pem(url: &BrokerUrl, path: &Path, what: &str, given: &str) -> Result<Vec<u8>, StartError> {
    std::fs::read(path).map_err(|e| {
        connect_error(
            &url.to_string(),
            format!(
                "cannot read {what} `{}` given to `{given}`: {e}",
                path.display()
            ),
        )
    })
}

/// What is left of the bound.
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// `future`'s output, or `None` once `window` has passed, timed by the executor.
async fn within<Exe: Executor, T>(
    exe: &Exe,
    window: Duration,
    future: impl Future<Output = T>,
) -> Option<T> {
    let future = std::pin::pin!(future);
    let timer = std::pin::pin!(exe.delay(window));
    match select(future, timer).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

/// Whether another attempt may succeed: what pulsar-rs itself would retry (a refused or timed
/// out connection, an authentication provider that asks to be retried).
fn worth_retrying(e: &pulsar::Error) -> bool {
    matches!(e, pulsar::Error::Connection(e) if e.establish_retryable())
}

/// The bound was spent: say where, how long and how often it was tried, and what to do.
fn timed_out(url: &BrokerUrl, bound: Duration, attempts: u32, last: &str) -> StartError {
    StartError::Connect {
        broker: "pulsar",
        source: format!(
            "cannot reach the Pulsar broker at {url} within the connect timeout of {bound:?} \
             ({attempts} attempts, the last: {last}). Check that it runs and listens there, \
             give it longer with `PulsarBroker::connect_timeout(..)`, or run with \
             `--embedded` to use the in-process broker"
        )
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_error_names_the_url_the_bound_and_the_fixes() {
        let url = BrokerUrl::parse("pulsar://broker.example:6650").unwrap();
        let text = timed_out(&url, Duration::from_secs(10), 9, "Connection refused").to_string();
        for part in [
            "pulsar://broker.example:6650",
            "connect timeout of 10s",
            "9 attempts",
            "Connection refused",
            "PulsarBroker::connect_timeout(..)",
            "--embedded",
        ] {
            assert!(text.contains(part), "`{part}` missing from: {text}");
        }
    }
}
