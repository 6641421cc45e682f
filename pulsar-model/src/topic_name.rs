//! Topic names, resolved exactly as Apache Pulsar resolves them.
//!
//! Pulsar clients and brokers expand a short name before using it: `refunds` is
//! `persistent://public/default/refunds`, `acme/billing/refunds` is
//! `persistent://acme/billing/refunds`. The rules below follow Pulsar's `TopicName` constructor,
//! `NamespaceName.validateNamespaceName`, `TopicDomain.getEnum` and `NamedEntity.checkName`
//! (apache/pulsar, `pulsar-common/src/main/java/org/apache/pulsar/common/naming/`):
//!
//! 1. A name without `://` is split on `/` with empty parts dropped (Java's
//!    `StringUtils.split`): one part `t` becomes `persistent://public/default/t`, three parts
//!    become `persistent://` followed by the name as written; any other count is an error.
//!    (So `/refunds` and `refunds/` resolve like `refunds`, as in Pulsar.)
//! 2. A full name is `<domain>://<rest>`; the domain is `persistent` or `non-persistent`, in any
//!    case, and is written in lower case in the resolved name.
//! 3. `<rest>` is split on `/` into at most four parts. Three parts are tenant, namespace and
//!    local name. Four parts are Pulsar's deprecated form with a cluster, which ruststream
//!    refuses ([`TopicNameErrorKind::LegacyClusterForm`]). Fewer parts are an error.
//! 4. Tenant and namespace must be non-empty and match `^[-=:.\w]*$` (Java's `\w` is
//!    `[a-zA-Z_0-9]`); the local name must be non-empty and is otherwise free (Pulsar URL-encodes
//!    it where needed).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

use crate::error::{TopicNameError, TopicNameErrorKind, TopicNamePart};

/// Where a topic's messages live: Pulsar's `TopicDomain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum TopicDomain {
    /// Stored in BookKeeper, with durable subscriptions; the default for short names.
    Persistent,
    /// Held in memory only and dropped when no one is listening.
    NonPersistent,
}

impl TopicDomain {
    /// The domain as written in a full topic name (`persistent`, `non-persistent`).
    pub const fn as_str(self) -> &'static str {
        match self {
            TopicDomain::Persistent => "persistent",
            TopicDomain::NonPersistent => "non-persistent",
        }
    }
}

impl fmt::Display for TopicDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fully resolved topic name, such as `persistent://public/default/refunds`.
///
/// Two spellings of one topic (`refunds` and `persistent://public/default/refunds`) parse to
/// equal values, which is why the in-process broker and the real-broker code key topics by this
/// type rather than by the string a user wrote. `Display` writes the full name.
///
/// It is one shared string (cloning is a reference-count increment) plus the positions of its
/// parts; equality, hashing and ordering are those of the full name.
///
/// The value itself is one pointer: a delivery carries its topic's name, and each delivery is
/// moved several times on its way to a consumer; at 8 bytes rather than 64, the model's
/// `Dispatched` is small enough to move without a `memcpy` call.
#[derive(Clone)]
pub struct TopicName(Arc<Parts>);

/// A parsed name: the full name and where its parts are in it.
struct Parts {
    full: Arc<str>,
    domain: TopicDomain,
    /// Byte ranges of the parts within `full`.
    tenant: (usize, usize),
    namespace: (usize, usize),
    local_name: usize,
}

// Names are mostly clones of one another (a consumer's topic, the cluster's key for it): the
// shared string answers before its bytes are compared.
impl PartialEq for TopicName {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.full == other.0.full
    }
}

impl Eq for TopicName {}

impl Hash for TopicName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.full.hash(state);
    }
}

impl PartialOrd for TopicName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TopicName {
    fn cmp(&self, other: &Self) -> Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            return Ordering::Equal;
        }
        self.0.full.cmp(&other.0.full)
    }
}

/// The suffix Pulsar appends to a partitioned topic's name to name one of its partitions.
const PARTITION_SUFFIX: &str = "-partition-";

