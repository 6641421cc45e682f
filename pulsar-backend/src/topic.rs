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
/// here, and SipHash is a visible share of a publish's cost.
#[derive(Debug)]
pub(crate) struct Resolved {
    namespace: Option<String>,
    names: Mutex<Names>,
}

/// What [`Resolved`] keeps, under one lock.
#[derive(Debug, Default)]
struct Names {
    all: HashMap<String, TopicName, RandomState>,
    /// The name asked for last, checked before the map: most publishes go to the topic the
    /// one before went to, and comparing a short name costs less than hashing it.
    last: Option<(String, TopicName)>,
}

impl Resolved {
    /// Short names in `namespace` (Pulsar's `public/default` when `None`).
    pub(crate) fn new(namespace: Option<String>) -> Self {
        Resolved {
            namespace,
            names: Mutex::default(),
        }
    }

    /// `topic` resolved as [`resolve`] does.
    pub(crate) fn get(&self, topic: &str) -> Result<TopicName, TopicNameError> {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((last, name)) = &names.last {
            if last == topic {
                return Ok(name.clone());
            }
        }
        let name = match names.all.get(topic) {
            Some(name) => name.clone(),
            None => {
                let name = resolve(topic, self.namespace.as_deref())?;
                if names.all.len() >= KEPT {
                    names.all.clear();
                }
                names.all.insert(topic.to_owned(), name.clone());
                name
            }
        };
        // The last name's room is reused: publishing to two topics in turn allocates nothing.
        match &mut names.last {
            Some((last, kept)) => {
                last.clear();
                last.push_str(topic);
                *kept = name.clone();
            }
            None => names.last = Some((topic.to_owned(), name.clone())),
        }
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
        for topic in ["refunds", "refunds", "orders", "refunds"] {
            assert_eq!(
                resolved.get(topic).unwrap().to_string(),
                format!("persistent://acme/prod/{topic}")
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
