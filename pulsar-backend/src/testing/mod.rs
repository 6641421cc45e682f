//! Testing a service in process: [`TestApp`] runs the app's own `app()` on the in-process Pulsar
//! with a virtual clock that starts stopped and moves only by [`TestApp::advance`].

mod call;
mod test_app;

pub use crate::inprocess::TopicMessage;
pub use call::Call;
pub use test_app::{TestApp, TestAppBuilder};
