//! Publishing in a transaction (a transactional registration's handler, and the copy the
//! machine orders for it): each message an entry of its own, through producers kept for
//! transactional sends, so that nothing outside the transaction shares its entry. The message
//! carries the transaction's id, and the producer registers its partition with the
//! transaction before the first send to it (pulsar-rs, `patches/README.md` section 18).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::channel::oneshot;
use pulsar::message::proto::CommandSendReceipt;
use pulsar::{Executor, Producer, Transaction};
use ruststream::message::Message;
use ruststream::publish::{Publish, Publishing, Receipt};
use ruststream::{MessageId, PublishError};
use ruststream_pulsar_model::choose_partition;

use super::{delayed_message, item, refused, Kind, Publisher};

/// A producer kept for the transactional sends to one partition, of one kind of message.
pub(super) type TxnProducer<Exe> = Arc<Turns<Exe>>;

/// The producer of [`TxnProducer`], opened by the first send that needs it, and the sends
/// that take turns with it, first come first served.
///
/// A send holds its turn while pulsar-rs registers the partition with the transaction's
/// coordinator, a round trip: with a lock that lets the sends that ask last go first (as
/// `futures::lock::Mutex` does), a stream of new transactions kept the first ones waiting past
/// their transactions' timeouts, and they were aborted. One turn at a time also opens the
/// producer once, where every send that came before it was open used to open one of its own.
pub(super) struct Turns<Exe: Executor> {
    /// Only the send whose turn it is locks it.
    producer: futures::lock::Mutex<Option<Producer<Exe>>>,
    queue: Mutex<Queue>,
}

/// Whose turn it is.
#[derive(Default)]
struct Queue {
    /// A send has its turn.
    taken: bool,
    /// The sends waiting for theirs, in the order they asked.
    waiting: VecDeque<oneshot::Sender<()>>,
}

impl<Exe: Executor> Turns<Exe> {
    fn new() -> Self {
        Turns {
            producer: futures::lock::Mutex::new(None),
            queue: Mutex::new(Queue::default()),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for this send's turn (the producer is its own until the turn is dropped).
    async fn take(&self) -> Turn<'_, Exe> {
        let answer = {
            let mut queue = self.queue();
            if queue.taken {
                let (tx, rx) = oneshot::channel();
                queue.waiting.push_back(tx);
                Some(rx)
            } else {
                queue.taken = true;
                None
            }
        };
        if let Some(answer) = answer {
            let mut waiting = Waiting {
                turns: self,
                answer: Some(answer),
            };
            // `pass` answers every waiting send it pops whose receiver is still there.
            let _ = waiting.answer.as_mut().expect("set above").await;
            // The turn is this send's: the `Turn` below passes it on.
            waiting.answer = None;
        }
        let mut turn = Turn {
            turns: self,
            producer: None,
        };
        turn.producer = Some(self.producer.lock().await);
        turn
    }

    /// The turn ended: the next waiting send's, if there is one.
    fn pass(&self) {
        let mut queue = self.queue();
        while let Some(next) = queue.waiting.pop_front() {
            // Refused where that send gave up waiting.
            if next.send(()).is_ok() {
                return;
            }
        }
        queue.taken = false;
    }
}

/// A send's turn with a [`Turns`]'s producer: passed on when dropped.
struct Turn<'a, Exe: Executor> {
    turns: &'a Turns<Exe>,
    producer: Option<futures::lock::MutexGuard<'a, Option<Producer<Exe>>>>,
}

impl<Exe: Executor> Turn<'_, Exe> {
    /// The producer, opened with `open` if no send opened it yet (one that failed leaves it
    /// to the next turn).
    async fn producer(
        &mut self,
        open: impl FnOnce() -> super::outlet::Open<Exe>,
    ) -> Result<&mut Producer<Exe>, PublishError> {
        let slot = self.producer.as_mut().expect("held until the turn ends");
        if slot.is_none() {
            **slot = Some(open().await?);
        }
        Ok(slot.as_mut().expect("opened above"))
    }
}

impl<Exe: Executor> Drop for Turn<'_, Exe> {
    fn drop(&mut self) {
        self.producer = None;
        self.turns.pass();
    }
}

/// A send waiting for its turn: one that gives up waiting after its turn came passes it on.
struct Waiting<'a, Exe: Executor> {
    turns: &'a Turns<Exe>,
    answer: Option<oneshot::Receiver<()>>,
}

impl<Exe: Executor> Drop for Waiting<'_, Exe> {
    fn drop(&mut self) {
        if let Some(mut answer) = self.answer.take() {
            // Closed first: `pass` either answered before (the turn is this one's) or is refused.
            answer.close();
            if let Ok(Some(())) = answer.try_recv() {
                self.turns.pass();
            }
        }
    }
}

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
        let turns = self.txn_producer(&name, &kind);
        let mut turn = turns.take().await;
        let producer = match turn
            .producer(|| self.build_producer(name.clone(), kind.clone()))
            .await
        {
            Ok(producer) => producer,
            Err(error) => return Err(refused(receipt, error)),
        };
        let delayed = message.deliver_after.is_some() || message.deliver_at.is_some();
        let (plain, receipt) = match delayed {
            true => delayed_message(message, receipt),
            false => item(message, receipt).into_plain(),
        };
        let sending = producer.send_non_blocking_in(plain, txn).await;
        drop(turn);
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

    /// The producer of transactional sends to partition `name` for messages of `kind`
    /// (opened by the first send that takes its turn with it).
    fn txn_producer(&self, name: &str, kind: &Kind) -> TxnProducer<Exe> {
        let mut kept = self.txn_producers.lock().unwrap_or_else(|e| e.into_inner());
        let found = (kept.iter())
            .find(|(n, k, _)| n == name && k == kind)
            .map(|(_, _, producer)| producer.clone());
        found.unwrap_or_else(|| {
            let producer = Arc::new(Turns::new());
            kept.push((name.to_owned(), kind.clone(), producer.clone()));
            producer
        })
    }
}
