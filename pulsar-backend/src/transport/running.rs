//! A started Pulsar broker, on either transport.

use std::sync::{Arc, Mutex};
use std::task::Waker;

use ruststream::app::{HealthCheck, RunningBroker};
use ruststream::handler::{BoxFuture, Publishing};
use ruststream::message::{Message, MessageId};
use ruststream::middleware::Stack;
use ruststream::publish::Receipt;
use ruststream::PublishError;

use super::Transport;
use ruststream_driver::{DriverHandle, Handled};

/// The drivers of a started broker and the transport they run on.
pub(crate) struct RunningPulsar<T: Transport> {
    /// The broker's layers, whose publish hooks the app's own publishes pass.
    pub(crate) layers: Stack,
    /// How [`RunningBroker::publish`] publishes: through the layers' publish hooks where one
    /// has them, else straight to the transport. Chosen once ([`RunningPulsar::new`]) and
    /// called as the method's only step, so that the message is handed on where it lies: a
    /// test on every publish made the method copy it first.
    publish: for<'a> fn(&'a Self, Message) -> Publishing<'a, MessageId>,
    /// How [`RunningBroker::send`] publishes, chosen as `publish` is.
    send: for<'a> fn(&'a Self, Message, Receipt) -> Publishing<'a, ()>,
    pub(crate) transport: Arc<T>,
    pub(crate) drivers: Mutex<Vec<DriverHandle>>,
    pub(crate) handled: Arc<Handled>,
}

impl<T: Transport> RunningPulsar<T> {
    /// The running broker of `transport` and its `drivers`, whose app's publishes pass
    /// `layers`.
    pub(crate) fn new(
        layers: Stack,
        transport: Arc<T>,
        drivers: Vec<DriverHandle>,
        handled: Arc<Handled>,
    ) -> Self {
        let (publish, send) = match layers.publishes() {
            true => (Self::publish_layered as _, Self::send_layered as _),
            false => (Self::publish_direct as _, Self::send_direct as _),
        };
        RunningPulsar {
            layers,
            publish,
            send,
            transport,
            drivers: Mutex::new(drivers),
            handled,
        }
    }

    /// [`RunningBroker::publish`] where no layer has a publish hook.
    fn publish_direct(&self, message: Message) -> Publishing<'_, MessageId> {
        self.transport.publish_awaited(message)
    }

    /// [`RunningBroker::send`] where no layer has a publish hook.
    fn send_direct(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        self.transport.publish_port().send(message, receipt)
    }

    /// [`RunningBroker::publish`] through the layers' publish hooks.
    fn publish_layered(&self, mut message: Message) -> Publishing<'_, MessageId> {
        match self.layers.publish(&mut message) {
            Ok(()) => self.transport.publish_awaited(message),
            Err(refused) => Publishing::done(Err(refused)),
        }
    }

    /// [`RunningBroker::send`] through the layers' publish hooks.
    fn send_layered(&self, mut message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        match self.layers.publish(&mut message) {
            Ok(()) => self.transport.publish_port().send(message, receipt),
            Err(refused) => {
                receipt.tell(Err(refused.clone()));
                Publishing::done(Err(refused))
            }
        }
    }

    fn take_drivers(&self) -> Vec<DriverHandle> {
        std::mem::take(&mut *self.drivers.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<T: Transport> RunningBroker for RunningPulsar<T> {
    fn publish(&self, message: Message) -> Publishing<'_, MessageId> {
        (self.publish)(self, message)
    }

    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        (self.send)(self, message, receipt)
    }

    fn publish_batch(
        &self,
        mut messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<Vec<MessageId>, PublishError>> {
        if let Err(refused) = messages.iter_mut().try_for_each(|m| self.layers.publish(m)) {
            return Box::pin(std::future::ready(Err(refused)));
        }
        self.transport.publish_batch(messages)
    }

    fn idle(&self) -> BoxFuture<'_, ()> {
        self.transport.idle()
    }

    fn in_flight(&self) -> usize {
        self.transport.in_flight()
    }

    fn handled(&self) -> u64 {
        self.handled.count()
    }

    fn wake_on_handled(&self, waker: &Waker) {
        self.handled.wake_on_next(waker);
    }

    fn health(&self) -> HealthCheck {
        self.transport.health()
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            DriverHandle::stop_all(self.take_drivers()).await;
            self.transport.close().await;
        })
    }

    fn kill(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            DriverHandle::kill_all(self.take_drivers()).await;
            self.transport.close().await;
        })
    }
}
