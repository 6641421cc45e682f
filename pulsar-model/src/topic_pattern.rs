//! A regular expression over the topics of one namespace, as a pattern subscription reads them.
//!
//! The Java client's pattern consumer (`PatternMultiTopicsConsumerImpl`, `TopicList.filterTopics`)
//! lists the namespace's topics, takes each partition back to the name of its partitioned topic,
//! and keeps those whose name the pattern matches as a whole. [`TopicPattern`] does the same:
//! `orders-.*` in `acme/prod` matches `persistent://acme/prod/orders-eu` and every partition
//! of a partitioned `orders-us`, never a non-persistent topic, a topic of another namespace, or
//! `my-orders-x` (the match is anchored at both ends).
//!
//! pulsar-rs matches its regex against each full topic name, partitions included, and unanchored;
//! [`TopicPattern::full_name_regex`] is the expression that makes it select exactly the topics
//! [`TopicPattern::matches`] selects, so the in-process Pulsar and a real broker agree.

use regex::Regex;

use crate::{TopicName, TopicPatternError};

/// A pattern over the persistent topics of one namespace.
#[derive(Debug, Clone)]
pub struct TopicPattern {
    namespace: String,
    pattern: String,
    full: Regex,
}

impl PartialEq for TopicPattern {
    fn eq(&self, other: &Self) -> bool {
        self.namespace == other.namespace && self.pattern == other.pattern
    }
}

impl Eq for TopicPattern {}

impl TopicPattern {
    /// `pattern` as written: `persistent://tenant/namespace/<regex>`, `tenant/namespace/<regex>`,
    /// or a bare `<regex>`, which applies in `namespace` (Pulsar's `public/default` when
    /// `None`). The regex is matched against a topic's local name (a partition's without its
    /// `-partition-<n>`), anchored at both ends.
    pub fn parse(
        pattern: &str,
        namespace: Option<&str>,
    ) -> Result<TopicPattern, TopicPatternError> {
        let error = |reason: String| TopicPatternError {
            pattern: pattern.to_owned(),
            reason,
        };
        let (namespace, regex) = if let Some((domain, rest)) = pattern.split_once("://") {
            if !domain.eq_ignore_ascii_case("persistent") {
                return Err(error(format!(
                    "the domain is `{domain}`, but only persistent topics can be subscribed \
                     durably; write `persistent://tenant/namespace/<regex>`"
                )));
            }
            split_namespace(rest).ok_or_else(|| {
                error("a fully qualified pattern is `persistent://tenant/namespace/<regex>`".into())
            })?
        } else if pattern.matches('/').count() >= 2 {
            split_namespace(pattern).expect("two slashes")
        } else {
            (
                namespace.unwrap_or("public/default").to_owned(),
                pattern.to_owned(),
            )
        };
        if regex.is_empty() {
            return Err(error(
                "the regular expression is empty; write one that matches topic names, e.g. \
                 `orders-.*`"
                    .into(),
            ));
        }
        // The namespace must be one a topic name could have.
        TopicName::parse(&format!("persistent://{namespace}/x"))
            .map_err(|e| error(format!("its namespace `{namespace}` is not valid: {e}")))?;
        let full = format!(
            "^persistent://{}/(?:{regex})(?:-partition-(?:0|[1-9][0-9]*))?$",
            regex::escape(&namespace)
        );
        let full = Regex::new(&full)
            .map_err(|e| error(format!("`{regex}` is not a regular expression: {e}")))?;
        Ok(TopicPattern {
            namespace,
            pattern: regex,
            full,
        })
    }

    /// `tenant/namespace`: where the pattern looks for topics.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The regular expression as written, without its namespace.
    pub fn regex(&self) -> &str {
        &self.pattern
    }

    /// The expression to match full topic names with (partitions included): what pulsar-rs's
    /// `with_topic_regex` is given.
    pub fn full_name_regex(&self) -> &Regex {
        &self.full
    }

    /// Whether the pattern selects `topic` (a partition when its partitioned topic's name
    /// matches).
    pub fn matches(&self, topic: &TopicName) -> bool {
        self.full.is_match(topic.as_str())
    }
}

impl std::fmt::Display for TopicPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "persistent://{}/{}", self.namespace, self.pattern)
    }
}

/// `tenant/namespace/<regex>` split after the namespace.
fn split_namespace(rest: &str) -> Option<(String, String)> {
    let mut parts = rest.splitn(3, '/');
    let (tenant, namespace, regex) = (parts.next()?, parts.next()?, parts.next()?);
    Some((format!("{tenant}/{namespace}"), regex.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str) -> TopicName {
        TopicName::parse(name).unwrap()
    }

    #[test]
    fn a_bare_pattern_is_in_the_given_namespace_and_anchored() {
        let p = TopicPattern::parse("orders-.*", Some("acme/prod")).unwrap();
        assert_eq!(p.to_string(), "persistent://acme/prod/orders-.*");
        assert!(p.matches(&topic("persistent://acme/prod/orders-eu")));
        assert!(p.matches(&topic("persistent://acme/prod/orders-us-partition-3")));
        assert!(!p.matches(&topic("persistent://acme/prod/my-orders-x")));
        assert!(!p.matches(&topic("persistent://acme/test/orders-eu")));
        assert!(!p.matches(&topic("non-persistent://acme/prod/orders-eu")));
    }

    #[test]
    fn a_partition_matches_by_its_partitioned_topic() {
        let p = TopicPattern::parse("orders-[a-z]+", None).unwrap();
        assert!(p.matches(&topic("orders-eu-partition-0")));
        assert!(p.matches(&topic("orders-eu-partition-12")));
        assert!(
            !p.matches(&topic("orders-eu-partition-01")),
            "not a partition"
        );
        assert!(!p.matches(&topic("orders-eu-2")));
    }

    #[test]
    fn qualified_patterns_name_their_namespace() {
        for written in ["persistent://acme/prod/orders-.*", "acme/prod/orders-.*"] {
            let p = TopicPattern::parse(written, Some("other/ns")).unwrap();
            assert_eq!(p.namespace(), "acme/prod", "{written}");
            assert_eq!(p.regex(), "orders-.*");
        }
    }

    #[test]
    fn bad_patterns_say_what_is_wrong() {
        let e = TopicPattern::parse("orders-(", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("orders-(") && e.contains("not a regular expression"),
            "{e}"
        );
        let e = TopicPattern::parse("non-persistent://a/b/c.*", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("non-persistent"), "{e}");
        let e = TopicPattern::parse("", None).unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
        let e = TopicPattern::parse("bad tenant/ns/x.*", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad tenant/ns"), "{e}");
    }
}