impl TopicName {
    /// Resolve `name` as Pulsar does (see the [module documentation](self) for the rules).
    ///
    /// ```
    /// use ruststream_pulsar_model::TopicName;
    ///
    /// let t = TopicName::parse("refunds")?;
    /// assert_eq!(t.to_string(), "persistent://public/default/refunds");
    /// assert_eq!(t, TopicName::parse("persistent://public/default/refunds")?);
    /// assert!(TopicName::parse("public/refunds").is_err());
    /// # Ok::<(), ruststream_pulsar_model::TopicNameError>(())
    /// ```
    pub fn parse(name: &str) -> Result<TopicName, TopicNameError> {
        let error = |kind| TopicNameError::new(name, kind);
        let expanded;
        let full: &str = if name.contains("://") {
            name
        } else {
            let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
            match parts.len() {
                0 => return Err(error(TopicNameErrorKind::Empty)),
                1 => {
                    expanded = format!("persistent://public/default/{}", parts[0]);
                    &expanded
                }
                3 => {
                    expanded = format!("persistent://{name}");
                    &expanded
                }
                n => return Err(error(TopicNameErrorKind::ShortNameParts { parts: n })),
            }
        };

        let (domain, rest) = full
            .split_once("://")
            .expect("a full name contains `://` by construction");
        let domain = if domain.eq_ignore_ascii_case("persistent") {
            TopicDomain::Persistent
        } else if domain.eq_ignore_ascii_case("non-persistent") {
            TopicDomain::NonPersistent
        } else {
            return Err(error(TopicNameErrorKind::UnknownDomain {
                domain: domain.to_owned(),
            }));
        };

        let parts: Vec<&str> = rest.splitn(4, '/').collect();
        match parts.len() {
            3 => {}
            4 => {
                let named = [
                    (TopicNamePart::Tenant, parts[0]),
                    (TopicNamePart::Cluster, parts[1]),
                    (TopicNamePart::Namespace, parts[2]),
                ];
                for (part, value) in named {
                    check_named_entity(name, part, value)?;
                }
                return Err(error(TopicNameErrorKind::LegacyClusterForm));
            }
            n => return Err(error(TopicNameErrorKind::FullNameParts { parts: n })),
        }
        let (tenant, namespace, local_name) = (parts[0], parts[1], parts[2]);
        check_named_entity(name, TopicNamePart::Tenant, tenant)?;
        check_named_entity(name, TopicNamePart::Namespace, namespace)?;
        if local_name.is_empty() {
            return Err(error(TopicNameErrorKind::EmptyPart {
                part: TopicNamePart::LocalName,
            }));
        }

        let prefix = domain.as_str().len() + "://".len();
        let tenant_end = prefix + tenant.len();
        let namespace_start = tenant_end + 1;
        let namespace_end = namespace_start + namespace.len();
        Ok(TopicName(Arc::new(Parts {
            full: format!("{domain}://{tenant}/{namespace}/{local_name}").into(),
            domain,
            tenant: (prefix, tenant_end),
            namespace: (namespace_start, namespace_end),
            local_name: namespace_end + 1,
        })))
    }

    /// The full name, `<domain>://<tenant>/<namespace>/<local name>`.
    pub fn as_str(&self) -> &str {
        &self.0.full
    }

    /// The full name, shared with this value (no copy).
    pub fn shared(&self) -> Arc<str> {
        self.0.full.clone()
    }

    /// `persistent` or `non-persistent`.
    pub fn domain(&self) -> TopicDomain {
        self.0.domain
    }

    /// Whether messages are stored (the default for short names).
    pub fn is_persistent(&self) -> bool {
        self.0.domain == TopicDomain::Persistent
    }

    /// The tenant (`public` for short names).
    pub fn tenant(&self) -> &str {
        &self.0.full[self.0.tenant.0..self.0.tenant.1]
    }

    /// The namespace within the tenant (`default` for one-part short names). Pulsar's
    /// `getNamespacePortion`; `getNamespace` is `tenant/namespace`.
    pub fn namespace(&self) -> &str {
        &self.0.full[self.0.namespace.0..self.0.namespace.1]
    }

    /// The topic's own name, the last part.
    pub fn local_name(&self) -> &str {
        &self.0.full[self.0.local_name..]
    }

    /// `tenant/namespace`: the namespace this topic is in.
    pub fn namespace_name(&self) -> &str {
        &self.0.full[self.0.tenant.0..self.0.namespace.1]
    }

