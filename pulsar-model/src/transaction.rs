//! Transactions (Pulsar's PIP-31): messages published and acknowledged together, visible and
//! settled only if the transaction commits, as Apache Pulsar 4.0's broker runs them.
//!
//! ```
//! use std::time::Duration;
//! use ruststream::{Instant, SubscriptionType};
//! use ruststream_pulsar_model::{
//!     Cluster, ConsumerOptions, InitialPosition, OutgoingMessage, TopicName, TransactionState,
//! };
//!
//! let mut cluster = Cluster::new();
//! let now = Instant::ZERO;
//! let orders: TopicName = "orders".parse()?;
//! let invoices: TopicName = "invoices".parse()?;
//! let options = ConsumerOptions {
//!     initial_position: InitialPosition::Earliest,
//!     ..ConsumerOptions::default()
//! };
//! let shared = SubscriptionType::Shared;
//! let audit = cluster.subscribe(&invoices, "audit", shared, options.clone(), now)?;
//! cluster.flow(audit, 10, now)?;
//! let billing = cluster.subscribe(&orders, "billing", shared, options, now)?;
//! cluster.flow(billing, 10, now)?;
//! cluster.publish(&orders, OutgoingMessage::new("order #1"), now)?;
//!
//! // Consume, produce and acknowledge in one transaction.
//! let order = cluster.receive(billing, now).expect("delivered");
//! let txn = cluster.new_transaction(Duration::from_secs(30), now);
//! cluster.publish_in(txn, &invoices, OutgoingMessage::new("invoice #1"), now)?;
//! cluster.ack_in(txn, billing, &order.message_id, now)?;
//! // Nothing of it shows before the commit: the invoice waits, the order is still owed.
//! assert_eq!(cluster.receive(audit, now), None);
//! assert_eq!(cluster.backlog(&orders, "billing"), Some(1));
//!
//! cluster.commit(txn, now)?;
//! assert_eq!(cluster.transaction_state(txn), Some(TransactionState::Committed));
//! assert_eq!(cluster.receive(audit, now).expect("committed").payload(), b"invoice #1");
//! assert_eq!(cluster.backlog(&orders, "billing"), Some(0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Where each behaviour comes from (apache/pulsar, `pulsar-broker` and
//! `pulsar-transaction/coordinator`, unless said otherwise):
//!
//! **The coordinator** (`TransactionMetadataStoreService`, `MLTransactionMetadataStore`).
//!
//! - [`Cluster::new_transaction`] opens a transaction with a timeout and names it by a
//!   [`TxnId`]: the coordinator's id and the next sequence number of that coordinator
//!   (`newTransaction`, `MLTransactionSequenceIdGenerator`). The model has one coordinator,
//!   0, and numbers from 0. The timeout travels in milliseconds (`CommandNewTxn.txn_ttl_seconds`
//!   is read as milliseconds, whatever its name), so it is truncated to whole milliseconds.
//! - The coordinator aborts a transaction when its timeout passes
//!   (`TransactionTimeoutTrackerImpl`). Its task runs on the broker's shared transaction timer
//!   (`PulsarService.transactionTimer`, a Netty `HashedWheelTimer` made with the default tick
//!   of 100 ms, handed to `TransactionTimeoutTrackerFactoryImpl` by
//!   `TransactionMetadataStoreService`): scheduled `timeout` after the transaction opened, it
//!   fires at the first tick strictly after that instant (the wheel files a timeout under
//!   `⌊deadline / tick⌋` and expires it when it wakes at the end of that tick), and aborts
//!   every transaction whose `openTimestamp + timeout < clock.millis()`. So a transaction is
//!   still open at its timeout and up to [`TRANSACTION_TIMER_TICK`] after it. The model counts
//!   the ticks from its clock's origin, as if the broker's timer had started there, and aborts
//!   the transaction at the first tick strictly after `opened + timeout`
//!   ([`Cluster::next_deadline`] says when, [`Cluster::handle_timeouts`] does it). A timeout
//!   under one millisecond is aborted at once (`addTransaction`: `timeout < tickTimeMillis`,
//!   1 ms).
//! - Ending (`endTransaction`): an open transaction becomes COMMITTING or ABORTING, every
//!   subscription it acknowledged on and every topic it published to end it, then it is
//!   COMMITTED or ABORTED and the coordinator forgets it (`updateTxnStatus` removes it from
//!   `txnMetaMap`). Every later call naming it, a second commit or abort included, is then
//!   answered `TransactionNotFound`, as is a commit after the coordinator aborted it for its
//!   timeout: [`ModelError::TransactionNotOpen`] (naming what became of it). The model ends a
//!   transaction within the call, so the COMMITTING and ABORTING states are never seen.
//!   [`Cluster::transaction_state`] tells what became of an ended transaction while the
//!   cluster keeps everything ([`Retention::KeepAll`](crate::Retention::KeepAll)); a cluster
//!   that frees what was acknowledged forgets ended transactions as the broker does, and calls
//!   naming one are answered [`ModelError::UnknownTransaction`].
//! - The coordinator knows the topics a transaction published to and the subscriptions it
//!   acknowledged on (`TxnMeta.producedPartitions`, `ackedPartitions`), not consumers: a
//!   consumer that closes, or whose connection is lost, with a transaction open leaves it
//!   open, its acknowledgements pending, until it is committed, aborted, or times out.
//!
//! **Publishing** ([`Cluster::publish_in`], [`Cluster::publish_batch_in`]). The client first
//! registers the topic with the coordinator (`addProducedPartitionToTxn`), which refuses a
//! transaction it does not know (`TransactionNotFound`) or that is not open
//! (`TxnMetaImpl.addProducedPartitions`: `InvalidTxnStatus`). The message is then stored at
//! once at the topic's next position, and the topic's transaction buffer holds back what
//! follows it (see `transaction_buffer.rs`, after `TopicTransactionBuffer`): subscriptions read
//! only up to the first message of the oldest transaction still open on the topic, so a plain
//! message published after it waits too, and so does a message of a transaction committed
//! meanwhile. A commit or an abort appends a marker entry to each topic the transaction
//! published to, which takes an entry id. Messages of an aborted transaction are never
//! delivered: the broker keeps them in its ledger and its dispatchers acknowledge them,
//! unsent, as they read them (`AbstractBaseDispatcher.filterEntriesForConsumer`:
//! `isTxnAborted`, `isTxnMarker`), as they do the markers. So they count in a subscription's
//! backlog until a dispatcher reads them, which happens as soon as a consumer has a permit.
//! The model drops an aborted transaction's messages from the topic itself, so that
//! [`Cluster::topic_messages`] never lists them; it lists committed ones in their places.
//! A partitioned topic's partitions are topics of their own, each with its own buffer: a
//! transaction open on one partition holds back nothing on the others.
//!
//! **Acknowledging** ([`Cluster::ack_in`]). The client is modelled on the Java client, as
//! pulsar-rs has no transactions: `ConsumerImpl.doTransactionAcknowledgeForResponse` sends the
//! acknowledgement with the transaction at once, for a message of a batch with an ack set
//! marking that message alone, and removes the message from the ack-timeout tracker
//! (`unAckedMessageTracker.remove`), so its ack timeout no longer runs. On the broker
//! (`Consumer.individualAckWithTransaction`, `PendingAckHandleImpl`):
//!
//! - The acknowledgement is pending in the subscription's pending-ack handle until the
//!   transaction ends. The message is no longer among its consumer's pending acks (for a
//!   message of a batch, once every message of the entry is pending), so neither a negative
//!   acknowledgement, nor an ack timeout, nor its consumer closing brings it back. A rewind of
//!   the cursor does: it rereads every entry the cursor has not deleted, so on Exclusive and
//!   Failover any redelivery request, and on every type the first consumer of a subscription,
//!   receive it again (the broker does not filter pending acknowledgements out of a read).
//! - A message pending in a transaction, this one included, or already acknowledged, cannot
//!   be acknowledged in a transaction: [`ModelError::TransactionConflict`]. A message of a
//!   batch is pending at its batch index, so two transactions may acknowledge two messages of
//!   one batch.
//! - A plain acknowledgement ([`Cluster::ack`]) of a message pending in a transaction is not
//!   checked against the pending acknowledgements (`individualAckNormal`): it acknowledges the
//!   message for good, the transaction's commit then finds nothing left to do for it and its
//!   abort redelivers nothing (`addMessageToReplay` skips deleted entries).
//! - On commit, the subscription acknowledges what the transaction acknowledged
//!   (`individualAckCommitCommon` → `PersistentSubscription.acknowledgeMessage`). A message of
//!   a batch is acknowledged alone only on a cluster made
//!   [`with_batch_index_acknowledgement`](Cluster::with_batch_index_acknowledgement) (the
//!   broker's `acknowledgmentAtBatchIndexLevelEnabled`, which Pulsar's documentation asks for
//!   to acknowledge batched messages in transactions); without it the cursor ignores an
//!   acknowledgement with an ack set (`ManagedCursorImpl.asyncDelete`), so the entry stays
//!   unacknowledged, and its messages stay pending for good in the handle: a later
//!   transaction acknowledging them conflicts. The commit also forgets the entry's redelivery
//!   count, whole or not (`getRedeliveryTracker().removeBatch`).
//! - On abort, the pending acknowledgements are dropped and the messages redelivered at once
//!   (`internalAbortTxn` → `redeliverUnacknowledgedMessages(consumer, positions)`): on Shared
//!   and KeyShared each entry goes back to the subscription with its redelivery count
//!   increased by one (`addMessageToReplay`, `incrementAndGetRedeliveryCount`), to whichever
//!   consumer can take it; on Exclusive and Failover the cursor is rewound for the active
//!   consumer (`PersistentSubscription.endTxn` passes it), count 0.
//!
//! Cumulative acknowledgement in a transaction is not modelled.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ruststream::Instant;

