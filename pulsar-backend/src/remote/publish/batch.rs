//! One entry being filled: the messages a producer sends to the broker as one batch.
//!
//! A batched entry's payload is its messages one after another, each framed as the Pulsar
//! protocol frames them (and as the Java, C++ and Go clients write them): the size of its
//! `SingleMessageMetadata` in 4 bytes big-endian, that metadata (properties, key, payload
//! size, event time), then its payload. The entry's own metadata says how many messages it
//! holds (`num_messages_in_batch`); pulsar-rs sends such a payload as it is
//! (`pulsar-prebatched.patch`), compressed as a whole by the producer's codec.
//!
//! A message alone in its entry when the entry is sent goes as a plain message, as the Java
//! client sends a batch of one: with its properties, key and event time in the entry's own
//! metadata, and an id without a batch index.

use std::collections::HashMap;

use prost::Message as _;
use pulsar::message::proto::{KeyValue, SingleMessageMetadata};
use ruststream::publish::{Batching, PublishError, Receipt};
use ruststream::MessageId;

/// One message to publish, as a producer takes it.
#[derive(Debug)]
pub(super) struct Item {
    pub(super) payload: Vec<u8>,
    pub(super) properties: Vec<(String, String)>,
    pub(super) key: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub(super) event_time: Option<u64>,
    pub(super) receipt: Receipt,
}

impl Item {
    /// The message as an entry of its own.
    pub(super) fn into_plain(self) -> (pulsar::producer::Message, Receipt) {
        let message = pulsar::producer::Message {
            payload: self.payload,
            properties: self.properties.into_iter().collect::<HashMap<_, _>>(),
            partition_key: self.key,
            event_time: self.event_time,
            ..pulsar::producer::Message::default()
        };
        (message, self.receipt)
    }
}

/// The messages of one entry, in order.
#[derive(Debug)]
pub(super) struct Batch {
    /// The first message as it is, until a second one joins it.
    first: Option<Item>,
    /// The framed messages (the first one framed once a second came).
    payload: Vec<u8>,
    receipts: Vec<Receipt>,
    count: u32,
    /// The messages' payload bytes.
    bytes: usize,
    /// Sent framed even if it holds one message (an explicit batch).
    framed: bool,
}

impl Batch {
    /// An empty batch; `framed` sends it as a batch even with one message.
    pub(super) fn new(framed: bool) -> Self {
        Batch {
            first: None,
            payload: Vec::new(),
            receipts: Vec::new(),
            count: 0,
            bytes: 0,
            framed,
        }
    }

    /// How many messages it holds.
    pub(super) fn len(&self) -> u32 {
        self.count
    }

    /// The payload bytes of its messages.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether it holds none.
    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Add `item` as its last message.
    pub(super) fn push(&mut self, item: Item) {
        self.bytes += item.payload.len();
        self.count += 1;
        if self.count == 1 && !self.framed {
            self.first = Some(item);
            return;
        }
        if let Some(first) = self.first.take() {
            self.frame(first);
        }
        self.frame(item);
    }

    /// Whether it is to be sent now, by `batching`'s limits.
    pub(super) fn is_full(&self, batching: &Batching) -> bool {
        self.count >= batching.messages() || self.bytes >= batching.bytes() as usize
    }

    fn frame(&mut self, item: Item) {
        let Item {
            payload,
            properties,
            key,
            event_time,
            receipt,
        } = item;
        let metadata = SingleMessageMetadata {
            properties: properties
                .into_iter()
                .map(|(key, value)| KeyValue { key, value })
                .collect(),
            partition_key: key,
            payload_size: i32::try_from(payload.len()).unwrap_or(i32::MAX),
            event_time,
            ..SingleMessageMetadata::default()
        };
        let size = metadata.encoded_len();
        self.payload
            .reserve(4 + size + payload.len() + if self.receipts.is_empty() { 256 } else { 0 });
        self.payload
            .extend_from_slice(&u32::try_from(size).unwrap_or(u32::MAX).to_be_bytes());
        metadata
            .encode(&mut self.payload)
            .expect("a Vec grows to take what is encoded");
        self.payload.extend_from_slice(&payload);
        self.receipts.push(receipt);
    }

    /// The entry to send, and the receipts of its messages in order: whether their ids carry
    /// a batch index (a framed batch) is in [`Receipts`].
    pub(super) fn into_entry(self) -> (pulsar::producer::Message, Receipts) {
        if let Some(first) = self.first {
            let (message, receipt) = first.into_plain();
            return (message, Receipts::plain(receipt));
        }
        let message = pulsar::producer::Message {
            payload: self.payload,
            num_messages_in_batch: Some(i32::try_from(self.count).unwrap_or(i32::MAX)),
            ..pulsar::producer::Message::default()
        };
        (
            message,
            Receipts {
                framed: true,
                receipts: self.receipts,
            },
        )
    }
}

