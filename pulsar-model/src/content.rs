//! What a message carries that never changes once it is published: its body and properties.

use crate::{Chunk, Properties};

/// A message's body and properties, kept once per stored message.
///
/// The stored message and every delivery of it share one `Arc<Content>`: publishing costs one
/// allocation for both (the publisher's buffers are moved in, not copied), and a delivery
/// none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Content {
    payload: Vec<u8>,
    properties: Properties,
    chunk: Option<Chunk>,
    /// Why a client cannot read it, for a message published as unreadable.
    unreadable: Option<String>,
}

/// A stored message's body and properties, shared with each delivery of it: the in-process
/// Pulsar hands a delivery over without copying either.
impl ruststream::broker::SharedMessage for Content {
    fn payload(&self) -> &[u8] {
        Content::payload(self)
    }

    fn properties(&self) -> &[(String, String)] {
        Content::properties(self).as_slice()
    }
}

impl Content {
    /// The content of a message with this body and these properties.
    pub fn new(payload: Vec<u8>, properties: Properties) -> Self {
        Content {
            payload,
            properties,
            chunk: None,
            unreadable: None,
        }
    }

    /// The content of a message a client cannot read, for `reason` (see
    /// [`OutgoingMessage::unreadable`](crate::OutgoingMessage::unreadable)).
    pub fn unreadable(payload: Vec<u8>, properties: Properties, reason: String) -> Self {
        Content {
            unreadable: Some(reason),
            ..Content::new(payload, properties)
        }
    }

    /// The same content, as one chunk of a chunked message (`chunk`), if it is one.
    pub fn with_chunk(mut self, chunk: Option<Chunk>) -> Self {
        self.chunk = chunk;
        self
    }

    /// Its place in a chunked message, if it is a chunk of one ([`crate::chunk`]).
    pub fn chunk(&self) -> Option<&Chunk> {
        self.chunk.as_ref()
    }

    /// The body.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The properties, sorted by name.
    pub fn properties(&self) -> &Properties {
        &self.properties
    }

    /// Why a client cannot read this message, if it was published as one it cannot read.
    pub fn unreadable_reason(&self) -> Option<&str> {
        self.unreadable.as_deref()
    }
}