use crate::deadlines::Deadlines;
use crate::pending_ack::Acked;
use crate::persistent::require_persistent;
use crate::topic::Topic;
pub use crate::txn::{Conflict, TransactionState, TxnId};
use crate::{Cluster, ConsumerId, MessageId, ModelError, OutgoingMessage, TopicName};

/// Everything the coordinator keeps of one transaction.
#[derive(Debug)]
struct Txn {
    state: TransactionState,
    timeout: Duration,
    /// When it was committed or aborted.
    ended_at: Option<Instant>,
    /// The topics it published to, in the order it first did (`producedPartitions`).
    produced: Vec<TopicName>,
    /// The subscriptions it acknowledged on (`ackedPartitions`).
    acked: Vec<(TopicName, Arc<str>)>,
}

/// What an ended transaction leaves to be ended on topics and subscriptions.
#[derive(Debug)]
pub(crate) struct Ended {
    produced: Vec<TopicName>,
    acked: Vec<(TopicName, Arc<str>)>,
}

/// The transaction coordinator (see the [module](self)): its transactions and their timeouts.
#[derive(Debug, Default)]
pub(crate) struct Coordinator {
    next_sequence: u64,
    /// How many transactions are open: while none, no timeout can fire.
    open: usize,
    txns: BTreeMap<TxnId, Txn>,
    /// When the coordinator aborts each open transaction.
    timeouts: Deadlines<TxnId>,
}

