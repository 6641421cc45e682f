//! A handler's drivers, made while the handler's type is known.
//!
//! A driver is built for one handler type, so that each call's future runs in the driver's
//! slot as it is, with no box per message. A broker keeps its handlers without their types,
//! and the consumer's type is chosen only at start (an in-process broker, or a client on one
//! of its executors). So a broker's `include` makes a launcher for every consumer type it
//! has, each a driver for that handler on that consumer, and the transport takes its own.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use ruststream::Handler;

use crate::port::ConsumerPort;
use crate::{Driver, DriverConfig, DriverHandle};

/// Starts the driver of one handler type on a consumer of type `C`.
type Launcher<S, C> = Box<dyn Fn(C, DriverConfig<S>) -> DriverHandle + Send + Sync>;

/// A mounted handler: its name, and a launcher for each consumer type.
pub struct Mount<S> {
    name: &'static str,
    /// Each a [`Launcher<S, C>`] for a different `C`.
    launchers: Vec<Box<dyn Any + Send + Sync>>,
    /// The app state the launchers take, which they hide.
    state: PhantomData<fn(&S)>,
}

impl<S: Send + Sync + 'static> Mount<S> {
    /// A handler with no launcher yet: add one per consumer type with [`Mount::add`].
    pub fn new(name: &'static str) -> Self {
        Mount {
            name,
            launchers: Vec::new(),
            state: PhantomData,
        }
    }

    /// The handler's name (the function's).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Make `handler` runnable on consumers of type `C`.
    pub fn add<C: ConsumerPort, H: Handler<S>>(&mut self, handler: &Arc<H>) {
        let handler = handler.clone();
        let launcher: Launcher<S, C> = Box::new(move |consumer, config| {
            let runtime = config.runtime.clone();
            DriverHandle::spawn(&runtime, Driver::new(consumer, config, handler.clone()))
        });
        self.launchers.push(Box::new(launcher));
    }

    /// Start the handler's driver on `consumer`.
    ///
    /// # Panics
    ///
    /// If no launcher was added for `C`: `include` adds one for every consumer type the crate
    /// builds, so this is a bug in this crate, not in the app.
    pub fn launch<C: ConsumerPort>(&self, consumer: C, config: DriverConfig<S>) -> DriverHandle {
        let launcher = self
            .launchers
            .iter()
            .find_map(|launcher| launcher.downcast_ref::<Launcher<S, C>>())
            .unwrap_or_else(|| {
                panic!(
                    "broker bug: handler `{}` has no driver for consumer type `{}`; the \
                     broker's `include` must add one for every transport it has",
                    self.name,
                    std::any::type_name::<C>()
                )
            });
        launcher(consumer, config)
    }
}
