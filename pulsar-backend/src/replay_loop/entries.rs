//! Batched entries the replay moved part of, when acknowledgements settle whole entries.

use std::collections::BTreeMap;

use ruststream::MessageId;

use super::EntryKey;

/// An entry some of whose messages were read.
#[derive(Debug)]
struct Open<Id> {
    size: u32,
    /// The id to acknowledge the entry with (any of its messages').
    ack_with: Id,
    /// The messages moved, by id.
    moved: Vec<MessageId>,
    /// Whether one of its messages stays (skipped, or its copy failed): then the entry must
    /// not be acknowledged, which would lose that message.
    keeps_one: bool,
}

/// The batched entries read in part.
#[derive(Debug)]
pub(super) struct Entries<Id> {
    open: BTreeMap<EntryKey, Open<Id>>,
}

impl<Id: Clone> Entries<Id> {
    pub(super) fn new() -> Self {
        Entries {
            open: BTreeMap::new(),
        }
    }

    fn open(&mut self, entry: &EntryKey, size: u32, id: &Id) -> &mut Open<Id> {
        self.open.entry(entry.clone()).or_insert_with(|| Open {
            size,
            ack_with: id.clone(),
            moved: Vec::new(),
            keeps_one: false,
        })
    }

    /// Whether the message `message` of `entry` was moved already in this run (the broker
    /// sent the entry again, after a reconnection).
    pub(super) fn moved_already(&self, entry: &EntryKey, message: &MessageId) -> bool {
        self.open
            .get(entry)
            .is_some_and(|open| open.moved.contains(message))
    }

    /// A message of `entry` (of `size` messages) stays on the dead-letter topic.
    pub(super) fn keep(&mut self, entry: &EntryKey, size: u32, id: &Id) {
        self.open(entry, size, id).keeps_one = true;
    }

    /// A message of `entry` was moved: the id to acknowledge the entry with, once that was
    /// its last message to move.
    pub(super) fn moved(
        &mut self,
        entry: &EntryKey,
        size: u32,
        id: &Id,
        message: MessageId,
    ) -> Option<Id> {
        let open = self.open(entry, size, id);
        open.moved.push(message);
        if open.keeps_one || open.moved.len() < open.size as usize {
            return None;
        }
        self.open.remove(entry).map(|open| open.ack_with)
    }

    /// Every message moved whose entry is left unacknowledged: a later replay moves them
    /// again.
    pub(super) fn unacknowledged(self) -> Vec<MessageId> {
        self.open
            .into_values()
            .flat_map(|open| open.moved)
            .collect()
    }
}

/// The ack set that acknowledges message `index` of a batch of `size`: a bit set for every
/// other message (Pulsar's ack sets name what stays unacknowledged; the broker ands them with
/// what it holds), 64 a word.
pub(crate) fn ack_set(index: u32, size: u32) -> Vec<i64> {
    let mut words = vec![0u64; (size as usize).div_ceil(64)];
    for i in (0..size).filter(|&i| i != index) {
        words[(i / 64) as usize] |= 1 << (i % 64);
    }
    words.into_iter().map(|w| w as i64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> EntryKey {
        EntryKey {
            topic: "persistent://public/default/dlq".into(),
            ledger: 7,
            entry: n,
        }
    }

    fn id(entry: u64, index: i64) -> MessageId {
        MessageId::new(&[7, entry as i64, -1, index])
    }

    #[test]
    fn an_entry_is_acknowledged_once_all_of_it_moved() {
        let mut entries = Entries::new();
        assert_eq!(entries.moved(&entry(1), 3, &"a", id(1, 0)), None);
        assert_eq!(entries.moved(&entry(2), 1, &"z", id(2, 0)), Some("z"));
        assert_eq!(entries.moved(&entry(1), 3, &"b", id(1, 1)), None);
        assert!(entries.moved_already(&entry(1), &id(1, 1)));
        assert_eq!(entries.moved(&entry(1), 3, &"c", id(1, 2)), Some("a"));
        assert!(entries.unacknowledged().is_empty());
    }

    #[test]
    fn an_entry_with_a_message_left_is_never_acknowledged() {
        let mut entries = Entries::new();
        assert_eq!(entries.moved(&entry(1), 3, &"a", id(1, 0)), None);
        entries.keep(&entry(1), 3, &"b");
        assert_eq!(entries.moved(&entry(1), 3, &"c", id(1, 2)), None);
        assert_eq!(entries.unacknowledged(), [id(1, 0), id(1, 2)]);
    }

    #[test]
    fn an_ack_set_clears_only_the_acknowledged_index() {
        assert_eq!(ack_set(0, 3), [0b110]);
        assert_eq!(ack_set(2, 3), [0b011]);
        assert_eq!(ack_set(0, 1), [0]);
        let wide = ack_set(64, 66);
        assert_eq!(wide, [-1, 0b10]);
    }
}