/// The tick of the broker's transaction timer (`pulsar-transaction-timer`, Netty's default
/// `HashedWheelTimer` tick): the coordinator aborts a transaction at the first tick after its
/// timeout (see the [module](self)).
pub const TRANSACTION_TIMER_TICK: Duration = Duration::from_millis(100);

/// The first tick of the transaction timer strictly after `deadline`, counted from the clock's
/// origin.
fn tick_after(deadline: Instant) -> Instant {
    let tick = TRANSACTION_TIMER_TICK.as_nanos() as u64;
    let ticks = deadline.as_nanos() / tick + 1;
    Instant::from_nanos(ticks.saturating_mul(tick))
}

impl Coordinator {
    /// Open a transaction at `now` that times out after `timeout`; one ended at once is not
    /// kept if `forget`.
    fn open(&mut self, timeout: Duration, now: Instant, forget: bool) -> TxnId {
        let txn = TxnId::new(0, self.next_sequence);
        self.next_sequence += 1;
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let mut record = Txn {
            state: TransactionState::Open,
            timeout,
            ended_at: None,
            produced: Vec::new(),
            acked: Vec::new(),
        };
        if timeout_ms == 0 {
            // `addTransaction`: shorter than `tickTimeMillis`, ended at once.
            record.state = TransactionState::TimedOut;
            record.ended_at = Some(now);
            if forget {
                return txn;
            }
        } else {
            let deadline = now + Duration::from_millis(timeout_ms);
            self.timeouts.insert(txn, tick_after(deadline));
            self.open += 1;
        }
        self.txns.insert(txn, record);
        txn
    }

