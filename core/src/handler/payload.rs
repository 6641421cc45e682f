//! Decoding a payload into the handler's first parameter.

use super::{DecodeError, Rejection};

/// A type a message payload decodes into: any `serde::Deserialize` type, from JSON.
///
/// JSON is the default so that other clients, in any language, read and write the same
/// messages.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be decoded from a message payload",
    label = "the first parameter of a handler is `&T` where `T` is the decoded payload",
    note = "derive `serde::Deserialize` (`#[derive(Deserialize)]`) on your payload type: `T` in \
            `&T` (decoded from JSON) or in `&MsgPack<T>` (decoded from MessagePack); `&[u8]` \
            takes the bytes undecoded",
    note = "in `&Avro<T>`, `T` also derives `apache_avro::AvroSchema` (its schema, which the \
            broker checks); in `&Protobuf<T>`, `T` derives `prost::Message` and implements \
            `ruststream::codec::ProtobufSchema` instead"
)]
pub trait Payload: Sized {
    /// Decode `bytes` for handler `handler`.
    fn decode(bytes: &[u8], handler: &'static str) -> Result<Self, Rejection>;

    /// The schema the handler subscribes with, so that the broker refuses it at startup when
    /// the topic's registered schema cannot be read as this type. `None` (the default, and
    /// JSON's, whose serde types do not describe themselves) subscribes without one: any
    /// message is delivered and decoded as it comes.
    fn schema() -> Option<crate::schema::Schema> {
        None
    }

    /// The payload's media type, for the service's description (`<service> asyncapi`):
    /// JSON's by default.
    fn content_type() -> &'static str {
        "application/json"
    }
}

impl<T: serde::de::DeserializeOwned> Payload for T {
    fn decode(bytes: &[u8], handler: &'static str) -> Result<Self, Rejection> {
        let fail = |source: DecodeError| Rejection::Decode {
            handler,
            payload_type: core::any::type_name::<T>(),
            source,
        };
        // JSON text is UTF-8 (RFC 8259 §8.1). Checked once for the whole payload, so serde_json
        // need not check each string again, as it does when it decodes from bytes: one pass
        // instead of one per string.
        let text = core::str::from_utf8(bytes).map_err(|source| {
            fail(DecodeError::NotUtf8 {
                at: source.valid_up_to(),
                len: bytes.len(),
                source,
            })
        })?;
        serde_json::from_str(text).map_err(|e| fail(DecodeError::Json(e)))
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::{String, ToString};
    use alloc::vec;

    use super::*;

    /// A type with strings, as most payloads have (serde's derive is not a dependency here).
    type Order = (u64, String);

    #[test]
    fn json_decodes_into_the_handlers_type() {
        let order = Order::decode(br#"[7,"c\u00e9-1"]"#, "accept").unwrap();
        assert_eq!(order, (7, "c\u{e9}-1".into()));
        let strings = <vec::Vec<String>>::decode("[\"é\",\"ü\"]".as_bytes(), "accept").unwrap();
        assert_eq!(strings, vec!["é", "ü"]);
    }

    #[test]
    fn a_payload_that_is_not_utf8_names_the_byte_the_handler_and_the_type() {
        let error = Order::decode(b"[7,\"\xff\"]", "accept").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("accept"), "{text}");
        assert!(text.contains("u64"), "{text}");
        assert!(text.contains("not UTF-8"), "{text}");
        assert!(text.contains("byte 4 of 7"), "{text}");
    }

    #[test]
    fn a_payload_that_is_not_json_gives_serde_jsons_reason() {
        let error = Order::decode(b"[7,", "accept").unwrap_err();
        assert!(error.to_string().contains("EOF"), "{error}");
    }
}
