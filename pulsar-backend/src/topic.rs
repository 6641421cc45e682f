//! Topic names as this crate resolves them, the same for subscribing and publishing on every
//! transport.

use std::collections::HashMap;
use std::sync::Mutex;

use foldhash::fast::RandomState;
use ruststream_pulsar_model::{TopicName, TopicNameError};

/// The most names a [`Resolved`] keeps; past it, it starts over (a service publishing to ever
/// new topics pays a parse per name, not unbounded memory).
const KEPT: usize = 1024;

/// Names resolved once and kept: a service publishes to a few topics, many times each, and
/// parsing a name formats, checks and allocates, which would otherwise be paid on every publish.
///
/// Hashed with foldhash rather than std's SipHash: every in-process publish looks its topic up
/// here, and SipHash was a visible share of a publish (docs/performance.md).
#[derive(Debug)]
pub(crate) struct Resolved {
    namespace: Option<String>,
    names: Mutex<HashMap<String, TopicName, RandomState>>,
}

impl Resolved {
    /// Short names in `namespace` (Pulsar's `public/default` when `None`).
    pub(crate) fn new(namespace: Option<String>) -> Self {
        Resolved {
            namespace,
            names: Mutex::new(HashMap::default()),
        }
    }

    /// `topic` resolved as [`resolve`] does.
    pub(crate) fn get(&self, topic: &str) -> Result<TopicName, TopicNameError> {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(name) = names.get(topic) {
            return Ok(name.clone());
        }
        let name = resolve(topic, self.namespace.as_deref())?;
        if names.len() >= KEPT {
            names.clear();
        }
        names.insert(topic.to_owned(), name.clone());
        Ok(name)
    }
}

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
    use super::{resolve, Resolved};

    #[test]
    fn a_kept_name_is_the_one_resolve_gives() {
        let resolved = Resolved::new(Some("acme/prod".to_owned()));
        for _ in 0..2 {
            assert_eq!(
                resolved.get("refunds").unwrap().to_string(),
                "persistent://acme/prod/refunds"
            );
        }
        assert!(resolved.get("a/b").is_err());
    }

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
