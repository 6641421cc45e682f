//! The schema a topic holds, as producers and consumers declare it.

use ruststream::Instant;

use super::Cluster;
use crate::{ModelError, TopicName};

impl Cluster {
    /// A producer (`producer`) or a consumer declares `schema` on `topic`. A topic without a
    /// schema takes it: from any producer (Pulsar's `isAllowAutoUpdateSchema`, on by
    /// default), and from a consumer while the topic holds nothing (a consumer on a topic
    /// with data and no schema is let in without registering one, as Pulsar's
    /// `addSchemaIfIdleOrCheckCompatible` does). A schema of another kind is refused; one of
    /// the same kind is accepted (a producer's replaces the definition, as a new version).
    pub(crate) fn declare_schema(
        &mut self,
        topic: &TopicName,
        schema: &ruststream::Schema,
        producer: bool,
        now: Instant,
    ) -> Result<(), ModelError> {
        let state = self.topic_mut(topic, now);
        match &state.schema {
            Some(existing) if existing.kind() != schema.kind() => {
                Err(ModelError::IncompatibleSchema {
                    topic: topic.clone(),
                    existing: existing.kind(),
                    requested: schema.kind(),
                })
            }
            Some(_) if !producer => Ok(()),
            None if !producer && state.store.len() > 0 => Ok(()),
            _ => {
                state.schema = Some(schema.clone());
                Ok(())
            }
        }
    }

    /// The schema registered on `topic`, if any.
    pub fn schema(&self, topic: &TopicName) -> Option<&ruststream::Schema> {
        self.topics.get(topic)?.schema.as_ref()
    }

    /// Refuse a partitioned topic's own name where a partition's is needed.
    #[inline]
    pub(crate) fn require_not_partitioned(&self, topic: &TopicName) -> Result<(), ModelError> {
        match self.partitions(topic) {
            Some(partitions) => Err(ModelError::PartitionedTopic {
                topic: topic.clone(),
                partitions,
            }),
            None => Ok(()),
        }
    }
}
