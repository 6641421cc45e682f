//! A message a channel carries: its type, encoding and schema.

use alloc::string::String;

use super::PayloadSchema;

/// A kind of message: a handler's payload type or an `#[outgoing]` type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MessageInfo {
    /// A name unique in the service: the type's name without its path (`Refund`).
    pub name: String,
    /// The Rust type, with its path.
    pub type_name: String,
    /// The payload's media type (`application/json`, `avro/binary`, ...).
    pub content_type: String,
    /// What the payload holds, where the type says.
    pub payload: PayloadSchema,
    /// Whether the handler reads the message's key.
    pub reads_key: bool,
    /// Whether the handler reads the message's properties.
    pub reads_properties: bool,
}

impl MessageInfo {
    /// A message of Rust type `type_name` in `content_type`, its payload undescribed.
    pub fn new(type_name: &str, content_type: impl Into<String>) -> Self {
        MessageInfo {
            name: short_name(type_name),
            type_name: type_name.into(),
            content_type: content_type.into(),
            payload: PayloadSchema::Undescribed,
            reads_key: false,
            reads_properties: false,
        }
    }

    /// The same message, with `payload` described.
    pub fn with_payload(mut self, payload: PayloadSchema) -> Self {
        self.payload = payload;
        self
    }
}

/// `a::b::Refund` → `Refund`, `Vec<a::Refund>` → `Vec_Refund_`: a name of letters, digits,
/// `_`, `-` and `.` (what AsyncAPI's component names allow).
fn short_name(type_name: &str) -> String {
    let mut out = String::new();
    let mut segment = String::new();
    for c in type_name.chars() {
        match c {
            ':' => segment.clear(),
            c if c.is_ascii_alphanumeric() || c == '_' => segment.push(c),
            _ => {
                out.push_str(&segment);
                segment.clear();
                out.push('_');
            }
        }
    }
    out.push_str(&segment);
    let trimmed = out.trim_matches('_');
    String::from(if trimmed.is_empty() {
        "payload"
    } else {
        trimmed
    })
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn names_are_the_type_s_without_its_path() {
        assert_eq!(short_name("refunds::Refund"), "Refund");
        assert_eq!(short_name("alloc::vec::Vec<refunds::Refund>"), "Vec_Refund");
        assert_eq!(short_name("[u8]"), "u8");
    }
}
