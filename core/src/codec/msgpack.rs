//! MessagePack payloads.

use alloc::string::ToString;
use alloc::vec::Vec;

use crate::handler::{DecodeError, Payload, Rejection};
use crate::outgoing::EncodeError;

/// A payload in MessagePack: a handler parameter `event: &MsgPack<Event>` decodes the message
/// into `Event` with `rmp-serde` (structs as maps or as arrays, as other clients write them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MsgPack<T>(pub T);

impl<T> core::ops::Deref for MsgPack<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: serde::de::DeserializeOwned> Payload for MsgPack<T> {
    fn decode(bytes: &[u8], handler: &'static str) -> Result<Self, Rejection> {
        rmp_serde::from_slice(bytes)
            .map(MsgPack)
            .map_err(|e| Rejection::Decode {
                handler,
                payload_type: core::any::type_name::<T>(),
                source: DecodeError::Other {
                    format: "MessagePack",
                    source: alloc::boxed::Box::new(e),
                },
            })
    }

    fn content_type() -> &'static str {
        "application/msgpack"
    }
}

/// `value` in MessagePack, structs as maps (field names kept, so that readers in other
/// languages and later versions of the type match fields by name).
pub fn to_msgpack<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, EncodeError> {
    rmp_serde::to_vec_named(value).map_err(|e| EncodeError::new::<T>("MessagePack", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Job {
        id: u64,
    }

    #[test]
    fn a_value_round_trips_and_json_is_refused_with_the_type() {
        let bytes = to_msgpack(&Job { id: 7 }).expect("encodes");
        assert_eq!(bytes[0], 0x81, "a one-entry map");
        let MsgPack(job) = <MsgPack<Job> as Payload>::decode(&bytes, "h").expect("decodes");
        assert_eq!(job, Job { id: 7 });
        let error = <MsgPack<Job> as Payload>::decode(b"{\"id\":7}", "h").expect_err("JSON");
        assert!(error.to_string().contains("not MessagePack"), "{error}");
    }
}
