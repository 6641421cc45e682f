//! An ordered list of layers, and running it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use super::{Delivery, End, Flow, Hooks, Layer, Mounting};
use crate::message::Message;
use crate::publish::PublishError;

/// Layers in order, outermost first: what one scope adds, or what a registration runs.
///
/// Cloning one is a reference count. Editing one (a broker's built-ins: reorder, replace,
/// remove) makes its own copy of the list, so stacks already handed out do not change.
#[derive(Clone, Default)]
pub struct Stack {
    layers: Arc<[(Arc<dyn Layer>, Hooks)]>,
    /// Whether a layer has a `publish` hook.
    publishes: bool,
}

impl core::fmt::Debug for Stack {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Stack")
            .field("layers", &self.layers.len())
            .finish()
    }
}

/// How far a delivery went into a stack: the layers whose `before` passed it on (those whose
/// `after` and `completed` are called), and the answer one of them gave instead of the
/// handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entered {
    passed: u16,
    answer: Option<crate::outcome::HandlerOutcome>,
}

impl Entered {
    /// The answer a layer gave before the handler, if one did.
    #[inline]
    pub fn answer(&self) -> Option<crate::outcome::HandlerOutcome> {
        self.answer
    }
}

impl Stack {
    /// A stack of no layers.
    pub fn new() -> Self {
        Stack::default()
    }

    /// How many layers it has.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether it has none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Whether a layer of it changes or refuses what is published: without one, a port
    /// behind it is the port as it is.
    #[inline]
    pub fn publishes(&self) -> bool {
        self.publishes
    }

    /// The same stack with `layer` innermost.
    pub fn push(self, layer: impl Layer) -> Self {
        let len = self.layers.len();
        self.insert(len, layer)
    }

    /// The same stack with `layer` at `index` (0 is outermost; past the end is innermost).
    pub fn insert(self, index: usize, layer: impl Layer) -> Self {
        self.edit(|layers| {
            let index = index.min(layers.len());
            layers.insert(index, entry(Arc::new(layer)));
        })
    }

    /// The same stack with `layer`, shared with whoever else holds it, innermost.
    pub fn push_shared(self, layer: Arc<dyn Layer>) -> Self {
        self.edit(|layers| layers.push(entry(layer)))
    }

    /// Where the layer of type `L` is, if there is one (0 is outermost).
    pub fn position<L: Layer>(&self) -> Option<usize> {
        self.layers.iter().position(|(layer, _)| is::<L>(layer))
    }

    /// Whether it has a layer of type `L`.
    pub fn contains<L: Layer>(&self) -> bool {
        self.position::<L>().is_some()
    }

    /// The same stack without its layers of type `L`.
    pub fn without<L: Layer>(self) -> Self {
        self.edit(|layers| layers.retain(|(layer, _)| !is::<L>(layer)))
    }

    /// The same stack with `layer` where the layer of type `L` was (innermost if there was
    /// none).
    pub fn replace<L: Layer>(self, layer: impl Layer) -> Self {
        match self.position::<L>() {
            Some(index) => self.without::<L>().insert(index, layer),
            None => self.push(layer),
        }
    }

    /// Its outermost layer, where that is an `L`, and the stack of the others: for a driver
    /// that calls a layer it knows directly (no dynamic call), and the rest through the stack.
    pub fn split_outermost<L: Layer>(&self) -> Option<(Arc<L>, Stack)> {
        let ((first, _), rest) = self.layers.split_first()?;
        let first: Arc<dyn Any + Send + Sync> = first.clone();
        let first = first.downcast::<L>().ok()?;
        Some((first, Stack::of(rest.iter().cloned())))
    }

    /// This stack around `inner`: this one's layers first (further out).
    pub fn around(&self, inner: &Stack) -> Stack {
        match (self.is_empty(), inner.is_empty()) {
            (_, true) => self.clone(),
            (true, false) => inner.clone(),
            (false, false) => Stack::of(self.layers.iter().chain(inner.layers.iter()).cloned()),
        }
    }

