//! Testing a service in process: [`TestApp`] runs the app's own `app()` on the in-process Pulsar
//! with a virtual clock that starts stopped and moves only by [`TestApp::advance`].

mod call;
mod live_app;
mod recorder;
mod test_app;

pub use crate::inprocess::TopicMessage;
pub use call::Call;
pub use live_app::{LiveApp, LiveAppBuilder};
pub use test_app::{TestApp, TestAppBuilder};
