//! Decoding a payload into the handler's first parameter.

use alloc::string::ToString;

use super::HandlerError;

/// A type a message payload decodes into: any `serde::Deserialize` type, from JSON.
///
/// JSON is the default so that other clients, in any language, read and write the same
/// messages.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be decoded from a message payload",
    label = "the first parameter of a handler is `&T` where `T` is the decoded payload",
    note = "derive `serde::Deserialize` (`#[derive(Deserialize)]`) on your payload type: `T` in \
            `&T` (decoded from JSON) or in `&MsgPack<T>` (decoded from MessagePack); `&[u8]` \
            takes the bytes undecoded"
)]
pub trait Payload: Sized {
    /// Decode `bytes` for handler `handler`.
    fn decode(bytes: &[u8], handler: &'static str) -> Result<Self, HandlerError>;
}

impl<T: serde::de::DeserializeOwned> Payload for T {
    fn decode(bytes: &[u8], handler: &'static str) -> Result<Self, HandlerError> {
        serde_json::from_slice(bytes).map_err(|e| HandlerError::Decode {
            handler,
            payload_type: core::any::type_name::<T>(),
            reason: e.to_string(),
        })
    }
}
