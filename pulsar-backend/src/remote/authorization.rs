//! A broker that refuses an operation to the service's role: said once, with the topic, the
//! operation and the role, rather than retried.
//!
//! The broker's own message names neither the topic nor the role ("Client is not authorized
//! to subscribe"); pulsar-rs does not retry the refusal (its `AuthorizationError` is not
//! among the errors it retries), and neither does the service: a subscription refused at
//! startup stops the service, a publish refused fails with this error.

use crate::credentials::Credentials;

/// Whether `error` is the broker's refusal of an operation to the role
/// (`ServerError::AuthorizationError`), from a command or a lookup.
pub(crate) fn is_refused(error: &pulsar::Error) -> bool {
    use pulsar::error::{ConnectionError, ServiceDiscoveryError};
    use pulsar::message::proto::ServerError;
    let refused = |code: &Option<ServerError>| *code == Some(ServerError::AuthorizationError);
    match error {
        pulsar::Error::Connection(ConnectionError::PulsarError(code, _))
        | pulsar::Error::Consumer(pulsar::error::ConsumerError::Connection(
            ConnectionError::PulsarError(code, _),
        ))
        | pulsar::Error::Producer(pulsar::error::ProducerError::Connection(
            ConnectionError::PulsarError(code, _),
        ))
        | pulsar::Error::ServiceDiscovery(ServiceDiscoveryError::Query(code, _)) => refused(code),
        _ => false,
    }
}

/// What to say of a refusal of `operation` (`subscribe to`, `publish to`, `look up`) on
/// `topic`, for the role the credentials carry where they tell it, with the broker's own
/// words (`error`) and how to mend it (`grant`: the permission to give).
pub(crate) fn refused(
    credentials: Option<&Credentials>,
    operation: &str,
    topic: &str,
    grant: &str,
    error: &pulsar::Error,
) -> String {
    let role = match credentials.and_then(Credentials::role) {
        Some(role) => format!("role `{role}`"),
        None => "the service's role".to_owned(),
    };
    format!(
        "not authorized: the broker refused to let {role} {operation} `{topic}` ({error}); \
         grant the role `{grant}` on the topic or its namespace (pulsar-admin namespaces \
         grant-permission --role <role> --actions {grant} <tenant/namespace>), or use \
         credentials of a role that has it"
    )
}
