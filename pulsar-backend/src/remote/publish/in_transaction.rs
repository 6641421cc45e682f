//! Publishing in a transaction (a transactional registration's handler, and the copy the
//! machine orders for it): the transaction's messages batched into entries of their own,
//! through producers kept for transactional sends, so that nothing outside the transaction
//! shares its entry. The message
//! carries the transaction's id, and the producer registers its partition with the
//! transaction before the first send to it (pulsar-rs, `patches/README.md` section 18).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::channel::oneshot;
use pulsar::message::proto::CommandSendReceipt;
use pulsar::{Executor, Producer, Transaction};
use ruststream::message::Message;
use ruststream::publish::{Publish, Publishing, Receipt};
use ruststream::PublishError;
use ruststream_pulsar_model::choose_partition;

use super::batch::{Batch, Receipts};
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
///
/// Messages are batched per partition (and per key, where the batching is by key) as the
/// broker's other publishes are, within the transaction: an entry fills until it is full, or
/// until a sender waits for its message's id (`publish`, or the copy the machine orders),
/// and whatever is left is sent when the transaction commits ([`InTransaction::flush`]).
/// The broker stores a topic's transactional entries one at a time, so an entry of many
/// messages is what lets a transaction of many messages go at the pace of the others.
/// Nothing waits for a message's receipt but the commit, which pulsar-rs makes wait for
/// every send of the transaction and abort if one failed.
pub(crate) struct InTransaction<Exe: Executor> {
    publisher: Arc<Publisher<Exe>>,
    txn: Transaction<Exe>,
    /// The entries being filled.
    filling: Mutex<Vec<Filling>>,
    /// Why a send in the transaction failed, if one did: its commit then fails.
    failed: Mutex<Option<PublishError>>,
}

/// One entry being filled in a transaction.
struct Filling {
    name: String,
    partition: i64,
    kind: Kind,
    /// The messages' key, where the batching is by key.
    key: Option<String>,
    batch: Batch,
}

impl<Exe: Executor> InTransaction<Exe> {
    /// Publish through `publisher`'s routing, in `txn`.
    pub(crate) fn new(publisher: Arc<Publisher<Exe>>, txn: Transaction<Exe>) -> Self {
        InTransaction {
            publisher,
            txn,
            filling: Mutex::new(Vec::new()),
            failed: Mutex::new(None),
        }
    }

