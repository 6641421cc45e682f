//! Why a [`TestApp`](super::TestApp) publish failed.

use ruststream::PublishError;

use super::Stalled;

/// A test publish failed: the message was not published, or the app kept working without
/// settling after it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestPublishError {
    /// The in-process Pulsar did not take the message (encoding, topic name).
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// The message was published, but the app did not settle after it.
    #[error(transparent)]
    Stalled(#[from] Stalled),
}
