//! The rule every live test follows: no broker is a failure, never a skip.

use crate::{BrokerError, LiveBroker};

/// The broker for a live test: the external one from [`crate::EXTERNAL_URL_ENV`] if set, else a
/// fresh pulsar-lite behind a bridge.
///
/// A live test that silently passes without a broker proves nothing, and a skipped one is easily
/// missed, so a missing broker is always an error, which the test should turn into a failure
/// (`.expect("broker")` prints the advice). With `CI` set the message says the CI script must
/// install the broker; elsewhere it says how to install pulsar-lite.
pub async fn require_broker() -> Result<LiveBroker, BrokerError> {
    let found = match LiveBroker::from_env() {
        Ok(Some(external)) => Ok(external),
        Ok(None) => LiveBroker::pulsar_lite().await,
        Err(err) => Err(err),
    };
    found.map_err(|cause| BrokerError::Unavailable {
        ci: in_ci(),
        cause: Box::new(cause),
    })
}

/// Whether we run in CI: CI systems (and this project's .ci/run) set `CI`, usually to `true`.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| {
        let value = value.trim();
        !value.is_empty() && value != "0" && !value.eq_ignore_ascii_case("false")
    })
}
