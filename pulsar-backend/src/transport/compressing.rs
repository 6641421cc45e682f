//! A handler's publisher under its registration's `.compression(codec)`.

use std::sync::Arc;

use ruststream::message::Message;
use ruststream::publish::{Publish, Publishing, Receipt};
use ruststream::{Compression, MessageId};

/// Publishes through the transport's publisher, giving `codec` to every message that names no
/// compression of its own: a message's own setting (or its `#[outgoing]` type's) wins.
pub(crate) struct Compressing {
    inner: Arc<dyn Publish>,
    codec: Compression,
}

impl Compressing {
    pub(crate) fn new(inner: Arc<dyn Publish>, codec: Compression) -> Self {
        Compressing { inner, codec }
    }
}

impl Publish for Compressing {
    fn send(&self, mut message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        message.compression.get_or_insert(self.codec);
        self.inner.send(message, receipt)
    }

    fn publish(&self, mut message: Message, receipt: Receipt) -> Publishing<'_, MessageId> {
        message.compression.get_or_insert(self.codec);
        self.inner.publish(message, receipt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Keeps the codec of every message it is given.
    #[derive(Default)]
    struct Seen(Mutex<Vec<Option<Compression>>>);

    impl Publish for Seen {
        fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
            self.0.lock().unwrap().push(message.compression);
            receipt.tell(Ok(MessageId::new(&[1, 2, -1])));
            Publishing::done(Ok(()))
        }
    }

    #[test]
    fn a_message_without_a_codec_takes_the_registrations_and_one_with_its_own_keeps_it() {
        let seen = Arc::new(Seen::default());
        let publisher = Compressing::new(seen.clone(), Compression::Lz4);
        let none = || Receipt::none();
        drop(publisher.send(Message::new("t", b"a".to_vec()), none()));
        drop(publisher.send(
            Message::new("t", b"b".to_vec()).compression(Compression::None),
            none(),
        ));
        drop(publisher.publish(
            Message::new("t", b"c".to_vec()).compression(Compression::Zstd),
            none(),
        ));
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                Some(Compression::Lz4),
                Some(Compression::None),
                Some(Compression::Zstd)
            ]
        );
    }
}
