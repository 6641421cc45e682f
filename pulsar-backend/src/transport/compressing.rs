//! A handler's publisher under its registration's `.compression(codec)`.

use std::sync::Arc;

use ruststream::handler::Publish;
use ruststream::message::{Message, Publishing};
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
    fn publish(&self, mut message: Message) -> Publishing<'_, MessageId> {
        message.compression.get_or_insert(self.codec);
        self.inner.publish(message)
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
        fn publish(&self, message: Message) -> Publishing<'_, MessageId> {
            self.0.lock().unwrap().push(message.compression);
            Publishing::done(Ok(MessageId::new(&[1, 2, -1])))
        }
    }

    #[test]
    fn a_message_without_a_codec_takes_the_registrations_and_one_with_its_own_keeps_it() {
        let seen = Arc::new(Seen::default());
        let publisher = Compressing::new(seen.clone(), Compression::Lz4);
        drop(publisher.publish(Message::new("t", b"a".to_vec())));
        drop(publisher.publish(Message::new("t", b"b".to_vec()).compression(Compression::None)));
        drop(publisher.publish(Message::new("t", b"c".to_vec()).compression(Compression::Zstd)));
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
