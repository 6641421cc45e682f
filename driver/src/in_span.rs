//! A handler's call, run in its delivery's span where it has one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// `call`, entered in `span` on each poll where there is a span: a delivery in none (at the
    /// default level, every one) pays one test per poll, and nothing to drop.
    /// (`tracing::Instrumented` enters even an empty span, on each poll and on drop.)
    pub(crate) struct InSpan<F> {
        #[pin]
        call: F,
        span: Option<tracing::Span>,
    }
}

impl<F> InSpan<F> {
    /// `call` in `span`, unless `span` is disabled.
    #[inline(always)]
    pub(crate) fn new(call: F, span: &tracing::Span) -> Self {
        InSpan {
            call,
            span: (!span.is_disabled()).then(|| span.clone()),
        }
    }
}

impl<F: Future> Future for InSpan<F> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = this.span.as_ref().map(tracing::Span::enter);
        this.call.poll(cx)
    }
}
