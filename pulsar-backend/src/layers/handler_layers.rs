//! The layers around one handler, as its driver runs them.

use std::sync::Arc;

use ruststream::middleware::{Delivery, End, Entered, Flow, Layer, Stack};

use super::metrics::HandlerMetrics;
#[cfg(feature = "otel")]
use super::trace_context::TraceContext;
use super::tracing::TracingFor;

/// A registration's mounted stack, with the built-ins that are still its outermost layers,
/// in their default order, taken out and called directly: the same hooks in the same order
/// as the stack would call them, without a dynamic call per hook on every delivery. A
/// service that reorders or replaces the built-ins gets the stack as it is.
pub(crate) struct HandlerLayers {
    tracing: Option<Arc<TracingFor>>,
    #[cfg(feature = "otel")]
    trace_context: Option<Arc<TraceContext>>,
    metrics: Option<Arc<HandlerMetrics>>,
    /// The layers after those.
    rest: Stack,
}

impl HandlerLayers {
    /// The layers of `stack`, mounted for the handler.
    pub(crate) fn new(stack: &Stack) -> Self {
        let mut rest = stack.clone();
        let tracing = take(&mut rest);
        #[cfg(feature = "otel")]
        let trace_context = take(&mut rest);
        let metrics = take(&mut rest);
        HandlerLayers {
            tracing,
            #[cfg(feature = "otel")]
            trace_context,
            metrics,
            rest,
        }
    }

    /// [`Stack::before`]: the built-ins never answer, so they are always passed.
    #[inline(always)]
    pub(crate) fn before(&self, delivery: &mut Delivery<'_>) -> Entered {
        if let Some(tracing) = &self.tracing {
            passes(tracing.before(delivery));
        }
        #[cfg(feature = "otel")]
        if let Some(trace_context) = &self.trace_context {
            passes(trace_context.before(delivery));
        }
        if let Some(metrics) = &self.metrics {
            passes(metrics.before(delivery));
        }
        self.rest.before(delivery)
    }

    /// [`Stack::end`]: the `after` hooks innermost first, then, where the end is final, the
    /// `completed` ones; whether it was.
    #[inline(always)]
    pub(crate) fn end(&self, entered: Entered, delivery: &Delivery<'_>, end: &mut End<'_>) -> bool {
        self.rest.after(entered, delivery, end);
        // Metrics and trace context have no `after`.
        if let Some(tracing) = &self.tracing {
            tracing.after(delivery, end);
        }
        let done = end.completion().is_final();
        if done {
            self.completed(entered, delivery, end);
        }
        done
    }

    /// [`Stack::completed`], innermost first (tracing and trace context have none).
    #[inline(always)]
    pub(crate) fn completed(&self, entered: Entered, delivery: &Delivery<'_>, end: &End<'_>) {
        self.rest.completed(entered, delivery, end);
        if let Some(metrics) = &self.metrics {
            metrics.completed(delivery, end);
        }
    }
}

/// The outermost layer of `stack`, where it is an `L`; `stack` loses it.
fn take<L: Layer>(stack: &mut Stack) -> Option<Arc<L>> {
    let (layer, rest) = stack.split_outermost::<L>()?;
    *stack = rest;
    Some(layer)
}

/// A built-in passes every delivery on.
#[inline(always)]
fn passes(flow: Flow) {
    debug_assert!(matches!(flow, Flow::Next), "a built-in layer answered");
}

#[cfg(test)]
mod tests {
    use ruststream::middleware::{Layer, Mounting};

    use super::*;
    use crate::layers::{Metrics, Tracing};

    struct Mine;
    impl Layer for Mine {}

    fn mounted(stack: Stack) -> HandlerLayers {
        HandlerLayers::new(&stack.mount(&Mounting::new("h", "s", "t")))
    }

    #[test]
    fn the_builtins_in_their_default_order_are_called_directly() {
        let layers = mounted(crate::layers::builtins().push(Mine));
        assert!(layers.tracing.is_some() && layers.metrics.is_some());
        #[cfg(feature = "otel")]
        assert!(layers.trace_context.is_some());
        assert_eq!(layers.rest.len(), 1, "only the service's own layer is left");
        assert!(layers.rest.contains::<Mine>());
    }

    #[test]
    fn builtins_reordered_or_behind_another_layer_stay_in_the_stack_in_their_order() {
        let layers = mounted(Stack::new().push(Metrics).push(Tracing));
        assert!(layers.metrics.is_some(), "metrics is outermost: split off");
        assert!(layers.tracing.is_none());
        assert!(
            layers.rest.contains::<TracingFor>(),
            "tracing stays, after metrics"
        );
        let layers = mounted(Stack::new().push(Mine).push(Tracing).push(Metrics));
        assert!(layers.tracing.is_none() && layers.metrics.is_none());
        assert_eq!(layers.rest.len(), 3);
    }
}
