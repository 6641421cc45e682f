//! The application: its name, its startup, its brokers, and how they start and stop.
//!
//! A service describes itself with [`RustStream`]: `RustStream::new(AppInfo::new(..))`, then
//! `.on_startup(..)` to build the state handlers share, then `.with_broker(broker, |b| ..)` to
//! mount handlers on a broker. The result is an [`App`]; `#[ruststream::app]` writes a `main`
//! that runs it, and tests run the very same value in process.

#[allow(clippy::module_inception)]
mod app;
mod broker;
mod builder;
mod error;
mod extensions;
mod health;
mod info;
mod settings;
mod start_context;
mod virtual_time;

pub use app::{App, AppParts, RunningApp, Startup};
pub use broker::{BoxError, Broker, RunningBroker};
pub use builder::RustStream;
pub use error::StartError;
pub(crate) use extensions::Extensions;
pub use health::{Health, HealthCheck};
pub use info::AppInfo;
pub use settings::{SettingSpec, Settings};
pub use start_context::StartContext;
pub use virtual_time::{Stalled, StalledCall, VirtualTime, DEFAULT_MAX_HANDLED_PER_INSTANT};
