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
/// remove) makes its own copy of the list, so stacks already handed out do not change. Which
/// layers have which hook is resolved once, as the stack is built: a delivery calls only the
/// hooks there are, the built-in layers' as any other's.
#[derive(Clone, Default)]
pub struct Stack {
    inner: Arc<Resolved>,
}

/// A stack's layers, and for each hook the layers that have it, with their place.
#[derive(Default)]
struct Resolved {
    layers: Vec<(Arc<dyn Layer>, Hooks)>,
    before: Vec<(u16, Arc<dyn Layer>)>,
    after: Vec<(u16, Arc<dyn Layer>)>,
    completed: Vec<(u16, Arc<dyn Layer>)>,
    publish: Vec<Arc<dyn Layer>>,
}

impl core::fmt::Debug for Stack {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Stack")
            .field("layers", &self.inner.layers.len())
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
        self.inner.layers.len()
    }

    /// Whether it has none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.layers.is_empty()
    }

    /// Whether a layer of it changes or refuses what is published: without one, a port
    /// behind it is the port as it is.
    #[inline]
    pub fn publishes(&self) -> bool {
        !self.inner.publish.is_empty()
    }

    /// The same stack with `layer` innermost.
    pub fn push(self, layer: impl Layer) -> Self {
        let len = self.inner.layers.len();
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
        self.inner
            .layers
            .iter()
            .position(|(layer, _)| is::<L>(layer))
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

    /// This stack around `inner`: this one's layers first (further out).
    pub fn around(&self, inner: &Stack) -> Stack {
        match (self.is_empty(), inner.is_empty()) {
            (_, true) => self.clone(),
            (true, false) => inner.clone(),
            (false, false) => Stack::of(
                (self.inner.layers.iter())
                    .chain(inner.inner.layers.iter())
                    .cloned(),
            ),
        }
    }

    /// The stack one registration runs: each layer as [`Layer::mount`] makes it for it.
    pub fn mount(&self, registration: &Mounting<'_>) -> Stack {
        Stack::of(
            self.inner
                .layers
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
        let inner = &*self.inner;
        let out_of_attempts = delivery.is_out_of_attempts();
        for (index, layer) in &inner.before {
            if let Flow::Return(outcome) = layer.before(delivery) {
                if !out_of_attempts {
                    return Entered {
                        passed: *index,
                        answer: Some(outcome),
                    };
                }
            }
        }
        Entered {
            passed: inner.layers.len() as u16,
            answer: None,
        }
    }

    /// Run the `after` hooks of the layers `entered` passed, innermost first.
    #[inline]
    pub fn after(&self, entered: Entered, delivery: &Delivery<'_>, end: &mut End<'_>) {
        for (index, layer) in self.inner.after.iter().rev() {
            if *index < entered.passed {
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
        for (index, layer) in self.inner.completed.iter().rev() {
            if *index < entered.passed {
                layer.completed(delivery, end);
            }
        }
    }

    /// Run the `publish` hooks, innermost first, until one refuses.
    #[inline]
    pub fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        (self.inner.publish.iter().rev()).try_for_each(|layer| layer.publish(message))
    }

    fn edit(self, change: impl FnOnce(&mut Vec<(Arc<dyn Layer>, Hooks)>)) -> Self {
        let mut layers: Vec<_> = self.inner.layers.to_vec();
        change(&mut layers);
        Stack::of(layers)
    }

    /// The stack of `layers`, each hook's layers resolved.
    fn of(layers: impl IntoIterator<Item = (Arc<dyn Layer>, Hooks)>) -> Self {
        let layers: Vec<_> = layers.into_iter().collect();
        let with = |hook: Hooks| -> Vec<(u16, Arc<dyn Layer>)> {
            (layers.iter().enumerate())
                .filter(|(_, (_, hooks))| hooks.has(hook))
                .map(|(index, (layer, _))| (index as u16, layer.clone()))
                .collect()
        };
        let resolved = Resolved {
            before: with(Hooks::BEFORE),
            after: with(Hooks::AFTER),
            completed: with(Hooks::COMPLETED),
            publish: with(Hooks::PUBLISH)
                .into_iter()
                .map(|(_, layer)| layer)
                .collect(),
            layers,
        };
        Stack {
            inner: Arc::new(resolved),
        }
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
