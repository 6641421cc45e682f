//! A publishing port behind a stack's publish hooks.

use alloc::sync::Arc;

use super::Stack;
use crate::message::Message;
use crate::publish::{Publish, Publishing, Receipt};

/// A broker's publishing port, each message passed through a [`Stack`]'s
/// [`Layer::publish`](super::Layer::publish) hooks first: a refused message is answered with
/// the refusal and never reaches the producer.
pub struct LayeredPort {
    stack: Stack,
    inner: Arc<dyn Publish>,
}

impl LayeredPort {
    /// `inner` behind `stack`'s publish hooks; `inner` itself where no layer of the stack has
    /// one.
    pub fn wrap(stack: &Stack, inner: Arc<dyn Publish>) -> Arc<dyn Publish> {
        if !stack.publishes() {
            return inner;
        }
        Arc::new(LayeredPort {
            stack: stack.clone(),
            inner,
        })
    }
}

impl Publish for LayeredPort {
    fn send(&self, mut message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        match self.stack.publish(&mut message) {
            Ok(()) => self.inner.send(message, receipt),
            Err(error) => {
                receipt.tell(Err(error.clone()));
                Publishing::done(Err(error))
            }
        }
    }
}
