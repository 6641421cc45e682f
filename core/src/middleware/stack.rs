//! An ordered list of layers, and running it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use super::{Delivery, End, Flow, Layer, Mounting};
use crate::message::Message;
use crate::publish::PublishError;

/// Layers in order, outermost first: what one scope adds, or what a registration runs.
///
/// Cloning one is a reference count. Editing one (a broker's built-ins: reorder, replace,
/// remove) makes its own copy of the list, so stacks already handed out do not change.
#[derive(Clone, Default)]
pub struct Stack {
    layers: Arc<[Arc<dyn Layer>]>,
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
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
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
            layers.insert(index, Arc::new(layer));
        })
    }

    /// The same stack with `layer`, shared with whoever else holds it, innermost.
    pub fn push_shared(self, layer: Arc<dyn Layer>) -> Self {
        self.edit(|layers| layers.push(layer))
    }

    /// Where the layer of type `L` is, if there is one (0 is outermost).
    pub fn position<L: Layer>(&self) -> Option<usize> {
        self.layers.iter().position(|layer| is::<L>(layer))
    }

    /// Whether it has a layer of type `L`.
    pub fn contains<L: Layer>(&self) -> bool {
        self.position::<L>().is_some()
    }

    /// The same stack without its layers of type `L`.
    pub fn without<L: Layer>(self) -> Self {
        self.edit(|layers| layers.retain(|layer| !is::<L>(layer)))
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
            (false, false) => Stack {
                layers: self
                    .layers
                    .iter()
                    .chain(inner.layers.iter())
                    .cloned()
                    .collect(),
            },
        }
    }

    /// The stack one registration runs: each layer as [`Layer::mount`] makes it for it.
    pub fn mount(&self, registration: &Mounting<'_>) -> Stack {
        Stack {
            layers: self
                .layers
                .iter()
                .map(|layer| layer.mount(registration).unwrap_or_else(|| layer.clone()))
                .collect(),
        }
    }

    /// Run the `before` hooks, outermost first, until one answers.
    #[inline]
    pub fn before(&self, delivery: &mut Delivery<'_>) -> Entered {
        let out_of_attempts = delivery.is_out_of_attempts();
        for (index, layer) in self.layers.iter().enumerate() {
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
        for layer in self.passed(entered).iter().rev() {
            layer.after(delivery, end);
        }
    }

    /// Run the `completed` hooks of the layers `entered` passed, innermost first.
    #[inline]
    pub fn completed(&self, entered: Entered, delivery: &Delivery<'_>, end: &End<'_>) {
        for layer in self.passed(entered).iter().rev() {
            layer.completed(delivery, end);
        }
    }

    /// Run the `publish` hooks, innermost first, until one refuses.
    #[inline]
    pub fn publish(&self, message: &mut Message) -> Result<(), PublishError> {
        self.layers
            .iter()
            .rev()
            .try_for_each(|layer| layer.publish(message))
    }

    fn passed(&self, entered: Entered) -> &[Arc<dyn Layer>] {
        &self.layers[..usize::from(entered.passed).min(self.layers.len())]
    }

    fn edit(self, change: impl FnOnce(&mut Vec<Arc<dyn Layer>>)) -> Self {
        let mut layers: Vec<_> = self.layers.iter().cloned().collect();
        change(&mut layers);
        Stack {
            layers: layers.into(),
        }
    }
}

/// Whether `layer` is of type `L`.
fn is<L: Layer>(layer: &Arc<dyn Layer>) -> bool {
    let layer: &dyn Any = &**layer;
    layer.is::<L>()
}