    /// Whether any transaction is open.
    #[inline]
    pub(crate) fn has_open(&self) -> bool {
        self.open > 0
    }

    /// When the coordinator aborts the next transaction for its timeout.
    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.timeouts.earliest()
    }

    /// The open transactions the coordinator aborts at `tick`, earliest first.
    pub(crate) fn take_timed_out(&mut self, tick: Instant) -> Vec<TxnId> {
        if self.open == 0 {
            return Vec::new();
        }
        self.timeouts.take_due(tick, true)
    }

    /// What became of `txn`, if the coordinator knows it.
    fn state(&self, txn: TxnId) -> Option<TransactionState> {
        self.txns.get(&txn).map(|t| t.state)
    }

    /// `txn` is open, or the error that says what became of it, for `operation`.
    fn require_open(&self, txn: TxnId, operation: &'static str) -> Result<(), ModelError> {
        match self.txns.get(&txn) {
            None => Err(ModelError::UnknownTransaction { txn }),
            Some(record) if record.state == TransactionState::Open => Ok(()),
            Some(record) => Err(ModelError::TransactionNotOpen {
                txn,
                operation,
                state: record.state,
                ended_at: record.ended_at.unwrap_or(Instant::ZERO),
                timeout: record.timeout,
            }),
        }
    }

    /// `txn` published to `topic` (`addProducedPartitionToTxn`).
    fn produced(&mut self, txn: TxnId, topic: &TopicName) {
        if let Some(record) = self.txns.get_mut(&txn) {
            if !record.produced.contains(topic) {
                record.produced.push(topic.clone());
            }
        }
    }

    /// `txn` acknowledged on `subscription` of `topic` (`addAckedPartitionToTxn`).
    fn acked(&mut self, txn: TxnId, topic: &TopicName, subscription: &Arc<str>) {
        if let Some(record) = self.txns.get_mut(&txn) {
            if !record
                .acked
                .iter()
                .any(|(t, s)| t == topic && s == subscription)
            {
                record.acked.push((topic.clone(), Arc::clone(subscription)));
            }
        }
    }

    /// End open transaction `txn` at `now` as `state`, forgetting it if `forget`; what it
    /// leaves to end on topics and subscriptions.
    fn end(
        &mut self,
        txn: TxnId,
        state: TransactionState,
        now: Instant,
        operation: &'static str,
        forget: bool,
    ) -> Result<Ended, ModelError> {
        self.require_open(txn, operation)?;
        self.timeouts.remove(txn);
        self.open -= 1;
        let record = if forget {
            self.txns.remove(&txn).expect("checked open above")
        } else {
            let record = self.txns.get_mut(&txn).expect("checked open above");
            record.state = state;
            record.ended_at = Some(now);
            Txn {
                state,
                timeout: record.timeout,
                ended_at: Some(now),
                produced: std::mem::take(&mut record.produced),
                acked: std::mem::take(&mut record.acked),
            }
        };
        Ok(Ended {
            produced: record.produced,
            acked: record.acked,
        })
    }
}

impl Cluster {
    /// Open a transaction that the coordinator aborts if it is not ended within `timeout`
    /// (Pulsar's `newTransaction().withTransactionTimeout(timeout)`), and name it.
    ///
    /// The coordinator aborts it at the first tick of its timer ([`TRANSACTION_TIMER_TICK`])
    /// strictly after `now + timeout`, the timeout counted in whole milliseconds (see the
    /// [module](crate::transaction)); a timeout under one millisecond aborts it at once.
    pub fn new_transaction(&mut self, timeout: Duration, now: Instant) -> TxnId {
        self.handle_timeouts(now);
        let txn = self.coordinator.open(timeout, now, self.retention.frees());
        self.next_deadline.forget();
        txn
    }

