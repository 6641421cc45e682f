//! `<service> asyncapi`: the service's AsyncAPI document, built from its registrations without
//! connecting; `--check FILE` compares it with a committed one and names each change that
//! would break the service's producers or consumers.
//!
//! [`document`] builds the document from the brokers' descriptions
//! ([`Broker::describe`](ruststream::app::Broker::describe)); [`breaking_changes`] compares
//! two; the health endpoint (`--http ADDR --http-asyncapi`) serves it with a page of it
//! ([`page`]).

mod args;
mod check;
pub(crate) mod command;
mod document;
mod json;
mod page;

pub use args::AsyncapiArgs;
pub use check::{breaking_changes, BreakingChange};
pub use document::{document, ASYNCAPI_VERSION, PULSAR_BINDING_VERSION};
pub use page::page;

/// The document as YAML.
pub fn to_yaml(document: &serde_json::Value) -> String {
    // A `Value` always has a YAML form: the serializer fails only on maps with non-string
    // keys, which JSON has none of.
    serde_yaml_ng::to_string(document).unwrap_or_default()
}

/// Read a document written earlier, as JSON or YAML.
pub fn read(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(json) => serde_yaml_ng::from_str(text)
            .map_err(|yaml| format!("neither JSON ({json}) nor YAML ({yaml})")),
    }
}
