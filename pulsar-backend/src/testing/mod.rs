//! Testing a service in process: [`TestApp`] runs the app's own `app()` on the in-process Pulsar
//! with a virtual clock that starts stopped and moves only by [`TestApp::advance`].

mod call;
mod live_app;
mod publish_error;
mod recorder;
mod test_app;

pub use crate::inprocess::TopicMessage;
pub use call::Call;
pub use live_app::{LiveApp, LiveAppBuilder, LIVE_CONNECT_TIMEOUT};
pub use publish_error::TestPublishError;
pub use ruststream::app::{Stalled, DEFAULT_MAX_HANDLED_PER_INSTANT};
pub use test_app::{TestApp, TestAppBuilder};
