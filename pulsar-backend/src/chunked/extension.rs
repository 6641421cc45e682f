//! What a Pulsar delivery carries of its chunking, in the driver's `Received::unusual`: its
//! place in a chunked message, and how the whole message is compressed.

use std::any::Any;

use ruststream_driver::port::{Received, Unusual};
use ruststream_pulsar_model::Chunk;

/// How a delivery is chunked (PIP-37).
#[derive(Debug, Default)]
struct Chunking {
    chunk: Option<Chunk>,
    compressed: Option<Compressed>,
}

/// How a chunked message is compressed, as each of its chunks says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compressed {
    /// Pulsar's `CompressionType`, as the metadata carries it.
    pub(crate) codec: i32,
    /// The whole message's size once decompressed, if the producer said it.
    pub(crate) uncompressed_size: Option<u32>,
}

/// What a Pulsar consumer port writes in `Received::unusual`: `None` for a delivery that is
/// no chunk and that the client could read.
#[inline(always)]
pub(crate) fn unusual(
    chunk: Option<Chunk>,
    unreadable: Option<String>,
    compressed: Option<Compressed>,
) -> Option<Box<Unusual>> {
    let chunking = (chunk.is_some() || compressed.is_some())
        .then(|| Box::new(Chunking { chunk, compressed }) as Box<dyn Any + Send + Sync>);
    (chunking.is_some() || unreadable.is_some()).then(|| {
        Box::new(Unusual {
            unreadable,
            extension: chunking,
        })
    })
}

/// A delivery's chunking, as a Pulsar port reads it.
pub(crate) trait Chunks {
    /// Its place in a chunked message, if it is one chunk of one.
    fn chunk(&self) -> Option<&Chunk>;
    /// Take its chunk metadata away (a delivery that is not, or no longer, a chunk).
    fn take_chunk(&mut self) -> Option<Chunk>;
    /// Take how its whole message is compressed away (once undone).
    fn take_compressed(&mut self) -> Option<Compressed>;
    /// Say how its whole message is compressed.
    #[cfg(test)]
    fn set_compressed(&mut self, compressed: Compressed);
}

impl<Id> Chunks for Received<Id> {
    #[inline]
    fn chunk(&self) -> Option<&Chunk> {
        chunking(self)?.chunk.as_ref()
    }

    #[inline]
    fn take_chunk(&mut self) -> Option<Chunk> {
        chunking_mut(self)?.chunk.take()
    }

    fn take_compressed(&mut self) -> Option<Compressed> {
        chunking_mut(self)?.compressed.take()
    }

    #[cfg(test)]
    fn set_compressed(&mut self, compressed: Compressed) {
        if let Some(chunking) = chunking_mut(self) {
            chunking.compressed = Some(compressed);
        }
    }
}

fn chunking<Id>(received: &Received<Id>) -> Option<&Chunking> {
    received
        .unusual
        .as_ref()?
        .extension
        .as_ref()?
        .downcast_ref()
}

fn chunking_mut<Id>(received: &mut Received<Id>) -> Option<&mut Chunking> {
    received
        .unusual
        .as_mut()?
        .extension
        .as_mut()?
        .downcast_mut()
}