    /// The stack one registration runs: each layer as [`Layer::mount`] makes it for it.
    pub fn mount(&self, registration: &Mounting<'_>) -> Stack {
        Stack::of(
            self.layers
                .iter()
                .map(|(layer, hooks)| match layer.mount(registration) {
                    Some(mounted) => entry(mounted),
                    None => (layer.clone(), *hooks),
                }),
        )
    }

    /// Run the `before` hooks, outermost first, until one answers.
    #[inline]
    pub fn before(&self, delivery: &mut Delivery<'_>) -> Entered {
        if self.layers.is_empty() {
            return Entered {
                passed: 0,
                answer: None,
            };
        }
        let out_of_attempts = delivery.is_out_of_attempts();
        for (index, (layer, hooks)) in self.layers.iter().enumerate() {
            if !hooks.has(Hooks::BEFORE) {
                continue;
            }
            if let Flow::Return(outcome) = layer.before(delivery) {
                if !out_of_attempts {
                    return Entered {
                        passed: index as u16,
                        answer: Some(outcome),
                    };
                }
            }
        }
        Entered {
            passed: self.layers.len() as u16,
            answer: None,
        }
    }

    /// Run the `after` hooks of the layers `entered` passed, innermost first.
    #[inline]
    pub fn after(&self, entered: Entered, delivery: &Delivery<'_>, end: &mut End<'_>) {
        if self.layers.is_empty() {
            return;
        }
        for (layer, hooks) in self.passed(entered).iter().rev() {
            if hooks.has(Hooks::AFTER) {
                layer.after(delivery, end);
            }
        }
    }

    /// Run the `after` hooks on `end`, then, where it is final ([`Completion::is_final`]:
    /// nothing left for the machine to decide), the `completed` hooks; whether it was.
    ///
    /// [`Completion::is_final`]: crate::completion::Completion::is_final
    #[inline]
    pub fn end(&self, entered: Entered, delivery: &Delivery<'_>, end: &mut End<'_>) -> bool {
        self.after(entered, delivery, end);
        let done = end.completion().is_final();
        if done {
            self.completed(entered, delivery, end);
        }
        done
    }

    /// Run the `completed` hooks of the layers `entered` passed, innermost first.
    #[inline]
    pub fn completed(&self, entered: Entered, delivery: &Delivery<'_>, end: &End<'_>) {
        if self.layers.is_empty() {
            return;
        }
        for (layer, hooks) in self.passed(entered).iter().rev() {
            if hooks.has(Hooks::COMPLETED) {
                layer.completed(delivery, end);
            }
        }
    }

    /// Run the `publish` hooks, innermost first, until one refuses.
    #[inline]
    pub fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        if !self.publishes {
            return Ok(());
        }
        self.layers
            .iter()
            .rev()
            .filter(|(_, hooks)| hooks.has(Hooks::PUBLISH))
            .try_for_each(|(layer, _)| layer.publish(message))
    }

    #[inline]
    fn passed(&self, entered: Entered) -> &[(Arc<dyn Layer>, Hooks)] {
        &self.layers[..usize::from(entered.passed).min(self.layers.len())]
    }

    fn edit(self, change: impl FnOnce(&mut Vec<(Arc<dyn Layer>, Hooks)>)) -> Self {
        let mut layers: Vec<_> = self.layers.iter().cloned().collect();
        change(&mut layers);
        Stack::of(layers)
    }

    fn of(layers: impl IntoIterator<Item = (Arc<dyn Layer>, Hooks)>) -> Self {
        let layers: Arc<[_]> = layers.into_iter().collect();
        let publishes = layers.iter().any(|(_, hooks)| hooks.has(Hooks::PUBLISH));
        Stack { layers, publishes }
    }
}

/// `layer` with the hooks it says it has.
fn entry(layer: Arc<dyn Layer>) -> (Arc<dyn Layer>, Hooks) {
    let hooks = layer.hooks();
    (layer, hooks)
}

/// Whether `layer` is of type `L`.
fn is<L: Layer>(layer: &Arc<dyn Layer>) -> bool {
    let layer: &dyn Any = &**layer;
    layer.is::<L>()
}
