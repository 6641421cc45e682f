//! Payload encodings besides JSON.
//!
//! JSON is the default: any `Deserialize` type is a payload, and `#[derive(Outgoing)]` types
//! are published as JSON, so that clients in any language read and write the same messages.
//! Two other ways, each chosen per type:
//!
//! - raw bytes: a handler whose payload parameter is `&[u8]` receives the payload undecoded;
//! - MessagePack (feature `msgpack`, through `rmp-serde`): a payload parameter `&MsgPack<T>`
//!   decodes it, and `#[outgoing(name = "..", codec = "msgpack")]` publishes a type in it;
//! - Avro (feature `avro`, through `apache-avro`): a payload parameter `&Avro<T>` decodes one
//!   Avro datum and subscribes with `T`'s schema (checked by the broker at startup), and
//!   `#[outgoing(name = "..", codec = "avro")]` publishes a type in it, registering its schema;
//!   `#[outgoing(name = "..", schema = "json")]` registers a JSON type's schema, and a payload
//!   parameter `&Json<T>` decodes JSON and subscribes with that schema;
//! - Protobuf (feature `protobuf`, through `prost`): a payload parameter `&Protobuf<T>` decodes
//!   it and subscribes with `T`'s `PROTOBUF_NATIVE` schema ([`ProtobufSchema`]).
//!
//! docs/schemas.md says which schema each registers and what other clients must set.

#[cfg(feature = "msgpack")]
mod msgpack;

#[cfg(feature = "msgpack")]
pub use msgpack::{to_msgpack, MsgPack};

#[cfg(feature = "avro")]
mod avro;

#[cfg(feature = "avro")]
pub use avro::{avro_schema, json_schema, to_avro, Avro, Json};

#[cfg(feature = "protobuf")]
mod protobuf;

#[cfg(feature = "protobuf")]
pub use protobuf::{protobuf_schema, to_protobuf, Protobuf, ProtobufSchema};

/// What `#[outgoing(codec = "avro")]` and `#[outgoing(schema = ..)]` write into `encode` and
/// `schema`. Not part of the public API.
#[cfg(feature = "avro")]
#[doc(hidden)]
#[macro_export]
macro_rules! __avro {
    (encode $value:expr) => {
        $crate::codec::to_avro($value)
    };
    (schema avro $ty:ty) => {
        ::core::option::Option::Some($crate::codec::avro_schema::<$ty>())
    };
    (schema json $ty:ty) => {
        ::core::option::Option::Some($crate::codec::json_schema::<$ty>())
    };
}

/// What `#[outgoing(codec = "avro")]` and `#[outgoing(schema = ..)]` write without the
/// feature.
#[cfg(not(feature = "avro"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __avro {
    ($($any:tt)*) => {
        ::core::compile_error!(
            "`#[outgoing(codec = \"avro\")]` and `#[outgoing(schema = ..)]` need the `avro` \
             feature of `ruststream` (the type derives `apache_avro::AvroSchema`, which \
             describes it): `ruststream = { version = \"0.1\", features = [\"avro\"] }`"
        )
    };
}

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