/// The receipts of one entry's messages.
#[derive(Debug)]
pub(super) struct Receipts {
    /// Whether the entry is a batch: its messages' ids end with their index.
    framed: bool,
    receipts: Vec<Receipt>,
}

impl Receipts {
    /// The receipt of a message sent as an entry of its own.
    pub(super) fn plain(receipt: Receipt) -> Self {
        Receipts {
            framed: false,
            receipts: vec![receipt],
        }
    }

    /// How many messages.
    pub(super) fn len(&self) -> usize {
        self.receipts.len()
    }

    /// The broker stored the entry at `ledger:entry` (of `partition`, `-1` for a topic that is
    /// not partitioned): each message learns its id.
    pub(super) fn stored(self, ledger: i64, entry: i64, partition: i64) {
        for (index, receipt) in self.receipts.into_iter().enumerate() {
            let id = if self.framed {
                MessageId::new(&[ledger, entry, partition, index as i64])
            } else {
                MessageId::new(&[ledger, entry, partition])
            };
            receipt.tell(Ok(id));
        }
    }

    /// The entry was not stored: each message learns why.
    pub(super) fn failed(self, error: &PublishError) {
        for receipt in self.receipts {
            receipt.tell(Err(error.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruststream::publish::{Confirm, Tell};
    use std::sync::{Arc, Mutex};

    fn item(payload: &[u8], key: Option<&str>, receipt: Receipt) -> Item {
        Item {
            payload: payload.to_vec(),
            properties: vec![("p".to_owned(), "v".to_owned())],
            key: key.map(str::to_owned),
            event_time: Some(7),
            receipt,
        }
    }

    #[derive(Default)]
    struct Ids(Mutex<Vec<(u64, String)>>);

    impl Tell for Ids {
        fn tell(&self, token: u64, result: Result<MessageId, PublishError>) {
            let said = result.map_or_else(|e| e.to_string(), |id| id.to_string());
            self.0.lock().unwrap().push((token, said));
        }
    }

    #[test]
    fn a_batch_frames_each_message_as_the_protocol_does_and_ids_end_with_the_index() {
        let ids = Arc::new(Ids::default());
        let receipt = |n| Receipt::to(Confirm::new(ids.clone(), n));
        let mut batch = Batch::new(false);
        batch.push(item(b"one", Some("k1"), receipt(0)));
        batch.push(item(b"second", None, receipt(1)));
        assert_eq!(batch.len(), 2);
        let (message, receipts) = batch.into_entry();
        assert_eq!(message.num_messages_in_batch, Some(2));
        // What a consumer reads back: each metadata, then its payload.
        let mut rest = &message.payload[..];
        let mut read = Vec::new();
        while !rest.is_empty() {
            let size = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let metadata = SingleMessageMetadata::decode(&rest[4..4 + size]).unwrap();
            let start = 4 + size;
            let end = start + metadata.payload_size as usize;
            read.push((metadata.partition_key.clone(), rest[start..end].to_vec()));
            assert_eq!(metadata.event_time, Some(7));
            assert_eq!(metadata.properties[0].key, "p");
            rest = &rest[end..];
        }
        assert_eq!(
            read,
            [
                (Some("k1".to_owned()), b"one".to_vec()),
                (None, b"second".to_vec())
            ]
        );
        receipts.stored(5, 9, -1);
        assert_eq!(
            *ids.0.lock().unwrap(),
            [(0, "5:9:-1:0".to_owned()), (1, "5:9:-1:1".to_owned())]
        );
    }

    #[test]
    fn a_lone_message_is_sent_plain_unless_the_batch_is_explicit() {
        let ids = Arc::new(Ids::default());
        let mut batch = Batch::new(false);
        batch.push(item(
            b"alone",
            Some("k"),
            Receipt::to(Confirm::new(ids.clone(), 3)),
        ));
        let (message, receipts) = batch.into_entry();
        assert_eq!(message.num_messages_in_batch, None);
        assert_eq!(message.payload, b"alone");
        assert_eq!(message.partition_key.as_deref(), Some("k"));
        assert_eq!(message.properties.get("p").map(String::as_str), Some("v"));
        receipts.stored(5, 10, 2);
        assert_eq!(ids.0.lock().unwrap()[0], (3, "5:10:2".to_owned()));

        let mut explicit = Batch::new(true);
        explicit.push(item(b"one", None, Receipt::none()));
        let (message, _) = explicit.into_entry();
        assert_eq!(message.num_messages_in_batch, Some(1));
    }

    #[test]
    fn a_batch_is_full_at_its_count_or_its_bytes() {
        let batching = Batching::new().max_messages(2).max_bytes(10);
        let mut batch = Batch::new(false);
        batch.push(item(b"123", None, Receipt::none()));
        assert!(!batch.is_full(&batching));
        batch.push(item(b"4", None, Receipt::none()));
        assert!(batch.is_full(&batching), "two messages");
        let mut big = Batch::new(false);
        big.push(item(b"0123456789", None, Receipt::none()));
        assert!(big.is_full(&batching), "ten bytes");
    }
}
