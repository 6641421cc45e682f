//! Reading a document's JSON: the two look-ups the check and the page share.

use serde_json::Value;

/// The members of an object, in order; none for anything else.
pub(super) fn entries(value: &Value) -> Vec<(&String, &Value)> {
    value
        .as_object()
        .map(|o| o.iter().collect())
        .unwrap_or_default()
}

/// A value as text: a string as it is, nothing for null, JSON for the rest.
pub(super) fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
