//! Topic names as this crate resolves them, the same for subscribing and publishing on every
//! transport.

use ruststream_pulsar_model::{TopicName, TopicNameError};

/// `topic` resolved as Pulsar does, short names in `namespace` when one is given (instead of
/// Pulsar's `public/default`). Fully qualified names and `tenant/namespace/topic` are kept.
pub(crate) fn resolve(topic: &str, namespace: Option<&str>) -> Result<TopicName, TopicNameError> {
    match namespace {
        Some(ns) if !topic.contains("://") && !topic.trim_start_matches('/').contains('/') => {
            TopicName::parse(&format!(
                "persistent://{ns}/{}",
                topic.trim_start_matches('/')
            ))
            .or_else(|_| TopicName::parse(topic))
        }
        _ => TopicName::parse(topic),
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    fn name(topic: &str, ns: Option<&str>) -> String {
        resolve(topic, ns).expect("valid").to_string()
    }

    #[test]
    fn short_names_go_to_the_namespace_and_qualified_names_stay() {
        assert_eq!(name("refunds", None), "persistent://public/default/refunds");
        assert_eq!(
            name("refunds", Some("acme/prod")),
            "persistent://acme/prod/refunds"
        );
        assert_eq!(
            name("other/ns/refunds", Some("acme/prod")),
            "persistent://other/ns/refunds"
        );
        assert_eq!(
            name("non-persistent://a/b/c", Some("acme/prod")),
            "non-persistent://a/b/c"
        );
    }
}