    /// What became of `txn`: `None` if this cluster never opened it, or opened and forgot it
    /// (a cluster that frees acknowledged messages forgets ended transactions, as the broker's
    /// coordinator does).
    pub fn transaction_state(&self, txn: TxnId) -> Option<TransactionState> {
        self.coordinator.state(txn)
    }

    /// Publish `message` to `topic` in transaction `txn`: stored at once, at the topic's next
    /// position, and readable only once `txn` commits; while `txn` is open, the messages
    /// published to `topic` after it wait too (see the [module](crate::transaction)).
    ///
    /// Refused as [`Cluster::publish`] refuses a message, and when `txn` is not open:
    /// [`ModelError::UnknownTransaction`], [`ModelError::TransactionNotOpen`] (Pulsar's
    /// `TransactionNotFound` and `InvalidTxnStatus`), a timeout due by `now` included.
    pub fn publish_in(
        &mut self,
        txn: TxnId,
        topic: &TopicName,
        message: OutgoingMessage,
        now: Instant,
    ) -> Result<MessageId, ModelError> {
        let ids = self.publish_in_transaction(txn, topic, vec![message], false, now)?;
        Ok(ids[0])
    }

    /// Publish `messages` to `topic` as one batch in transaction `txn`: one entry, as
    /// [`Cluster::publish_batch`] stores it, held back as [`Cluster::publish_in`] says. An
    /// empty batch publishes nothing (a transaction that is not open is refused still).
    pub fn publish_batch_in(
        &mut self,
        txn: TxnId,
        topic: &TopicName,
        messages: Vec<OutgoingMessage>,
        now: Instant,
    ) -> Result<Vec<MessageId>, ModelError> {
        self.publish_in_transaction(txn, topic, messages, true, now)
    }

    fn publish_in_transaction(
        &mut self,
        txn: TxnId,
        topic: &TopicName,
        mut messages: Vec<OutgoingMessage>,
        batch: bool,
        now: Instant,
    ) -> Result<Vec<MessageId>, ModelError> {
        self.handle_timeouts(now);
        self.coordinator.require_open(txn, "publish in")?;
        require_persistent(topic)?;
        self.require_not_partitioned(topic)?;
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        // One producer writes a batch, with one schema: the first message's.
        if let Some(schema) = messages[0].schema.clone() {
            self.declare_schema(topic, &schema, true, now)?;
        }
        for message in &mut messages {
            message.schema = None;
        }
        self.delayed_published |= messages.iter().any(|m| m.deliver_at.is_some());
        let retention = self.retention;
        let state = self.topic_mut(topic, now);
        let ids = match messages.pop() {
            Some(message) if !batch => vec![state.append(message, now)],
            Some(last) => {
                messages.push(last);
                state.append_batch(messages, now)
            }
            None => Vec::new(),
        };
        if let Some(first) = ids.first() {
            state.txn_buffer.stored(txn, first.entry_id);
        }
        state.retain_after_publish(retention);
        self.coordinator.produced(txn, topic);
        self.pump(now);
        Ok(ids)
    }

