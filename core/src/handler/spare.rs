//! The lists one batch's call leaves for the next to reuse.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::any::Any;

use super::Rejection;
use crate::outcome::Answer;

/// Lists as long as a batch that a subscription's batch calls pass from one to the next: the
/// decoded values, where each came from, and the answers. The driver keeps one per running
/// batch and lends it to [`crate::handler::Handler::call_batch`].
///
/// Why: a list of a whole batch is a large allocation (100 decoded orders of 64 bytes are
/// 6.4 KB), and glibc's malloc answers a large request, or the free of a chunk that borders
/// its top, by first merging every small freed chunk it keeps for reuse
/// (`malloc_consolidate`); the next batch's small allocations (its decoded strings) then all
/// take malloc's slow path. Measured in process (`python3 scripts/bench --only=inprocess`):
/// 130 instructions more for each of a message's two strings, about 10 % of a message's
/// cost, before the lists were kept.
#[derive(Default)]
pub struct Spare {
    /// The decoded values' list, emptied (a `Vec<T>` of the handler's payload type).
    values: Option<Box<dyn Any + Send>>,
    /// Where each value's message is in the batch, emptied.
    index: Vec<usize>,
    /// The answers' list, emptied; given back by the driver once it has read them.
    answers: Vec<Result<Answer, Rejection>>,
}

impl core::fmt::Debug for Spare {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Spare")
            .field("values", &self.values.is_some())
            .field("index", &self.index.capacity())
            .field("answers", &self.answers.capacity())
            .finish()
    }
}

impl Spare {
    /// An empty list for values of `T`: the one kept, if it holds `T`s, or a new one with
    /// room for `len`.
    pub(crate) fn values<T: Send + 'static>(&mut self, len: usize) -> Vec<T> {
        let mut values = match self.values.take().map(|kept| kept.downcast::<Vec<T>>()) {
            Some(Ok(kept)) => *kept,
            _ => Vec::new(),
        };
        values.reserve(len);
        values
    }

    /// Keep `values`' list (emptied here) for the next batch.
    pub(crate) fn keep_values<T: Send + 'static>(&mut self, mut values: Vec<T>) {
        values.clear();
        self.values = Some(Box::new(values));
    }

    /// The index list, emptied, with room for `len`.
    pub(crate) fn index(&mut self, len: usize) -> Vec<usize> {
        let mut index = core::mem::take(&mut self.index);
        index.clear();
        index.reserve(len);
        index
    }

    /// Keep the index list for the next batch.
    pub(crate) fn keep_index(&mut self, index: Vec<usize>) {
        self.index = index;
    }

    /// The answers' list, emptied, with room for `len`.
    pub fn answers(&mut self, len: usize) -> Vec<Result<Answer, Rejection>> {
        let mut answers = core::mem::take(&mut self.answers);
        answers.clear();
        answers.reserve(len);
        answers
    }

    /// Keep an answers' list (emptied here) for the next batch: the driver gives back the one
    /// a call returned once it has read it.
    pub fn keep_answers(&mut self, mut answers: Vec<Result<Answer, Rejection>>) {
        answers.clear();
        self.answers = answers;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_list_comes_back_with_its_room_and_another_type_gets_a_new_one() {
        let mut spare = Spare::default();
        let values: Vec<u64> = spare.values(100);
        let room = values.capacity();
        let at = values.as_ptr();
        spare.keep_values(values);
        let again: Vec<u64> = spare.values(100);
        assert_eq!(
            (again.as_ptr(), again.capacity()),
            (at, room),
            "the same list"
        );
        spare.keep_values(again);
        let other: Vec<u8> = spare.values(10);
        assert!(other.is_empty() && other.capacity() >= 10);
        let mut answers = spare.answers(3);
        answers.push(Err(Rejection::Unreadable {
            handler: "h",
            reason: "x".into(),
        }));
        spare.keep_answers(answers);
        let answers = spare.answers(3);
        assert!(answers.is_empty() && answers.capacity() >= 3);
    }
}