    /// Partition `index` of this topic, `<name>-partition-<index>`: how Pulsar names the
    /// topics a partitioned topic is made of.
    pub fn partition(&self, index: u32) -> TopicName {
        let full: Arc<str> = format!("{}{PARTITION_SUFFIX}{index}", self.0.full).into();
        TopicName(Arc::new(Parts {
            full,
            domain: self.0.domain,
            tenant: self.0.tenant,
            namespace: self.0.namespace,
            local_name: self.0.local_name,
        }))
    }

    /// The topic this one is a partition of (its name without `-partition-<n>`), or the name
    /// itself when it is not a partition: Pulsar's `getPartitionedTopicName`.
    pub fn partitioned_name(&self) -> &str {
        match self.partition_index() {
            Some(_) => {
                let (base, _) = self
                    .0
                    .full
                    .rsplit_once(PARTITION_SUFFIX)
                    .expect("a partition's name has the suffix");
                base
            }
            None => &self.0.full,
        }
    }

    /// The partition this topic is, if its name ends in `-partition-<n>`: Pulsar's
    /// `TopicName.getPartitionIndex`, which accepts only a canonical non-negative decimal
    /// (`-partition-01` and `-partition--1` are not partitions). Message ids of a partition
    /// carry this index; other topics report `-1`.
    pub fn partition_index(&self) -> Option<i32> {
        let (_, index) = self.0.full.rsplit_once(PARTITION_SUFFIX)?;
        let canonical = !index.is_empty()
            && index.bytes().all(|b| b.is_ascii_digit())
            && (index == "0" || !index.starts_with('0'));
        if canonical {
            index.parse::<i32>().ok()
        } else {
            None
        }
    }
}

/// Pulsar's `NamedEntity.checkName` plus the emptiness check of
/// `NamespaceName.validateNamespaceName`.
fn check_named_entity(input: &str, part: TopicNamePart, value: &str) -> Result<(), TopicNameError> {
    if value.is_empty() {
        return Err(TopicNameError::new(
            input,
            TopicNameErrorKind::EmptyPart { part },
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '=' | ':' | '.');
    match value.chars().find(|&c| !allowed(c)) {
        None => Ok(()),
        Some(character) => Err(TopicNameError::new(
            input,
            TopicNameErrorKind::IllegalCharacter {
                part,
                value: value.to_owned(),
                character,
            },
        )),
    }
}

impl FromStr for TopicName {
    type Err = TopicNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TopicName::parse(s)
    }
}

impl fmt::Display for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.full)
    }
}

impl fmt::Debug for TopicName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TopicName({})", self.0.full)
    }
}