    /// Acknowledge `message` through `consumer` in transaction `txn`: pending until `txn`
    /// ends, acknowledged for good if it commits, delivered again if it aborts (see the
    /// [module](crate::transaction)).
    ///
    /// For a message of a batch, the acknowledgement is of that message alone, at its batch
    /// index (the Java client's ack set), whatever the cluster's
    /// [batch-index acknowledgement](Cluster::with_batch_index_acknowledgement); an id without
    /// a batch index acknowledges its whole entry, so a caller standing for a client that
    /// sends no ack set in a transaction passes [`MessageId::entry`]. Its ack timeout stops
    /// now, as the Java client's does when it sends the acknowledgement. An id that names no
    /// message of the consumer's topic changes nothing.
    ///
    /// Refused when `consumer` is unknown ([`ModelError::UnknownConsumer`]), when `txn` is
    /// not open ([`ModelError::UnknownTransaction`], [`ModelError::TransactionNotOpen`]), and
    /// when the message is pending in a transaction, `txn` included, or already acknowledged
    /// ([`ModelError::TransactionConflict`]).
    pub fn ack_in(
        &mut self,
        txn: TxnId,
        consumer: ConsumerId,
        message: &MessageId,
        now: Instant,
    ) -> Result<(), ModelError> {
        self.handle_timeouts(now);
        let Some(state) = self.consumers.get_mut(&consumer) else {
            return Err(ModelError::UnknownConsumer { consumer });
        };
        self.coordinator.require_open(txn, "acknowledge in")?;
        // The client: `doTransactionAcknowledgeForResponse` → `unAckedMessageTracker.remove`.
        if let Some(tracker) = state.unacked.as_mut() {
            tracker.acknowledged(message);
        }
        let topic = state.topic.clone();
        let subscription = Arc::clone(&state.subscription);
        let outcome = self.acknowledge_pending(txn, &topic, &subscription, message);
        if outcome.is_ok() {
            self.coordinator.acked(txn, &topic, &subscription);
        }
        self.pump(now);
        outcome
    }

    /// The broker's side of [`Cluster::ack_in`]: `Consumer.individualAckWithTransaction`.
    fn acknowledge_pending(
        &mut self,
        txn: TxnId,
        topic: &TopicName,
        subscription: &Arc<str>,
        message: &MessageId,
    ) -> Result<(), ModelError> {
        let Some(state) = self.topics.get_mut(topic) else {
            return Ok(());
        };
        let Some(entry) = state.entry_of(message) else {
            return Ok(());
        };
        let Topic {
            store,
            subscriptions,
            ..
        } = state;
        let Some(sub) = subscriptions.get_mut(&**subscription) else {
            return Ok(());
        };
        let settled = sub.is_settled(entry);
        // A trimmed entry is settled: only an unsettled one is looked at.
        let batch_size = if settled {
            None
        } else {
            store.entry(entry).first().and_then(|m| m.batch_size)
        };
        let index = match (message.batch_index, batch_size) {
            (Some(index), Some(size)) if index >= 0 && (index as u32) < size => {
                Some((index as u32, size))
            }
            _ => None,
        };
        let individual = !sub.single_active();
        if index.is_none() && individual {
            // `checkCanRemovePendingAcksAndHandle`: an acknowledgement without an ack set
            // takes the entry out of its consumer's pending acks before the pending-ack handle
            // answers, accepted or not.
            for id in &sub.consumers {
                if let Some(c) = self.consumers.get_mut(id) {
                    c.pending_acks.remove(&entry);
                }
            }
        }
        let outcome =
            sub.txn_acks
                .acknowledge(txn, entry, index, settled, sub.batch_deleted.get(&entry));
        match outcome {
            Ok(all_pending) => {
                if index.is_some() && all_pending && individual {
                    for id in &sub.consumers {
                        if let Some(c) = self.consumers.get_mut(id) {
                            c.pending_acks.remove(&entry);
                        }
                    }
                }
                Ok(())
            }
            Err(cause) => Err(ModelError::TransactionConflict {
                txn,
                topic: topic.clone(),
                subscription: subscription.to_string(),
                message: *message,
                cause,
            }),
        }
    }

    /// Commit `txn`: its messages become readable in their places, what it acknowledged is
    /// acknowledged for good (see the [module](crate::transaction)).
    ///
    /// Refused when `txn` is not open, as the broker refuses it: one the coordinator aborted
    /// for its timeout by `now`, or already committed or aborted
    /// ([`ModelError::TransactionNotOpen`], Pulsar's `TransactionNotFound`), or unknown
    /// ([`ModelError::UnknownTransaction`]).
    pub fn commit(&mut self, txn: TxnId, now: Instant) -> Result<(), ModelError> {
        self.handle_timeouts(now);
        let forget = self.retention.frees();
        let ended =
            self.coordinator
                .end(txn, TransactionState::Committed, now, "commit", forget)?;
        for (topic, subscription) in &ended.acked {
            self.commit_acknowledgements(txn, topic, subscription);
        }
        for topic in &ended.produced {
            if let Some(state) = self.topics.get_mut(topic) {
                // `TopicTransactionBuffer.commitTxn`: the marker, then no longer ongoing.
                state.store.append_marker();
                state.txn_buffer.ended(txn);
            }
        }
        self.pump(now);
        Ok(())
    }

