//! The id of a delivery that may be a chunked message: its last chunk's id, plus the others'.

use std::sync::Arc;

/// A whole message's id: one id for a message that was not chunked, every chunk's for one that
/// was. It prints, compares its entry and converts to a `MessageId` as its last chunk (the
/// Java client's `ChunkMessageIdImpl` is the last chunk's position too); settling it settles
/// every chunk.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChunkedId<Id> {
    /// The message's id, or its last chunk's.
    pub(crate) last: Id,
    /// The other chunks' ids, in order; `None` for a message that was not chunked. Behind one
    /// thin pointer (a `Vec` in an `Arc`, not an `Arc<[Id]>`): 8 bytes less in every delivery
    /// and finished invocation, which keeps the latter small enough to move without `memcpy`.
    pub(crate) earlier: Option<Arc<Vec<Id>>>,
}

impl<Id> ChunkedId<Id> {
    /// The id of a message that was not chunked.
    pub(crate) fn single(id: Id) -> Self {
        ChunkedId {
            last: id,
            earlier: None,
        }
    }

    /// Every id this one stands for, the chunks' in order, as an iterator: for the rare call
    /// that takes many at once (`each` is the one for every settlement).
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &Id> {
        (self.earlier.iter().flat_map(|earlier| earlier.iter())).chain(std::iter::once(&self.last))
    }

    /// `f` on every id this one stands for, the chunks' in order. Not an iterator: a chained
    /// one makes every settlement and release measurably slower.
    #[inline]
    pub(crate) fn each(&self, mut f: impl FnMut(&Id)) {
        if let Some(earlier) = &self.earlier {
            earlier.iter().for_each(&mut f);
        }
        f(&self.last);
    }
}

impl<Id: std::fmt::Display> std::fmt::Display for ChunkedId<Id> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.last.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_id_stands_for_every_chunk_and_prints_as_the_last() {
        let id = ChunkedId {
            last: "1:7:-1",
            earlier: Some(vec!["1:5:-1", "1:6:-1"].into()),
        };
        let all = |id: &ChunkedId<&'static str>| {
            let mut all = Vec::new();
            id.each(|chunk| all.push(*chunk));
            all
        };
        assert_eq!(all(&id), ["1:5:-1", "1:6:-1", "1:7:-1"]);
        assert_eq!(id.to_string(), "1:7:-1");
        assert_eq!(all(&ChunkedId::single("1:2:-1")), ["1:2:-1"]);
    }
}
