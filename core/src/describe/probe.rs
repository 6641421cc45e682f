//! How the macros learn what a concrete type says about itself: a JSON Schema where the type
//! derives `schemars::JsonSchema` (and the `schemars` feature is on), nothing otherwise.
//!
//! Rust has no specialisation, so this uses method resolution instead: the macros call
//! `(&&&Probe::<T>::new()).json_schema()` with both traits in scope; the impl for `&&Probe<T>`
//! (which needs `T: JsonSchema`) is found first, the one for `&Probe<T>` (any `T`) otherwise.
//! This works because the macros name the concrete type. Not part of the public API.

use alloc::string::String;
use core::marker::PhantomData;

use super::{MessageInfo, PayloadSchema};
use crate::schema::{Schema, SchemaKind};

/// A value that stands for type `T` in method resolution.
pub struct Probe<T: ?Sized>(PhantomData<fn() -> *const T>);

impl<T: ?Sized> Probe<T> {
    /// The probe of `T`.
    pub const fn new() -> Self {
        Probe(PhantomData)
    }
}

impl<T: ?Sized> Default for Probe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The fallback: `T` does not describe its JSON.
pub trait NoJsonSchema {
    /// None.
    fn json_schema(&self) -> Option<PayloadSchema>;
}

impl<T: ?Sized> NoJsonSchema for &Probe<T> {
    fn json_schema(&self) -> Option<PayloadSchema> {
        None
    }
}

/// `T` derives `schemars::JsonSchema`.
#[cfg(feature = "schemars")]
pub trait HasJsonSchema {
    /// `T`'s JSON Schema.
    fn json_schema(&self) -> Option<PayloadSchema>;
}

#[cfg(feature = "schemars")]
impl<T: schemars::JsonSchema + ?Sized> HasJsonSchema for &&Probe<T> {
    fn json_schema(&self) -> Option<PayloadSchema> {
        Some(json_schema_of::<T>())
    }
}

/// `T`'s JSON Schema, draft 7, its named subschemas under `/components/schemas` (where an
/// AsyncAPI document keeps them).
#[cfg(feature = "schemars")]
fn json_schema_of<T: schemars::JsonSchema + ?Sized>() -> PayloadSchema {
    let mut settings = schemars::generate::SchemaSettings::draft07();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    PayloadSchema::JsonSchema(schema.to_value())
}

/// A part of a message a handler parameter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The key (`MessageKey`).
    Key,
    /// The properties (`Properties`).
    Properties,
}

/// The fallback: a parameter that reads no part of the message the description names.
pub trait NoPart {
    /// None.
    fn part(&self) -> Option<Part>;
}

impl<T: ?Sized> NoPart for &Probe<T> {
    fn part(&self) -> Option<Part> {
        None
    }
}

/// A parameter that reads the key or the properties (implemented beside them, in
/// [`params`](crate::params)).
pub trait ReadsPart {
    /// Which.
    fn part(&self) -> Option<Part>;
}

/// Note on `info` what a parameter reads.
pub fn note(info: &mut MessageInfo, part: Option<Part>) {
    match part {
        Some(Part::Key) => info.reads_key = true,
        Some(Part::Properties) => info.reads_properties = true,
        None => {}
    }
}

/// The traits the macros bring into scope before they probe a type.
pub mod traits {
    #[cfg(feature = "schemars")]
    pub use super::HasJsonSchema as _;
    pub use super::NoJsonSchema as _;
    pub use super::NoPart as _;
    pub use super::ReadsPart as _;
}

/// The message of Rust type `type_name`: in `content_type`, described by the schema it
/// registers with the broker when it has one, else by `json` (from the probe).
pub fn message(
    type_name: &str,
    content_type: &str,
    registered: Option<Schema>,
    json: Option<PayloadSchema>,
) -> MessageInfo {
    let payload = match registered {
        Some(schema) => match schema.kind() {
            SchemaKind::Json | SchemaKind::Avro => {
                PayloadSchema::Avro(String::from_utf8_lossy(schema.definition()).into_owned())
            }
            SchemaKind::ProtobufNative => {
                let root = serde_json::from_slice::<serde_json::Value>(schema.definition())
                    .ok()
                    .and_then(|d| d["rootMessageTypeName"].as_str().map(String::from))
                    .unwrap_or_else(|| String::from(type_name));
                PayloadSchema::Protobuf(root)
            }
        },
        None => json.unwrap_or(PayloadSchema::Undescribed),
    };
    MessageInfo::new(type_name, content_type).with_payload(payload)
}

#[cfg(test)]
// The extra borrow is how the probe works: clippy sees only the fallback's receiver.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::traits::*;
    use super::*;

    struct Plain;

    #[test]
    fn a_type_without_a_json_schema_is_undescribed() {
        assert_eq!((&&&Probe::<Plain>::new()).json_schema(), None);
        let info = message("a::Plain", "application/json", None, None);
        assert_eq!(info.name, "Plain");
        assert_eq!(info.payload, PayloadSchema::Undescribed);
    }

    #[cfg(feature = "schemars")]
    #[test]
    fn a_type_deriving_json_schema_is_described_with_its_subschemas_under_components() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Card {
            last4: String,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Refund {
            id: u64,
            card: Card,
        }
        let Some(PayloadSchema::JsonSchema(schema)) = (&&&Probe::<Refund>::new()).json_schema()
        else {
            panic!("a JSON Schema");
        };
        assert_eq!(
            schema["properties"]["card"]["$ref"],
            "#/components/schemas/Card"
        );
        assert_eq!(
            schema["components"]["schemas"]["Card"]["required"][0],
            "last4"
        );
        assert!(schema.get("$schema").is_none());
    }

    #[test]
    fn a_registered_schema_describes_the_payload() {
        let avro = Schema::new(
            SchemaKind::Avro,
            &br#"{"type":"record","name":"R","fields":[]}"#[..],
        );
        let info = message("a::R", "avro/binary", Some(avro), None);
        assert!(matches!(info.payload, PayloadSchema::Avro(ref s) if s.contains("record")));
    }
}
