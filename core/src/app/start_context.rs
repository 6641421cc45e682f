//! What a broker is given to start with.

use alloc::sync::Arc;
use core::any::Any;

use super::Extensions;
use crate::runtime::Runtime;

/// Everything a broker starts with besides its own configuration: the runtime it runs on,
/// whether to use its in-process stand-in instead of a server, and values for it by type.
///
/// The runner builds one from the command line (`--embedded` asks for stand-ins); a test
/// harness builds one with its virtual clock and the in-process cluster it inspects.
#[derive(Clone)]
pub struct StartContext {
    runtime: Arc<dyn Runtime>,
    in_process: bool,
    extensions: Extensions,
}

impl StartContext {
    /// Start on `runtime`, against real servers.
    pub fn new(runtime: Arc<dyn Runtime>) -> Self {
        StartContext {
            runtime,
            in_process: false,
            extensions: Extensions::new(),
        }
    }

    /// Ask every broker to run on its in-process stand-in instead of a server. A broker that
    /// has none fails to start with an error that says so.
    pub fn in_process(mut self) -> Self {
        self.in_process = true;
        self
    }

    /// Hand `value` to the brokers; each looks up the types it knows.
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// The runtime every task and wait of the broker runs on.
    pub fn runtime(&self) -> &Arc<dyn Runtime> {
        &self.runtime
    }

    /// Whether brokers run on their in-process stand-ins.
    pub fn is_in_process(&self) -> bool {
        self.in_process
    }

    /// The value of type `T` handed to the brokers, if any.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }
}

impl core::fmt::Debug for StartContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StartContext")
            .field("in_process", &self.in_process)
            .field("extensions", &self.extensions)
            .finish()
    }
}