    /// `PendingAckHandleImpl.internalCommitTxn` on one subscription.
    fn commit_acknowledgements(&mut self, txn: TxnId, topic: &TopicName, subscription: &str) {
        let batch_index_acks = self.batch_index_acks;
        let retention = self.retention;
        let Some(state) = self.topics.get_mut(topic) else {
            return;
        };
        let Some(sub) = state.subscriptions.get_mut(subscription) else {
            return;
        };
        let mut released = Vec::new();
        for (entry, acked) in sub.txn_acks.commit(txn) {
            match acked {
                Acked::Whole => {
                    if sub.acknowledge(entry, &mut self.consumers) {
                        released.push(entry);
                    }
                }
                Acked::Indexes(indexes) => {
                    // `acknowledgeMessage` forgets the entry's redelivery count either way.
                    sub.redelivery_counts.remove(&entry);
                    if !batch_index_acks || sub.is_settled(entry) {
                        continue;
                    }
                    let size = state.store.entry(entry).len();
                    let deleted = sub.batch_deleted.entry(entry).or_default();
                    deleted.extend(indexes);
                    if deleted.len() >= size {
                        sub.batch_deleted.remove(&entry);
                        if sub.acknowledge(entry, &mut self.consumers) {
                            released.push(entry);
                        }
                    }
                }
            }
        }
        for entry in released {
            state.released(entry, retention);
        }
    }

    /// Abort `txn`: its messages will never be delivered, the messages it acknowledged are
    /// delivered again at once (see the [module](crate::transaction)).
    ///
    /// Refused when `txn` is not open, as the broker refuses it: already committed or aborted,
    /// the coordinator's own abort at the timeout included ([`ModelError::TransactionNotOpen`],
    /// Pulsar's `TransactionNotFound`), or unknown ([`ModelError::UnknownTransaction`]).
    pub fn abort(&mut self, txn: TxnId, now: Instant) -> Result<(), ModelError> {
        self.handle_timeouts(now);
        self.end_aborted(txn, TransactionState::Aborted, now)?;
        self.pump(now);
        Ok(())
    }

    /// The coordinator aborts `txn` at `tick`, its timeout passed (the caller dispatches).
    pub(crate) fn time_out(&mut self, txn: TxnId, tick: Instant) {
        // Only open transactions have a timeout waiting, so this is not refused.
        let _ = self.end_aborted(txn, TransactionState::TimedOut, tick);
    }

    /// End `txn` as aborted (`state`) at `now` on every subscription and topic it touched.
    fn end_aborted(
        &mut self,
        txn: TxnId,
        state: TransactionState,
        now: Instant,
    ) -> Result<(), ModelError> {
        let forget = self.retention.frees();
        let ended = self.coordinator.end(txn, state, now, "abort", forget)?;
        for (topic, subscription) in &ended.acked {
            let Some(sub) = self
                .topics
                .get_mut(topic)
                .and_then(|t| t.subscriptions.get_mut(&**subscription))
            else {
                continue;
            };
            let Some(entries) = sub.txn_acks.abort(txn) else {
                continue;
            };
            if sub.single_active() {
                // `PersistentDispatcherSingleActiveConsumer.redeliverUnacknowledgedMessages`:
                // no single message goes back to a single consumer; the cursor rewinds.
                sub.rewind();
            } else {
                // `PersistentDispatcherMultipleConsumers.redeliverUnacknowledgedMessages`.
                for entry in entries {
                    if !sub.is_settled(entry) {
                        sub.replay.insert(entry);
                        *sub.redelivery_counts.entry(entry).or_insert(0) += 1;
                    }
                }
            }
        }
        for topic in &ended.produced {
            if let Some(state) = self.topics.get_mut(topic) {
                // `TopicTransactionBuffer.abortTxn`: the marker, then no longer ongoing; its
                // messages are never read (see `Store::drop_messages`).
                state.store.append_marker();
                for entry in state.txn_buffer.ended(txn) {
                    state.store.drop_messages(entry);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
