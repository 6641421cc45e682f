//! Protobuf payloads, with Pulsar's `PROTOBUF_NATIVE` schema.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::handler::{DecodeError, Payload, Rejection};
use crate::schema::{Schema, SchemaKind};

/// A payload in Protobuf: a handler parameter `refund: &Protobuf<Refund>` decodes the message
/// with `prost`, and subscribes with `Refund`'s `PROTOBUF_NATIVE` schema
/// ([`ProtobufSchema`]), so that the broker refuses the handler at startup when the topic's
/// registered schema is not of that message type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Protobuf<T>(pub T);

impl<T> core::ops::Deref for Protobuf<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Where a Protobuf message type is described, for its `PROTOBUF_NATIVE` schema: the
/// `FileDescriptorSet` holding its `.proto` file and that file's imports (prost-build writes
/// one with `Config::file_descriptor_set_path`; `include_bytes!` it), its full name and its
/// file's name. prost's generated types do not carry their descriptors, so the type says
/// where they are.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say where its Protobuf descriptor is",
    label = "needs `ProtobufSchema`, for the schema the broker checks",
    note = "implement `ruststream::codec::ProtobufSchema` for `{Self}`: the encoded \
            `FileDescriptorSet` of its `.proto` file (prost-build's \
            `file_descriptor_set_path`, then `include_bytes!`), `MESSAGE` (e.g. \
            `\"shop.Refund\"`) and `FILE` (e.g. `\"shop/refund.proto\"`)"
)]
pub trait ProtobufSchema {
    /// The message's full name, package included (`shop.Refund`).
    const MESSAGE: &'static str;
    /// The name of the `.proto` file that defines it, as in the descriptor set
    /// (`shop/refund.proto`).
    const FILE: &'static str;
    /// The encoded `google.protobuf.FileDescriptorSet` with that file and its imports.
    fn file_descriptor_set() -> Vec<u8>;
}

impl<T: prost::Message + Default + ProtobufSchema> Payload for Protobuf<T> {
    fn decode(bytes: &[u8], handler: &'static str) -> Result<Self, Rejection> {
        T::decode(bytes)
            .map(Protobuf)
            .map_err(|e| Rejection::Decode {
                handler,
                payload_type: core::any::type_name::<T>(),
                source: DecodeError::Other {
                    format: "Protobuf",
                    source: alloc::boxed::Box::new(e),
                },
            })
    }

    fn schema() -> Option<Schema> {
        Some(protobuf_schema::<T>())
    }

    fn content_type() -> &'static str {
        "application/x-protobuf"
    }
}

/// `value` in Protobuf's binary encoding.
pub fn to_protobuf<T: prost::Message>(value: &T) -> Vec<u8> {
    value.encode_to_vec()
}

/// The `PROTOBUF_NATIVE` schema of `T`: a JSON object with the descriptor set in base64 and
/// the names of the message and its file, as the Java client's `ProtobufNativeSchema`
/// registers it.
pub fn protobuf_schema<T: ProtobufSchema + ?Sized>() -> Schema {
    let definition = serde_json::json!({
        "fileDescriptorSet": base64(&T::file_descriptor_set()),
        "rootMessageTypeName": T::MESSAGE,
        "rootFileDescriptorName": T::FILE,
    });
    Schema::new(SchemaKind::ProtobufNative, definition.to_string()).of_type::<T>()
}

/// Standard base64 with padding (RFC 4648 §4), as the Java client encodes the descriptor set.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, PartialEq, prost::Message)]
    struct Refund {
        #[prost(int64, tag = "1")]
        id: i64,
        #[prost(string, tag = "2")]
        reason: String,
    }

    impl ProtobufSchema for Refund {
        const MESSAGE: &'static str = "shop.Refund";
        const FILE: &'static str = "refund.proto";
        fn file_descriptor_set() -> Vec<u8> {
            alloc::vec![1, 2, 3, 4]
        }
    }

    #[test]
    fn base64_pads_as_rfc_4648_says() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn a_value_round_trips_and_garbage_is_refused_with_the_type() {
        let refund = Refund {
            id: 7,
            reason: "late".into(),
        };
        let bytes = to_protobuf(&refund);
        assert_eq!(&bytes[..2], &[0x08, 7], "field 1, varint 7");
        let Protobuf(back) = <Protobuf<Refund> as Payload>::decode(&bytes, "h").expect("decodes");
        assert_eq!(back, refund);
        let error = <Protobuf<Refund> as Payload>::decode(&[0x0a, 0x05, 1], "book").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("book") && text.contains("Refund"), "{text}");
        assert!(text.contains("not Protobuf"), "{text}");
    }

    #[test]
    fn the_schema_is_the_java_clients_protobuf_native_definition() {
        let schema = <Protobuf<Refund> as Payload>::schema().expect("a schema");
        assert_eq!(schema.kind(), SchemaKind::ProtobufNative);
        let definition: serde_json::Value =
            serde_json::from_slice(schema.definition()).expect("JSON");
        assert_eq!(definition["fileDescriptorSet"], "AQIDBA==");
        assert_eq!(definition["rootMessageTypeName"], "shop.Refund");
        assert_eq!(definition["rootFileDescriptorName"], "refund.proto");
    }
}
