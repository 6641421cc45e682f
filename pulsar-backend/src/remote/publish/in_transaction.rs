//! Publishing in a transaction (a transactional registration's handler, and the copy the
//! machine orders for it): each message an entry of its own, through producers kept for
//! transactional sends, so that nothing outside the transaction shares its entry. The message
//! carries the transaction's id, and the producer registers its partition with the
//! transaction before the first send to it (pulsar-rs, `patches/README.md` section 18).

use std::sync::Arc;

use pulsar::message::proto::CommandSendReceipt;
use pulsar::{Executor, Producer, Transaction};
use ruststream::message::Message;
use ruststream::publish::{Publish, Publishing, Receipt};
use ruststream::{MessageId, PublishError};
use ruststream_pulsar_model::choose_partition;

use super::{delayed_message, item, refused, Kind, Publisher};

/// A producer kept for the transactional sends to one partition, of one kind of message:
/// sends through it take turns.
pub(super) type TxnProducer<Exe> = Arc<futures::lock::Mutex<Producer<Exe>>>;

/// Publishes in one transaction, with the broker's producers' settings and routing.
pub(crate) struct InTransaction<Exe: Executor> {
    publisher: Arc<Publisher<Exe>>,
    txn: Transaction<Exe>,
}

impl<Exe: Executor> InTransaction<Exe> {
    /// Publish through `publisher`'s routing, in `txn`.
    pub(crate) fn new(publisher: Arc<Publisher<Exe>>, txn: Transaction<Exe>) -> Self {
        InTransaction { publisher, txn }
    }
}

/// Completes once the message is handed to its producer; its receipt is told the broker's
/// answer later.
impl<Exe: Executor> Publish for InTransaction<Exe> {
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        Publishing::waiting(Box::pin(
            self.publisher.send_in(message, receipt, &self.txn),
        ))
    }
}

impl<Exe: Executor> Publisher<Exe> {
    /// Send `message` in `txn`; `receipt` is told the broker's answer.
    async fn send_in(
        &self,
        message: Message,
        receipt: Receipt,
        txn: &Transaction<Exe>,
    ) -> Result<(), PublishError> {
        let topic = match self.resolve(&message.topic) {
            Ok(topic) => topic,
            Err(error) => return Err(refused(receipt, error)),
        };
        let topic = topic.as_str();
        if let Err(error) = self.look_up(topic).await {
            return Err(refused(receipt, error));
        }
        if crate::chunked::needs_chunks(self.chunk_over, &message) {
            let error = PublishError::broker(
                topic,
                format!(
                    "a message of {} bytes is over the broker's limit and would go in chunks, \
                     which ruststream does not publish in a transaction yet; make it smaller, \
                     or raise the limit (PulsarBroker::chunk_messages_over)",
                    message.payload.len()
                ),
            );
            return Err(refused(receipt, error));
        }
        let kind = self.kind_of(&message);
        let (name, partition) = self
            .partition_for(topic, message.key.as_deref())
            .expect("looked up above");
        let producer = match self.txn_producer(&name, &kind).await {
            Ok(producer) => producer,
            Err(error) => return Err(refused(receipt, error)),
        };
        let delayed = message.deliver_after.is_some() || message.deliver_at.is_some();
        let (plain, receipt) = match delayed {
            true => delayed_message(message, receipt),
            false => item(message, receipt).into_plain(),
        };
        let sending = producer.lock().await.send_non_blocking_in(plain, txn).await;
        let answer = match sending {
            Ok(answer) => answer,
            Err(error) => {
                let error = PublishError::broker(
                    &name,
                    format!("sending in transaction {}: {error}", txn.id()),
                );
                return Err(refused(receipt, error));
            }
        };
        self.runtime.spawn(Box::pin(async move {
            let told = match answer.await {
                Ok(CommandSendReceipt {
                    message_id: Some(id),
                    ..
                }) => Ok(MessageId::new(&[
                    id.ledger_id as i64,
                    id.entry_id as i64,
                    partition,
                ])),
                Ok(_) => Err(PublishError::broker(
                    &name,
                    "the broker's receipt names no message id",
                )),
                Err(error) => Err(PublishError::broker(&name, format!("no receipt: {error}"))),
            };
            receipt.tell(told);
        }));
        Ok(())
    }

    /// The partition of `topic` (looked up already) that a message with `key` goes to, as
    /// the broker's other publishes pick it: its name and index (`-1` for a topic that is not
    /// partitioned).
    fn partition_for(&self, topic: &str, key: Option<&str>) -> Option<(String, i64)> {
        let mut routes = self.lock_routes();
        let route = routes.get_mut(topic)?;
        let index = match route.partitions {
            0 => 0,
            partitions => {
                choose_partition(self.hashing, key, partitions, &mut route.round_robin) as usize
            }
        };
        let partition = if route.partitions == 0 {
            -1
        } else {
            index as i64
        };
        Some((route.names[index].clone(), partition))
    }

    /// The producer of transactional sends to partition `name` for messages of `kind`,
    /// opened on first need.
    async fn txn_producer(
        &self,
        name: &str,
        kind: &Kind,
    ) -> Result<TxnProducer<Exe>, PublishError> {
        let find = |kept: &[(String, Kind, TxnProducer<Exe>)]| {
            (kept.iter())
                .find(|(n, k, _)| n == name && k == kind)
                .map(|(_, _, producer)| producer.clone())
        };
        if let Some(found) = find(&self.txn_producers.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(found);
        }
        let producer = self.build_producer(name.to_owned(), kind.clone()).await?;
        let mut kept = self.txn_producers.lock().unwrap_or_else(|e| e.into_inner());
        // Another send may have opened one meanwhile: that one is used, this one dropped.
        if let Some(found) = find(&kept) {
            return Ok(found);
        }
        let producer = Arc::new(futures::lock::Mutex::new(producer));
        kept.push((name.to_owned(), kind.clone(), producer.clone()));
        Ok(producer)
    }
}