impl AsRef<str> for TopicName {
    fn as_ref(&self) -> &str {
        &self.0.full
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn resolves(input: &str, full: &str) {
        match TopicName::parse(input) {
            Ok(t) => assert_eq!(t.as_str(), full, "resolving `{input}`"),
            Err(e) => panic!("`{input}` should resolve to {full}, got: {e}"),
        }
    }

    #[track_caller]
    fn refused(input: &str, kind: TopicNameErrorKind) {
        match TopicName::parse(input) {
            Ok(t) => panic!("`{input}` should be refused, resolved to {t}"),
            Err(e) => {
                assert_eq!(e.kind(), &kind, "refusing `{input}`");
                assert_eq!(e.input(), input);
            }
        }
    }

    #[test]
    fn valid_names_resolve_as_pulsar_does() {
        let table = [
            ("refunds", "persistent://public/default/refunds"),
            ("refunds-dlq", "persistent://public/default/refunds-dlq"),
            ("acme/billing/refunds", "persistent://acme/billing/refunds"),
            (
                "persistent://acme/billing/refunds",
                "persistent://acme/billing/refunds",
            ),
            (
                "non-persistent://acme/billing/refunds",
                "non-persistent://acme/billing/refunds",
            ),
            // The domain is matched without regard to case and written in lower case.
            (
                "PERSISTENT://public/default/x",
                "persistent://public/default/x",
            ),
            (
                "Non-Persistent://public/default/x",
                "non-persistent://public/default/x",
            ),
            // StringUtils.split drops empty parts of a short name.
            ("/refunds", "persistent://public/default/refunds"),
            ("refunds/", "persistent://public/default/refunds"),
            // Allowed tenant / namespace characters.
            ("t-1=a:b.c_d/ns.2/x", "persistent://t-1=a:b.c_d/ns.2/x"),
            // The local name is free-form.
            ("my topic", "persistent://public/default/my topic"),
            ("über", "persistent://public/default/über"),
            ("a/b/c.d:e", "persistent://a/b/c.d:e"),
        ];
        for (input, full) in table {
            resolves(input, full);
        }
    }

    #[test]
    fn invalid_names_are_refused_with_the_rule_they_break() {
        use TopicNameErrorKind as K;
        use TopicNamePart as P;
        refused("", K::Empty);
        refused("///", K::Empty);
        refused("public/refunds", K::ShortNameParts { parts: 2 });
        refused("a/b/c/d", K::ShortNameParts { parts: 4 });
        refused(
            "kafka://public/default/x",
            K::UnknownDomain {
                domain: "kafka".into(),
            },
        );
        refused(
            "://public/default/x",
            K::UnknownDomain { domain: "".into() },
        );
        refused("persistent://", K::FullNameParts { parts: 1 });
        refused("persistent://public/x", K::FullNameParts { parts: 2 });
        refused(
            "persistent://public/cluster/default/x",
            K::LegacyClusterForm,
        );
        refused("persistent://public/default/x/y", K::LegacyClusterForm);
        refused(
            "persistent://public//default/x",
            K::EmptyPart { part: P::Cluster },
        );
        refused(
            "persistent://public/default/",
            K::EmptyPart { part: P::LocalName },
        );
        refused("persistent:///default/x", K::EmptyPart { part: P::Tenant });
        refused(
            "persistent://public//x",
            K::EmptyPart { part: P::Namespace },
        );
        refused(
            "acme corp/billing/x",
            K::IllegalCharacter {
                part: P::Tenant,
                value: "acme corp".into(),
                character: ' ',
            },
        );
        refused(
            "persistent://acme/bill!ng/x",
            K::IllegalCharacter {
                part: P::Namespace,
                value: "bill!ng".into(),
                character: '!',
            },
        );
        refused(
            "persistent://acmé/billing/x",
            K::IllegalCharacter {
                part: P::Tenant,
                value: "acmé".into(),
                character: 'é',
            },
        );
    }

    #[test]
    fn accessors_and_equality() {
        let t: TopicName = "acme/billing/refunds".parse().unwrap();
        assert_eq!(t.domain(), TopicDomain::Persistent);
        assert!(t.is_persistent());
        assert_eq!(t.tenant(), "acme");
        assert_eq!(t.namespace(), "billing");
        assert_eq!(t.local_name(), "refunds");
        assert_eq!(t, "persistent://acme/billing/refunds".parse().unwrap());
        assert_ne!(t, "non-persistent://acme/billing/refunds".parse().unwrap());
        assert_eq!(
            format!("{t:?}"),
            "TopicName(persistent://acme/billing/refunds)"
        );
        let n: TopicName = "non-persistent://a/b/c".parse().unwrap();
        assert_eq!(n.domain(), TopicDomain::NonPersistent);
        assert!(!n.is_persistent());
    }

    #[test]
    fn partition_index_follows_pulsar() {
        let index = |s: &str| TopicName::parse(s).unwrap().partition_index();
        assert_eq!(index("refunds"), None);
        assert_eq!(index("refunds-partition-0"), Some(0));
        assert_eq!(index("refunds-partition-12"), Some(12));
        assert_eq!(index("refunds-partition-01"), None);
        assert_eq!(index("refunds-partition--1"), None);
        assert_eq!(index("refunds-partition-+1"), None);
        assert_eq!(index("refunds-partition-x"), None);
        assert_eq!(index("refunds-partition-99999999999"), None);
    }

    #[test]
    fn error_message_names_the_input_and_the_accepted_forms() {
        let e = TopicName::parse("public/refunds").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`public/refunds`"), "{text}");
        assert!(text.contains("has 2"), "{text}");
        assert!(
            text.contains("persistent://public/default/<topic>"),
            "{text}"
        );
        assert!(text.contains("<tenant>/<namespace>/<topic>"), "{text}");
    }
}
