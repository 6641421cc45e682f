//! The model keeps persistent topics only: publishing to, subscribing to or dead-lettering into a
//! `non-persistent://` topic is refused, naming it.

use crate::error::ModelError;
use crate::topic_name::TopicName;

/// `Ok` for a persistent topic; the refusal that names `topic` otherwise.
pub(crate) fn require_persistent(topic: &TopicName) -> Result<(), ModelError> {
    if topic.is_persistent() {
        Ok(())
    } else {
        Err(ModelError::NonPersistentTopic {
            topic: topic.clone(),
        })
    }
}
