//! Payload encodings besides JSON.
//!
//! JSON is the default: any `Deserialize` type is a payload, and `#[derive(Outgoing)]` types
//! are published as JSON, so that clients in any language read and write the same messages.
//! Two other ways, each chosen per type:
//!
//! - raw bytes: a handler whose payload parameter is `&[u8]` receives the payload undecoded;
//! - MessagePack (feature `msgpack`, through `rmp-serde`): a payload parameter `&MsgPack<T>`
//!   decodes it, and `#[outgoing(name = "..", codec = "msgpack")]` publishes a type in it.

#[cfg(feature = "msgpack")]
mod msgpack;

#[cfg(feature = "msgpack")]
pub use msgpack::{to_msgpack, MsgPack};

/// What `#[outgoing(codec = "msgpack")]` writes into `encode`. Not part of the public API.
#[cfg(feature = "msgpack")]
#[doc(hidden)]
#[macro_export]
macro_rules! __encode_msgpack {
    ($value:expr) => {
        $crate::codec::to_msgpack($value)
    };
}

/// What `#[outgoing(codec = "msgpack")]` writes into `encode` without the feature.
#[cfg(not(feature = "msgpack"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __encode_msgpack {
    ($value:expr) => {
        ::core::compile_error!(
            "`#[outgoing(codec = \"msgpack\")]` needs the `msgpack` feature of `ruststream`: \
             `ruststream = { version = \"0.1\", features = [\"msgpack\"] }`"
        )
    };
}
