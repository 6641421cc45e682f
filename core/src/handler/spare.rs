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
/// Why: glibc's malloc keeps small freed chunks for quick reuse, and merges them all
/// (`malloc_consolidate`) on a large request or on freeing a chunk that borders its top; the
/// small allocations after a merge (a batch's decoded strings) take its slow path. A list as
/// long as a batch is such a large request (100 decoded orders of 64 bytes are 6.4 KB), so the
/// lists are kept. And a batch's values are dropped only as the next batch's replace them, one
/// by one (or when the driver goes idle, [`Spare::drop_values`]): each value's strings are
/// freed right after the next value's are allocated, so both stay within malloc's per-thread
/// cache, as they do for a handler of one message. Dropped all at once as the call ended,
/// 200 freed strings overflowed that cache (7 chunks of a size), and the broker's own frees
/// as it settled the batch merged them. `python3 scripts/bench --only=inprocess` (a batch
/// handler of 100 JSON orders) shows the difference.
#[derive(Default)]
pub struct Spare {
    /// The decoded values' list (a `Vec<T>` of the handler's payload type), still holding the
    /// last batch's values, with what empties it.
    values: Option<KeptValues>,
    /// Where each value's message is in the batch, emptied.
    index: Vec<usize>,
    /// The answers' list, emptied; given back by the driver once it has read them.
    answers: Vec<Result<Answer, Rejection>>,
}

/// A kept `Vec<T>`, and the function that empties it (its `T` erased).
struct KeptValues {
    list: Box<dyn Any + Send>,
    clear: fn(&mut (dyn Any + Send)),
}

/// Empty `list`, a `Vec<T>`.
fn clear_list<T: 'static>(list: &mut (dyn Any + Send)) {
    if let Some(list) = list.downcast_mut::<Vec<T>>() {
        list.clear();
    }
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
    /// The list for values of `T`: the one kept, if it holds `T`s, still with the last
    /// batch's values (to be replaced one by one, [`crate::batch::Decoded::decode`]), or a
    /// new one with room for `len`.
    pub(crate) fn values<T: Send + 'static>(&mut self, len: usize) -> Vec<T> {
        match (self.values.as_mut()).and_then(|kept| kept.list.downcast_mut::<Vec<T>>()) {
            // Its box stays, holding an empty list until the values come back.
            Some(kept) => core::mem::take(kept),
            None => {
                self.values = None;
                Vec::with_capacity(len)
            }
        }
    }

    /// Keep `values`' list for the next batch, with its values: they are dropped when the
    /// next batch is decoded, or at [`Spare::drop_values`].
    pub(crate) fn keep_values<T: Send + 'static>(&mut self, values: Vec<T>) {
        match (self.values.as_mut()).and_then(|kept| kept.list.downcast_mut::<Vec<T>>()) {
            Some(kept) => *kept = values,
            None => {
                self.values = Some(KeptValues {
                    list: Box::new(values),
                    clear: clear_list::<T>,
                })
            }
        }
    }

    /// Drop the values the last batch decoded, keeping their list: the driver calls it when
    /// it is about to wait, so that a subscription that goes quiet holds no decoded values.
    pub fn drop_values(&mut self) {
        if let Some(kept) = &mut self.values {
            (kept.clear)(&mut *kept.list);
        }
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
    fn kept_values_live_until_the_next_decode_or_until_dropped() {
        let tracked = alloc::sync::Arc::new(());
        let mut spare = Spare::default();
        let mut values = spare.values(2);
        values.push(tracked.clone());
        spare.keep_values(values);
        assert_eq!(
            alloc::sync::Arc::strong_count(&tracked),
            2,
            "kept with its list"
        );
        spare.drop_values();
        assert_eq!(
            alloc::sync::Arc::strong_count(&tracked),
            1,
            "dropped when asked"
        );
        let mut values: Vec<alloc::sync::Arc<()>> = spare.values(2);
        values.push(tracked.clone());
        spare.keep_values(values);
        let values: Vec<alloc::sync::Arc<()>> = spare.values(2);
        assert_eq!(
            values.len(),
            1,
            "still there, for the next decode to replace"
        );
        drop(values);
        assert_eq!(alloc::sync::Arc::strong_count(&tracked), 1);
    }

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
        assert!(
            other.is_empty() && other.capacity() >= 10,
            "a new list for another type"
        );
        spare.keep_values(other);
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
