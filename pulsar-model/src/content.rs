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
}

impl Content {
    /// The content of a message with this body and these properties.
    pub fn new(payload: Vec<u8>, properties: Properties) -> Self {
        Content {
            payload,
            properties,
            chunk: None,
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
}