    /// Send every entry still being filled, before the commit; an error if a send of the
    /// transaction failed (the commit must not go ahead without it).
    pub(crate) async fn flush(&self) -> Result<(), PublishError> {
        let filled = std::mem::take(&mut *self.lock_filling());
        for filling in filled {
            let Filling {
                name,
                partition,
                kind,
                batch,
                ..
            } = filling;
            let (message, receipts) = batch.into_entry();
            let _ = self
                .send_entry(&name, partition, &kind, message, receipts)
                .await;
        }
        match &*self.failed.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn lock_filling(&self) -> std::sync::MutexGuard<'_, Vec<Filling>> {
        self.filling.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remember that a send of the transaction failed, and return the error.
    fn fail(&self, error: PublishError) -> PublishError {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.get_or_insert_with(|| error.clone());
        error
    }

    /// Send `message` in the transaction.
    async fn send_in(&self, message: Message, receipt: Receipt) -> Result<(), PublishError> {
        let publisher = &*self.publisher;
        let topic = match publisher.resolve(&message.topic) {
            Ok(topic) => topic,
            Err(error) => return Err(self.fail(refused(receipt, error))),
        };
        let topic = topic.as_str();
        if let Err(error) = publisher.look_up(topic).await {
            return Err(self.fail(refused(receipt, error)));
        }
        if crate::chunked::needs_chunks(publisher.chunk_over, &message) {
            let error = PublishError::broker(
                topic,
                format!(
                    "a message of {} bytes is over the broker's limit and would go in chunks, \
                     which ruststream does not publish in a transaction yet; make it smaller, \
                     or raise the limit (PulsarBroker::chunk_messages_over)",
                    message.payload.len()
                ),
            );
            return Err(self.fail(refused(receipt, error)));
        }
        let kind = publisher.kind_of(&message);
        let (name, partition) = publisher
            .partition_for(topic, message.key.as_deref())
            .expect("looked up above");
        let delayed = message.deliver_after.is_some() || message.deliver_at.is_some();
        if delayed || !kind.batching.is_enabled() {
            // Alone in its entry, after what was filled for its partition (delayed
            // messages are not batched, as the Java client does not batch them).
            let filled = self.take_filled(&name, &kind, None);
            for batch in filled {
                let (entry, receipts) = batch.into_entry();
                let _ = self
                    .send_entry(&name, partition, &kind, entry, receipts)
                    .await;
            }
            let (plain, receipt) = match delayed {
                true => delayed_message(message, receipt),
                false => item(message, receipt).into_plain(),
            };
            return (self.send_entry(&name, partition, &kind, plain, Receipts::plain(receipt)))
                .await;
        }
        // Someone waits for this message's id: its entry goes now.
        let waited = !receipt.is_empty();
        let key = (kind.batching.is_key_based())
            .then(|| message.key.clone())
            .flatten();
        let full = {
            let mut filling = self.lock_filling();
            let at = match (filling.iter())
                .position(|f| f.name == name && f.kind == kind && f.key == key)
            {
                Some(at) => at,
                None => {
                    filling.push(Filling {
                        name: name.clone(),
                        partition,
                        kind: kind.clone(),
                        key,
                        batch: Batch::new(false),
                    });
                    filling.len() - 1
                }
            };
            filling[at].batch.push(item(message, receipt));
            (waited || filling[at].batch.is_full(&kind.batching))
                .then(|| filling.swap_remove(at).batch)
        };
        match full {
            Some(batch) => {
                let (entry, receipts) = batch.into_entry();
                self.send_entry(&name, partition, &kind, entry, receipts)
                    .await
            }
            None => Ok(()),
        }
    }

    /// Take out what is being filled for partition `name` and `kind` (of every key, where
    /// `key` is `None`).
    fn take_filled(&self, name: &str, kind: &Kind, key: Option<&str>) -> Vec<Batch> {
        let mut filling = self.lock_filling();
        let mut taken = Vec::new();
        let mut i = 0;
        while i < filling.len() {
            let f = &filling[i];
            if f.name == name && &f.kind == kind && key.is_none_or(|k| f.key.as_deref() == Some(k))
            {
                taken.push(filling.remove(i).batch);
            } else {
                i += 1;
            }
        }
        taken
    }

    /// Send one entry in the transaction, through the producer kept for partition `name`
    /// and `kind`; its `receipts` are told the broker's answer.
    async fn send_entry(
        &self,
        name: &str,
        partition: i64,
        kind: &Kind,
        entry: pulsar::producer::Message,
        receipts: Receipts,
    ) -> Result<(), PublishError> {
        let publisher = &*self.publisher;
        let txn = &self.txn;
        let turns = publisher.txn_producer(name, kind);
        let mut turn = turns.take().await;
        let producer = match turn
            .producer(|| publisher.build_producer(name.to_owned(), kind.clone()))
            .await
        {
            Ok(producer) => producer,
            Err(error) => {
                receipts.failed(&error);
                return Err(self.fail(error));
            }
        };
        let sending = producer.send_non_blocking_in(entry, txn).await;
        drop(turn);
        let answer = match sending {
            Ok(answer) => answer,
            Err(error) => {
                let error = PublishError::broker(
                    name,
                    format!("sending in transaction {}: {error}", txn.id()),
                );
                receipts.failed(&error);
                return Err(self.fail(error));
            }
        };
        let name = name.to_owned();
        publisher.runtime.spawn(Box::pin(async move {
            match answer.await {
                Ok(CommandSendReceipt {
                    message_id: Some(id),
                    ..
                }) => receipts.stored(id.ledger_id as i64, id.entry_id as i64, partition),
                Ok(_) => receipts.failed(&PublishError::broker(
                    &name,
                    "the broker's receipt names no message id",
                )),
                Err(error) => {
                    receipts.failed(&PublishError::broker(&name, format!("no receipt: {error}")))
                }
            }
        }));
        Ok(())
    }
}

/// Completes once the message is handed over (to its entry, or to its producer); its
/// receipt is told the broker's answer later.
impl<Exe: Executor> Publish for InTransaction<Exe> {
    fn send(&self, message: Message, receipt: Receipt) -> Publishing<'_, ()> {
        Publishing::waiting(Box::pin(self.send_in(message, receipt)))
    }
}

impl<Exe: Executor> Publisher<Exe> {
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
