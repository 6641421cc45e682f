//! What a layer sees of one delivery.

use crate::handler::Incoming;
use crate::time::Instant;

/// One delivery on its way through a [`Stack`](super::Stack): the message as the handler
/// sees it, where it came from, when its handling started, and the span its handler runs in.
///
/// The driver builds it once per delivery, on the stack; layers read it, and the ones that
/// need something from `before` to `after` find it here ([`Delivery::started`],
/// [`Delivery::span`]) rather than keeping state of their own.
///
/// It holds how to read the message rather than a copy of it: the handler's own
/// [`Incoming`] is built where the handler keeps it, and a delivery whose layers never ask
/// for the message costs no second one.
pub struct Delivery<'a> {
    message: &'a (dyn Fn() -> Incoming<'a> + Sync + 'a),
    handler: &'static str,
    subscription: &'a str,
    started: Instant,
    unreadable: Option<&'a str>,
    out_of_attempts: bool,
    /// `None` until a layer sets one: a delivery in no span pays no span's drop.
    span: Option<tracing::Span>,
}

impl core::fmt::Debug for Delivery<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Delivery")
            .field("message", &self.message())
            .field("handler", &self.handler)
            .field("subscription", &self.subscription)
            .field("started", &self.started)
            .field("unreadable", &self.unreadable)
            .field("out_of_attempts", &self.out_of_attempts)
            .field("span", &self.span)
            .finish()
    }
}

impl<'a> Delivery<'a> {
    /// The message `message` reads, handed to handler `handler` of `subscription` at
    /// `started` (the app's clock, read by the driver), in no span yet.
    #[inline]
    pub fn new(
        message: &'a (dyn Fn() -> Incoming<'a> + Sync + 'a),
        handler: &'static str,
        subscription: &'a str,
        started: Instant,
    ) -> Self {
        Delivery {
            message,
            handler,
            subscription,
            started,
            unreadable: None,
            out_of_attempts: false,
            span: None,
        }
    }

    /// Mark it as a message the client could not read (`why`): the handler is not called,
    /// and it ends as a payload that does not decode does. (In place: a delivery is built
    /// for every message, and moving it costs.)
    #[inline]
    pub fn set_unreadable(&mut self, why: &'a str) {
        self.unreadable = Some(why);
    }

    /// Mark it as come back more often than the registration's `max_attempts` allows: the
    /// handler is not called and it goes to the dead-letter topic, whatever a layer answers.
    #[inline]
    pub fn set_out_of_attempts(&mut self) {
        self.out_of_attempts = true;
    }

    /// The message, as the handler's parameters are extracted from it (read anew on each
    /// call: keep it where a hook needs it more than once).
    #[inline]
    pub fn message(&self) -> Incoming<'a> {
        (self.message)()
    }

    /// The value of message property `name`, if present.
    #[inline]
    pub fn property(&self, name: &str) -> Option<&'a str> {
        self.message().property(name)
    }

    /// The handler's name (its function's).
    #[inline]
    pub fn handler(&self) -> &'static str {
        self.handler
    }

    /// The subscription the delivery came through.
    #[inline]
    pub fn subscription(&self) -> &'a str {
        self.subscription
    }

    /// When its handling started, on the app's clock (virtual in tests).
    #[inline]
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Why the client could not read the message, if it could not: the handler is not
    /// called for it.
    #[inline]
    pub fn unreadable(&self) -> Option<&'a str> {
        self.unreadable
    }

    /// Whether the delivery came back once more than `max_attempts` allows: the handler is
    /// not called, and an answer from `before` is not taken.
    #[inline]
    pub fn is_out_of_attempts(&self) -> bool {
        self.out_of_attempts
    }

    /// The span the handler runs in and its end is logged in ([`tracing::Span::none`] until
    /// a layer sets one).
    #[inline]
    pub fn span(&self) -> &tracing::Span {
        self.span.as_ref().unwrap_or(&NO_SPAN)
    }

    /// Run the handler, and log its end, in `span` (what a tracing layer does).
    #[inline]
    pub fn set_span(&mut self, span: tracing::Span) {
        self.span = Some(span);
    }

    /// The span, taken out for the handler's future (the driver's step).
    #[inline]
    pub fn take_span(&mut self) -> tracing::Span {
        self.span.take().unwrap_or_else(tracing::Span::none)
    }
}

/// The span of a delivery no layer put in one.
static NO_SPAN: tracing::Span = tracing::Span::none();
