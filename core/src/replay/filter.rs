//! `--filter property=value`: which dead-lettered messages to move.

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::fmt;
use core::str::FromStr;

/// Move only messages whose property `name` is exactly `value`: how an operator moves back the
/// messages of one cause (`DEAD_LETTER_REASON=card-declined`) and leaves the others. Written
/// `name=value`; the value may contain `=` and may be empty (the property is present, empty).
///
/// ```
/// use ruststream::replay::PropertyFilter;
///
/// let filter: PropertyFilter = "DEAD_LETTER_REASON=timeout".parse()?;
/// assert!(filter.matches(&[("DEAD_LETTER_REASON".into(), "timeout".into())]));
/// assert!(!filter.matches(&[]));
/// # Ok::<(), ruststream::replay::FilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyFilter {
    name: String,
    value: String,
}

impl PropertyFilter {
    /// Messages whose property `name` is `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        PropertyFilter {
            name: name.into(),
            value: value.into(),
        }
    }

    /// The property's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value it must have.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether `properties` has the property with this value.
    pub fn matches(&self, properties: &[(String, String)]) -> bool {
        properties
            .iter()
            .any(|(name, value)| *name == self.name && *value == self.value)
    }
}

impl fmt::Display for PropertyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.value)
    }
}

/// A filter that is not `property=value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{given}` is not a filter: write PROPERTY=VALUE, e.g. `--filter DEAD_LETTER_REASON=timeout` \
     (the property name must not be empty)"
)]
pub struct FilterError {
    given: String,
}

impl FromStr for PropertyFilter {
    type Err = FilterError;

    fn from_str(text: &str) -> Result<Self, FilterError> {
        match text.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok(PropertyFilter::new(name.trim(), value))
            }
            _ => Err(FilterError {
                given: text.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn name_equals_value_splits_at_the_first_equals_sign() {
        let filter: PropertyFilter = "expr=a=b".parse().unwrap();
        assert_eq!((filter.name(), filter.value()), ("expr", "a=b"));
        let empty: PropertyFilter = "note=".parse().unwrap();
        assert_eq!((empty.name(), empty.value()), ("note", ""));
        assert_eq!(filter.to_string(), "expr=a=b");
    }

    #[test]
    fn a_filter_without_a_name_says_how_to_write_one() {
        for given in ["", "reason", "=timeout", " =x"] {
            let error = given.parse::<PropertyFilter>().unwrap_err().to_string();
            assert!(error.contains(&alloc::format!("`{given}`")), "{error}");
            assert!(error.contains("PROPERTY=VALUE"), "{error}");
        }
    }

    #[test]
    fn it_matches_the_exact_value_only() {
        let filter = PropertyFilter::new("region", "eu");
        let props = |v: &str| vec![("region".to_string(), v.to_string())];
        assert!(filter.matches(&props("eu")));
        assert!(!filter.matches(&props("eu-west")));
        assert!(!filter.matches(&props("EU")));
        assert!(!filter.matches(&[("other".into(), "eu".into())]));
    }
}
