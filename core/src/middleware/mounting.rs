//! What a layer is told when a handler's driver starts.

/// The registration a layer is mounted on: given to [`Layer::mount`](super::Layer::mount)
/// once, when the handler's driver starts, so that a layer can make what it keeps per
/// handler (metric handles, a label) then rather than per message.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Mounting<'a> {
    /// The handler's name.
    pub handler: &'static str,
    /// The subscription's name.
    pub subscription: &'a str,
    /// The topics it reads, as the registration names them.
    pub topics: &'a str,
    /// The registration's dead-letter topic, if it has one.
    pub dead_letter: Option<&'a str>,
}

impl<'a> Mounting<'a> {
    /// Handler `handler` of `subscription`, reading `topics`, with no dead-letter topic.
    #[inline]
    pub fn new(handler: &'static str, subscription: &'a str, topics: &'a str) -> Self {
        Mounting {
            handler,
            subscription,
            topics,
            dead_letter: None,
        }
    }

    /// The same registration, with dead-letter topic `topic`.
    #[inline]
    pub fn with_dead_letter(mut self, topic: Option<&'a str>) -> Self {
        self.dead_letter = topic;
        self
    }
}
