//! Transactions (PIP-31)
//!
//! A transaction groups messages published and messages acknowledged, on any topics, into
//! one unit that takes effect whole or not at all: consumers see the messages published in it
//! only once it commits, and its acknowledgements count only then; when it aborts (or times
//! out, which the broker turns into an abort), the messages are dropped and the acknowledged
//! messages can be received again. That makes consume-transform-produce exactly-once: the
//! outputs of a message and the acknowledgement of its input commit together.
//!
//! ```rust,no_run
//! use std::time::Duration;
//!
//! # async fn run(pulsar: pulsar::Pulsar<pulsar::TokioExecutor>,
//! #     mut producer: pulsar::Producer<pulsar::TokioExecutor>,
//! #     mut consumer: pulsar::Consumer<Vec<u8>, pulsar::TokioExecutor>,
//! #     input: pulsar::consumer::Message<Vec<u8>>) -> Result<(), pulsar::Error> {
//! let txn = pulsar.new_transaction(Duration::from_secs(60)).await?;
//! producer.send_non_blocking_in(input.payload.data.clone(), &txn).await?;
//! consumer.ack_with_txn(&input, &txn).await?;
//! txn.commit().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The broker needs `transactionCoordinatorEnabled=true`. The client connects to the
//! transaction coordinators at the first
//! [`Pulsar::new_transaction`](crate::Pulsar::new_transaction), and keeps them for the
//! client's clones.

mod coordinator;

use std::{
    collections::HashMap,
    fmt,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::channel::oneshot;

pub(crate) use self::coordinator::Coordinator;
use crate::{
    error::{ConnectionError, ConsumerError},
    executor::Executor,
    message::proto::{ServerError, TxnAction},
    producer::SendFuture,
    Error,
};

/// A transaction's id: the coordinator that opened it (`most_bits`) and its number there
/// (`least_bits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId {
    pub most_bits: u64,
    pub least_bits: u64,
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.most_bits, self.least_bits)
    }
}

/// The value of `CommandNewTxn.txn_ttl_seconds` for a transaction timeout: milliseconds, not
/// seconds. The broker hands the field to `TransactionMetadataStoreService.newTransaction` as
/// `timeoutInMills` and stores it as the transaction's `timeoutMs`; the Java client writes
/// milliseconds there too (60,000 by default).
pub(crate) fn timeout_millis(timeout: Duration) -> u64 {
    u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)
}

/// The fully qualified name of a topic (or partition), as the broker names it: the
/// coordinator keeps the names it is given and ends the transaction on each.
pub(crate) fn full_topic_name(topic: &str) -> String {
    if topic.contains("://") {
        topic.to_string()
    } else if topic.contains('/') {
        format!("persistent://{topic}")
    } else {
        format!("persistent://public/default/{topic}")
    }
}

/// An open transaction, from [`Pulsar::new_transaction`](crate::Pulsar::new_transaction).
///
/// Messages are published in it with `send_non_blocking_in` ([`Producer`](crate::Producer),
/// [`MultiTopicProducer`](crate::MultiTopicProducer)) and acknowledged in it with
/// `ack_many_with_id_in` or `ack_with_txn` ([`Consumer`](crate::Consumer)); then it is
/// committed or aborted, once. Clones share the transaction.
///
/// Every send and acknowledgement made in the transaction is tracked until the broker has
/// answered it: [`commit`](Self::commit) and [`abort`](Self::abort) wait for all of them
/// first, and a commit aborts instead if one of them failed (in any way: refused before it
/// went out, failed by the broker, or dropped by the caller before it was answered). Once the
/// commit or abort has begun, no more can be made in it.
pub struct Transaction<Exe: Executor> {
    inner: Arc<Inner<Exe>>,
}

impl<Exe: Executor> Clone for Transaction<Exe> {
    fn clone(&self) -> Self {
        Transaction {
            inner: self.inner.clone(),
        }
    }
}

impl<Exe: Executor> fmt::Debug for Transaction<Exe> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock().unwrap();
        f.debug_struct("Transaction")
            .field("id", &self.inner.id)
            .field("timeout", &self.inner.timeout)
            .field("status", &state.status)
            .field("pending", &state.pending)
            .finish()
    }
}

struct Inner<Exe: Executor> {
    id: TxnId,
    timeout: Duration,
    coordinator: Arc<Coordinator<Exe>>,
    state: Mutex<State>,
    /// the partitions published to, each registered once (`true` once the coordinator
    /// answered); the async lock makes a second send to a partition wait for the first's
    /// registration
    partitions: Mutex<HashMap<String, Registration>>,
    /// the (partition, subscription) pairs acknowledged on, likewise
    subscriptions: Mutex<HashMap<(String, String), Registration>>,
}

type Registration = Arc<futures::lock::Mutex<bool>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Open,
    /// commit asked for: no more sends or acknowledgements; a commit that failed without
    /// ending the transaction may be asked for again
    Committing,
    /// likewise for abort
    Aborting,
    Committed,
    Aborted,
    /// the coordinator no longer knows the transaction, or it is not in the state the end
    /// asked for (it timed out, or was ended elsewhere)
    Failed,
}

struct State {
    status: Status,
    /// a commit or abort is waiting for the coordinator's answer
    ending: bool,
    /// sends and acknowledgements made in the transaction and not answered yet
    pending: usize,
    /// the first of them that failed
    failure: Option<String>,
    /// told when `pending` is back to 0
    idle: Vec<oneshot::Sender<()>>,
}

impl<Exe: Executor> Transaction<Exe> {
    pub(crate) fn new(id: TxnId, timeout: Duration, coordinator: Arc<Coordinator<Exe>>) -> Self {
        Transaction {
            inner: Arc::new(Inner {
                id,
                timeout,
                coordinator,
                state: Mutex::new(State {
                    status: Status::Open,
                    ending: false,
                    pending: 0,
                    failure: None,
                    idle: Vec::new(),
                }),
                partitions: Mutex::new(HashMap::new()),
                subscriptions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// the transaction's id
    pub fn id(&self) -> TxnId {
        self.inner.id
    }

    /// the timeout it was opened with, after which the broker aborts it
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Commits the transaction: its messages become visible to consumers, its acknowledgements
    /// take effect.
    ///
    /// Waits first until every send and acknowledgement made in it was answered. If one of
    /// them failed, the transaction is aborted instead and this fails, saying why. A second
    /// commit (or an abort) after the transaction ended fails; after a commit that failed
    /// without ending it (the coordinator could not be reached in time), commit may be tried
    /// again. A transaction that timed out was aborted by the broker: its commit fails with
    /// the coordinator's `TransactionNotFound` or `InvalidTxnStatus`.
    pub async fn commit(&self) -> Result<(), Error> {
        self.begin_end(Status::Committing)?;
        self.ops_answered().await;
        let failure = self.inner.state.lock().unwrap().failure.clone();
        if let Some(failure) = failure {
            // as the Java client does, a transaction whose sends or acknowledgements did not
            // all succeed is aborted rather than committed
            let aborted = self.end(TxnAction::Abort).await;
            let outcome = match aborted {
                Ok(()) => "it was aborted".to_string(),
                Err(e) => format!("aborting it failed too: {e}"),
            };
            return Err(Error::Custom(format!(
                "transaction {} not committed: a send or acknowledgement in it failed \
                 ({failure}); {outcome}",
                self.inner.id
            )));
        }
        self.end(TxnAction::Commit).await.map_err(Error::from)
    }

    /// Aborts the transaction: its messages are dropped, the messages it acknowledged can be
    /// received again.
    ///
    /// Waits first until every send and acknowledgement made in it was answered. Fails after
    /// the transaction ended, or once its commit has begun.
    pub async fn abort(&self) -> Result<(), Error> {
        self.begin_end(Status::Aborting)?;
        self.ops_answered().await;
        self.end(TxnAction::Abort).await.map_err(Error::from)
    }

    /// Moves to committing or aborting, if the transaction is open (or a former attempt at
    /// the same failed without ending it).
    fn begin_end(&self, to: Status) -> Result<(), ConnectionError> {
        let mut state = self.inner.state.lock().unwrap();
        let allowed = match state.status {
            Status::Open => true,
            status => status == to && !state.ending,
        };
        if !allowed {
            return Err(invalid_status(self.inner.id, state.status, to));
        }
        state.status = to;
        state.ending = true;
        Ok(())
    }

    /// Asks the coordinator to end the transaction, and records what became of it.
    async fn end(&self, action: TxnAction) -> Result<(), ConnectionError> {
        let result = self.inner.coordinator.end(self.inner.id, action).await;
        let mut state = self.inner.state.lock().unwrap();
        state.ending = false;
        match &result {
            Ok(()) => {
                state.status = match action {
                    TxnAction::Commit => Status::Committed,
                    TxnAction::Abort => Status::Aborted,
                };
            }
            Err(ConnectionError::PulsarError(
                Some(ServerError::TransactionNotFound | ServerError::InvalidTxnStatus),
                _,
            )) => state.status = Status::Failed,
            // not decided: the same end may be asked for again
            Err(_) => {}
        }
        result
    }

    /// Waits until every send and acknowledgement made in the transaction was answered.
    async fn ops_answered(&self) {
        loop {
            let idle = {
                let mut state = self.inner.state.lock().unwrap();
                if state.pending == 0 {
                    return;
                }
                let (tx, rx) = oneshot::channel();
                state.idle.push(tx);
                rx
            };
            let _ = idle.await;
        }
    }

    /// Counts a send or acknowledgement made in the transaction, which must be open, until
    /// the returned guard is finished (or dropped, which counts as a failure).
    pub(crate) fn begin_op(&self) -> Result<TxnOp<Exe>, ConnectionError> {
        let mut state = self.inner.state.lock().unwrap();
        if state.status != Status::Open {
            return Err(invalid_status(self.inner.id, state.status, Status::Open));
        }
        state.pending += 1;
        Ok(TxnOp {
            inner: self.inner.clone(),
            finished: false,
        })
    }

    /// Registers `partition` with the transaction's coordinator (`ADD_PARTITION_TO_TXN`),
    /// unless it was already: the coordinator ends the transaction on the partitions it knows.
    pub(crate) async fn register_partition(&self, partition: &str) -> Result<(), ConnectionError> {
        let name = full_topic_name(partition);
        let registration = self
            .inner
            .partitions
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_default()
            .clone();
        let mut registered = registration.lock().await;
        if !*registered {
            self.inner
                .coordinator
                .add_partition(self.inner.id, &name)
                .await?;
            *registered = true;
        }
        Ok(())
    }

    /// Registers the subscription `subscription` of `partition` with the transaction's
    /// coordinator (`ADD_SUBSCRIPTION_TO_TXN`), unless it was already.
    pub(crate) async fn register_subscription(
        &self,
        partition: &str,
        subscription: &str,
    ) -> Result<(), ConnectionError> {
        let name = full_topic_name(partition);
        let registration = self
            .inner
            .subscriptions
            .lock()
            .unwrap()
            .entry((name.clone(), subscription.to_string()))
            .or_default()
            .clone();
        let mut registered = registration.lock().await;
        if !*registered {
            self.inner
                .coordinator
                .add_subscription(self.inner.id, &name, subscription)
                .await?;
            *registered = true;
        }
        Ok(())
    }

    /// Waits for the receipt of a message sent in the transaction in a task of its own, so
    /// that the transaction learns the outcome even if the caller drops the returned future.
    pub(crate) fn track_send(
        &self,
        op: TxnOp<Exe>,
        receipt: SendFuture,
    ) -> Result<SendFuture, Error> {
        let (tx, rx) = oneshot::channel();
        let task = async move {
            let result = receipt.await;
            op.finish(result.as_ref().err().map(|e| format!("send: {e}")));
            let _ = tx.send(result);
        };
        self.inner
            .coordinator
            .executor
            .spawn(Box::pin(task))
            .map_err(|_| Error::Executor)?;
        Ok(SendFuture(rx))
    }

    /// Waits for the broker's answer to an acknowledgement made in the transaction (in a task
    /// of its own, as for sends).
    pub(crate) async fn track_ack(
        &self,
        op: TxnOp<Exe>,
        answer: impl Future<Output = Result<(), ConsumerError>> + Send + 'static,
    ) -> Result<(), ConsumerError> {
        let (tx, rx) = oneshot::channel();
        let task = async move {
            let result = answer.await;
            op.finish(
                result
                    .as_ref()
                    .err()
                    .map(|e| format!("acknowledgement: {e}")),
            );
            let _ = tx.send(result);
        };
        self.inner
            .coordinator
            .executor
            .spawn(Box::pin(task))
            .map_err(|_| ConsumerError::Connection(ConnectionError::Shutdown))?;
        rx.await.unwrap_or(Err(ConsumerError::Closed))
    }
}

/// A send or acknowledgement made in a transaction, counted until it is answered.
pub(crate) struct TxnOp<Exe: Executor> {
    inner: Arc<Inner<Exe>>,
    finished: bool,
}

impl<Exe: Executor> TxnOp<Exe> {
    /// The send or acknowledgement was answered: `failure` says why it failed, if it did.
    pub(crate) fn finish(mut self, failure: Option<String>) {
        self.finished = true;
        self.inner.answered(failure);
    }
}

impl<Exe: Executor> Drop for TxnOp<Exe> {
    fn drop(&mut self) {
        if !self.finished {
            self.inner.answered(Some(
                "a send or acknowledgement was given up before it was answered".to_string(),
            ));
        }
    }
}

impl<Exe: Executor> Inner<Exe> {
    fn answered(&self, failure: Option<String>) {
        let mut state = self.state.lock().unwrap();
        state.pending -= 1;
        if let Some(failure) = failure {
            state.failure.get_or_insert(failure);
        }
        if state.pending == 0 {
            for idle in state.idle.drain(..) {
                let _ = idle.send(());
            }
        }
    }
}

/// The error of asking a transaction for something its state does not allow.
fn invalid_status(id: TxnId, status: Status, wanted: Status) -> ConnectionError {
    let what = match wanted {
        Status::Committing => "committed",
        Status::Aborting => "aborted",
        _ => "used for sends or acknowledgements",
    };
    let now = match status {
        Status::Open => "open",
        Status::Committing => "being committed",
        Status::Aborting => "being aborted",
        Status::Committed => "committed already",
        Status::Aborted => "aborted already",
        Status::Failed => "ended (the coordinator no longer knows it as open)",
    };
    ConnectionError::PulsarError(
        Some(ServerError::InvalidTxnStatus),
        Some(format!("transaction {id} cannot be {what}: it is {now}")),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn txn_id_shows_and_compares_its_two_halves() {
        let id = TxnId {
            most_bits: 1,
            least_bits: 42,
        };
        assert_eq!(id.to_string(), "(1,42)");
        assert_eq!(format!("{id:?}"), "TxnId { most_bits: 1, least_bits: 42 }");
        let copy = id;
        assert_eq!(copy, id);
        let ids: HashSet<TxnId> = [
            id,
            copy,
            TxnId {
                most_bits: 0,
                least_bits: 42,
            },
        ]
        .into();
        assert_eq!(ids.len(), 2);
    }

    /// Compiled, not run: the handle is `Clone + Send + Sync`, and the futures of the
    /// transactional calls are `Send`, so that they can be spawned.
    #[cfg(any(
        feature = "tokio-runtime",
        feature = "tokio-rustls-runtime-aws-lc-rs",
        feature = "tokio-rustls-runtime-ring"
    ))]
    #[allow(dead_code)]
    async fn handles_and_futures_are_send(
        pulsar: crate::Pulsar<crate::TokioExecutor>,
        mut producer: crate::Producer<crate::TokioExecutor>,
        mut consumer: crate::Consumer<Vec<u8>, crate::TokioExecutor>,
        message: crate::consumer::Message<Vec<u8>>,
    ) {
        fn send<T: Send>(t: T) -> T {
            t
        }
        fn handle<T: Clone + Send + Sync>(_: &T) {}
        let txn = send(pulsar.new_transaction(Duration::from_secs(1)))
            .await
            .unwrap();
        handle(&txn);
        let _ = send(producer.send_non_blocking_in(Vec::new(), &txn)).await;
        let _ = send(consumer.ack_with_txn(&message, &txn)).await;
        let _ = send(consumer.ack_many_with_id_in("topic", Vec::new(), &txn)).await;
        let _ = send(txn.commit()).await;
        let _ = send(txn.abort()).await;
    }

    #[test]
    fn the_timeout_goes_to_the_broker_in_milliseconds() {
        assert_eq!(timeout_millis(Duration::from_secs(60)), 60_000);
        assert_eq!(timeout_millis(Duration::from_millis(1_500)), 1_500);
        assert_eq!(timeout_millis(Duration::MAX), u64::MAX);
        let command =
            crate::connection::messages::new_txn(5, 1, timeout_millis(Duration::from_secs(2)));
        let new_txn = command.command.new_txn.unwrap();
        assert_eq!(new_txn.txn_ttl_seconds, Some(2_000));
        assert_eq!(new_txn.tc_id, Some(1));
        assert_eq!(new_txn.request_id, 5);
    }

    #[test]
    fn topics_are_registered_by_their_full_names() {
        assert_eq!(
            full_topic_name("orders"),
            "persistent://public/default/orders"
        );
        assert_eq!(
            full_topic_name("orders-partition-3"),
            "persistent://public/default/orders-partition-3"
        );
        assert_eq!(
            full_topic_name("acme/sales/orders"),
            "persistent://acme/sales/orders"
        );
        assert_eq!(
            full_topic_name("persistent://acme/sales/orders-partition-0"),
            "persistent://acme/sales/orders-partition-0"
        );
        assert_eq!(
            full_topic_name("non-persistent://acme/sales/orders"),
            "non-persistent://acme/sales/orders"
        );
    }

    // The tests below need a broker with transactions on, at pulsar://127.0.0.1:6650 and
    // http://127.0.0.1:8080 (scripts/test-carried-pulsar starts one).

    #[cfg(any(
        feature = "tokio-runtime",
        feature = "tokio-rustls-runtime-aws-lc-rs",
        feature = "tokio-rustls-runtime-ring"
    ))]
    mod broker {
        use std::{collections::BTreeSet, time::Duration};

        use futures::{future::try_join_all, StreamExt};

        use crate::{
            compression::{Compression, CompressionSnappy},
            consumer::{InitialPosition, Message},
            error::ConnectionError,
            message::{
                proto::{ServerError, SingleMessageMetadata},
                BatchedMessage,
            },
            producer, test_utils, Consumer, ConsumerOptions, Error, ProducerOptions, Pulsar,
            SubType, TokioExecutor,
        };

        type Exe = TokioExecutor;

        fn topic(what: &str) -> String {
            format!(
                "persistent://public/default/txn_{what}_{}",
                rand::random::<u32>()
            )
        }

        async fn subscribe(pulsar: &Pulsar<Exe>, topic: &str) -> Consumer<String, Exe> {
            pulsar
                .consumer()
                .with_topic(topic)
                .with_subscription("transactions")
                .with_subscription_type(SubType::Shared)
                .with_options(ConsumerOptions {
                    initial_position: InitialPosition::Earliest,
                    ..Default::default()
                })
                .build()
                .await
                .unwrap()
        }

        /// The next message, if one comes within `within`.
        async fn receive(
            consumer: &mut Consumer<String, Exe>,
            within: Duration,
        ) -> Option<Message<String>> {
            match tokio::time::timeout(within, consumer.next()).await {
                Ok(Some(message)) => Some(message.unwrap()),
                Ok(None) => panic!("the consumer ended"),
                Err(_) => None,
            }
        }

        fn text(message: &Message<String>) -> String {
            message.deserialize().unwrap()
        }

        /// `consumer` receives `after`, published last, as its next message: nothing that the
        /// tests below published before it (and expect never to be seen) comes first.
        async fn next_is(consumer: &mut Consumer<String, Exe>, after: &str) {
            let message = receive(consumer, Duration::from_secs(10))
                .await
                .unwrap_or_else(|| panic!("{after:?} did not come"));
            assert_eq!(text(&message), after);
            consumer.ack(&message).await.unwrap();
            assert!(receive(consumer, Duration::from_secs(1)).await.is_none());
        }

        fn ended(error: &Error) -> bool {
            matches!(
                error,
                Error::Connection(ConnectionError::PulsarError(
                    Some(ServerError::TransactionNotFound | ServerError::InvalidTxnStatus),
                    _
                ))
            )
        }

        /// (a) Messages sent in a transaction to a partitioned topic are seen by consumers
        /// only after the commit, on every partition; the ended transaction takes nothing more.
        #[tokio::test]
        async fn commit_makes_the_messages_visible_on_every_partition() {
            let pulsar = test_utils::new_pulsar().await;
            let name = format!("txn_commit_{}", rand::random::<u32>());
            test_utils::create_partitioned_topic("public", "default", &name, 2).await;
            let topic = format!("persistent://public/default/{name}");
            let mut consumer = subscribe(&pulsar, &topic).await;
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            assert_eq!(producer.partitions().map(|p| p.len()), Some(2));

            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            let mut receipts = Vec::new();
            for i in 0..10 {
                let receipt = producer
                    .send_non_blocking_in(format!("m{i}"), &txn)
                    .await
                    .unwrap();
                receipts.push(receipt);
            }
            try_join_all(receipts).await.unwrap();
            assert!(
                receive(&mut consumer, Duration::from_secs(3))
                    .await
                    .is_none(),
                "a message of transaction {} was seen before its commit",
                txn.id()
            );

            txn.commit().await.unwrap();
            let (mut seen, mut partitions) = (BTreeSet::new(), BTreeSet::new());
            while seen.len() < 10 {
                let message = receive(&mut consumer, Duration::from_secs(10))
                    .await
                    .unwrap_or_else(|| panic!("only {seen:?} came after the commit"));
                consumer.ack(&message).await.unwrap();
                partitions.insert(message.topic.clone());
                seen.insert(text(&message));
            }
            assert_eq!(seen, (0..10).map(|i| format!("m{i}")).collect());
            assert_eq!(partitions.len(), 2, "{partitions:?}");
            assert!(receive(&mut consumer, Duration::from_secs(1))
                .await
                .is_none());

            // ended: neither a second end nor another send
            assert!(ended(&txn.commit().await.unwrap_err()));
            assert!(ended(&txn.abort().await.unwrap_err()));
            assert!(producer.send_non_blocking_in("late", &txn).await.is_err());
        }

        /// An acknowledgement in a transaction is answered while the consumer's queue is full
        /// and the application takes nothing more from it (the consumer engine, waiting for
        /// room, is not what sends it), so a commit can be waited for before reading on.
        #[tokio::test]
        async fn an_acknowledgement_is_answered_while_the_queue_is_full() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("queue_full");
            let mut consumer: Consumer<String, Exe> = pulsar
                .consumer()
                .with_topic(&topic)
                .with_subscription("transactions")
                .with_subscription_type(SubType::Shared)
                .with_options(ConsumerOptions {
                    initial_position: InitialPosition::Earliest,
                    receiver_queue_size: Some(1),
                    ..Default::default()
                })
                .build()
                .await
                .unwrap();
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            for i in 0..20 {
                producer
                    .send_non_blocking(format!("m{i}"))
                    .await
                    .unwrap()
                    .await
                    .unwrap();
            }
            let first = receive(&mut consumer, Duration::from_secs(10))
                .await
                .expect("the first message came");
            // the engine now waits for room: the queue holds one, and the broker sent more
            tokio::time::sleep(Duration::from_secs(1)).await;

            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            tokio::time::timeout(Duration::from_secs(10), consumer.ack_with_txn(&first, &txn))
                .await
                .expect("the acknowledgement was answered within 10 s")
                .unwrap();
            tokio::time::timeout(Duration::from_secs(10), txn.commit())
                .await
                .expect("the commit was answered within 10 s")
                .unwrap();

            // the rest come, and the committed one does not come back
            let mut seen = BTreeSet::new();
            while let Some(message) = receive(&mut consumer, Duration::from_secs(3)).await {
                consumer.ack(&message).await.unwrap();
                seen.insert(text(&message));
            }
            assert_eq!(seen, (1..20).map(|i| format!("m{i}")).collect());
        }

        /// (b) Messages sent in an aborted transaction are never seen.
        #[tokio::test]
        async fn abort_drops_the_messages() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("abort");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;

            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            let mut receipts = Vec::new();
            for i in 0..5 {
                receipts.push(
                    producer
                        .send_non_blocking_in(format!("aborted {i}"), &txn)
                        .await
                        .unwrap(),
                );
            }
            try_join_all(receipts).await.unwrap();
            txn.abort().await.unwrap();
            assert!(ended(&txn.commit().await.unwrap_err()));

            producer
                .send_non_blocking("after")
                .await
                .unwrap()
                .await
                .unwrap();
            next_is(&mut consumer, "after").await;
        }

        /// (c) Messages acknowledged in a transaction that aborts come back (the broker sends
        /// them to the consumer again); acknowledged in one that commits, they do not, not
        /// even to a consumer that subscribes afresh.
        #[tokio::test]
        async fn acknowledgements_count_only_on_commit() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("ack");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            for text in ["a", "b"] {
                producer
                    .send_non_blocking(text)
                    .await
                    .unwrap()
                    .await
                    .unwrap();
            }
            let receive_both = |mut consumer: Consumer<String, Exe>| async move {
                let mut messages = Vec::new();
                while messages.len() < 2 {
                    let message = receive(&mut consumer, Duration::from_secs(10))
                        .await
                        .expect("the messages did not come (back)");
                    messages.push(message);
                }
                let mut texts: Vec<_> = messages.iter().map(text).collect();
                texts.sort();
                assert_eq!(texts, ["a", "b"]);
                (consumer, messages)
            };

            let (mut consumer, messages) = receive_both(subscribe(&pulsar, &topic).await).await;
            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            for message in &messages {
                consumer.ack_with_txn(message, &txn).await.unwrap();
            }
            txn.abort().await.unwrap();
            // released by the abort: the broker sends them to the consumer again
            let (mut consumer, messages) = receive_both(consumer).await;

            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            let ids = messages
                .iter()
                .map(crate::consumer::topic::id_with_batch_size)
                .collect();
            consumer
                .ack_many_with_id_in(&messages[0].topic, ids, &txn)
                .await
                .unwrap();
            txn.commit().await.unwrap();
            consumer.close().await.unwrap();
            drop(consumer);

            let mut consumer = subscribe(&pulsar, &topic).await;
            producer
                .send_non_blocking("after")
                .await
                .unwrap()
                .await
                .unwrap();
            next_is(&mut consumer, "after").await;
        }

        /// The coordinator moves (its namespace, pulsar/system, is unloaded): the next
        /// request is answered `TransactionCoordinatorNotFound`, and is tried again on the
        /// coordinator looked up and connected to again, so the commit succeeds.
        #[tokio::test]
        async fn the_coordinator_is_found_again_after_it_moved() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("moved");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;
            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            producer
                .send_non_blocking_in("committed after the move", &txn)
                .await
                .unwrap()
                .await
                .unwrap();

            let unloaded = reqwest::Client::new()
                .put("http://127.0.0.1:8080/admin/v2/namespaces/pulsar/system/unload")
                .send()
                .await
                .unwrap();
            assert!(unloaded.status().is_success(), "{unloaded:?}");
            txn.commit().await.unwrap();
            next_is(&mut consumer, "committed after the move").await;

            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            producer
                .send_non_blocking_in("and another", &txn)
                .await
                .unwrap();
            txn.commit().await.unwrap();
            next_is(&mut consumer, "and another").await;
        }

        /// (d) A transaction not ended within its timeout is aborted by the broker: its
        /// messages are never seen, and its commit fails.
        #[tokio::test]
        async fn a_timed_out_transaction_is_aborted_by_the_broker() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("timeout");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;

            let txn = pulsar
                .new_transaction(Duration::from_secs(2))
                .await
                .unwrap();
            assert_eq!(txn.timeout(), Duration::from_secs(2));
            let mut receipts = Vec::new();
            for i in 0..3 {
                receipts.push(
                    producer
                        .send_non_blocking_in(format!("timed out {i}"), &txn)
                        .await
                        .unwrap(),
                );
            }
            try_join_all(receipts).await.unwrap();
            tokio::time::sleep(Duration::from_secs(6)).await;
            let error = txn.commit().await.unwrap_err();
            assert!(ended(&error), "{error:?}");

            producer
                .send_non_blocking("after")
                .await
                .unwrap()
                .await
                .unwrap();
            next_is(&mut consumer, "after").await;
        }

        /// (e) A batch the application framed (`num_messages_in_batch`), sent in a
        /// transaction by a producer that compresses, arrives as one entry of all its
        /// messages after the commit.
        #[tokio::test]
        async fn a_framed_batch_is_delivered_whole_after_commit() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("framed");
            let mut producer = pulsar
                .producer()
                .with_topic(&topic)
                .with_options(ProducerOptions {
                    compression: Some(Compression::Snappy(CompressionSnappy::default())),
                    ..Default::default()
                })
                .build()
                .await
                .unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;

            let mut payload = Vec::new();
            for i in 0..3 {
                let data = format!("framed {i}").into_bytes();
                BatchedMessage {
                    metadata: SingleMessageMetadata {
                        payload_size: data.len() as i32,
                        ..Default::default()
                    },
                    payload: data,
                }
                .serialize(&mut payload);
            }
            let batch = producer::Message {
                payload,
                num_messages_in_batch: Some(3),
                ..Default::default()
            };
            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            producer
                .send_non_blocking_in(batch, &txn)
                .await
                .unwrap()
                .await
                .unwrap();
            assert!(receive(&mut consumer, Duration::from_secs(2))
                .await
                .is_none());
            txn.commit().await.unwrap();

            let mut messages = Vec::new();
            for _ in 0..3 {
                let message = receive(&mut consumer, Duration::from_secs(10))
                    .await
                    .expect("the batch did not come whole");
                messages.push(message);
            }
            let texts: Vec<_> = messages.iter().map(text).collect();
            assert_eq!(texts, ["framed 0", "framed 1", "framed 2"]);
            let entries: BTreeSet<_> = messages
                .iter()
                .map(|m| (m.message_id().ledger_id, m.message_id().entry_id))
                .collect();
            assert_eq!(entries.len(), 1, "one entry");
            let indexes: Vec<_> = messages
                .iter()
                .map(|m| m.message_id().batch_index)
                .collect();
            assert_eq!(indexes, [Some(0), Some(1), Some(2)]);
            assert_eq!(messages[0].message_id.batch_size, Some(3));
            consumer.ack(&messages[0]).await.unwrap();
        }

        /// A producer that batches sends what it batched before a transactional message,
        /// which goes as an entry of its own: the plain messages are seen before the commit,
        /// the transactional one after it.
        #[tokio::test]
        async fn batches_never_mix_transactional_messages() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("batching");
            let mut producer = pulsar
                .producer()
                .with_topic(&topic)
                .with_options(ProducerOptions {
                    batch_size: Some(10),
                    ..Default::default()
                })
                .build()
                .await
                .unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;

            let plain = [
                producer.send_non_blocking("plain 0").await.unwrap(),
                producer.send_non_blocking("plain 1").await.unwrap(),
            ];
            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            let receipt = producer
                .send_non_blocking_in("in the transaction", &txn)
                .await
                .unwrap();
            let plain = try_join_all(plain).await.unwrap();
            let receipt = receipt.await.unwrap();
            let entry = |r: &crate::CommandSendReceipt| {
                let id = r.message_id.as_ref().unwrap();
                (id.ledger_id, id.entry_id)
            };
            assert_eq!(
                entry(&plain[0]),
                entry(&plain[1]),
                "the plain ones are batched"
            );
            assert_ne!(entry(&plain[0]), entry(&receipt));

            for expected in ["plain 0", "plain 1"] {
                let message = receive(&mut consumer, Duration::from_secs(10))
                    .await
                    .expect("the plain messages did not come");
                assert_eq!(text(&message), expected);
                consumer.ack(&message).await.unwrap();
            }
            assert!(receive(&mut consumer, Duration::from_secs(2))
                .await
                .is_none());
            txn.commit().await.unwrap();
            next_is(&mut consumer, "in the transaction").await;
        }

        /// Each message of a batched entry acknowledged at its index in a transaction (an id
        /// with its `ack_set` and `batch_size`, as the Java client acknowledges in a
        /// transaction): once all are and the transaction commits, the entry is done.
        #[tokio::test]
        async fn batch_index_acknowledgements_in_a_transaction() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("indexes");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            let mut payload = Vec::new();
            for i in 0..3 {
                let data = format!("indexed {i}").into_bytes();
                BatchedMessage {
                    metadata: SingleMessageMetadata {
                        payload_size: data.len() as i32,
                        ..Default::default()
                    },
                    payload: data,
                }
                .serialize(&mut payload);
            }
            let batch = producer::Message {
                payload,
                num_messages_in_batch: Some(3),
                ..Default::default()
            };
            producer
                .send_non_blocking(batch)
                .await
                .unwrap()
                .await
                .unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;
            let mut ids = Vec::new();
            for _ in 0..3 {
                let message = receive(&mut consumer, Duration::from_secs(10))
                    .await
                    .expect("the batch did not come");
                let index = message.message_id().batch_index.unwrap();
                // the indexes still unacknowledged: all but this one
                let ack_set = vec![0b111 & !(1i64 << index)];
                ids.push(crate::message::proto::MessageIdData {
                    ack_set,
                    batch_size: Some(3),
                    ..message.message_id().clone()
                });
            }
            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            let topic_of_messages = consumer.topics().remove(0);
            consumer
                .ack_many_with_id_in(&topic_of_messages, ids, &txn)
                .await
                .unwrap();
            txn.commit().await.unwrap();
            consumer.close().await.unwrap();
            drop(consumer);

            let mut consumer = subscribe(&pulsar, &topic).await;
            producer
                .send_non_blocking("after")
                .await
                .unwrap()
                .await
                .unwrap();
            next_is(&mut consumer, "after").await;
        }

        /// (f) A delayed message and the chunks of a chunked message keep what they say when
        /// sent in a transaction: the delayed one comes after the commit and its time, the
        /// chunks come as they were sent.
        #[tokio::test]
        async fn delayed_and_chunked_messages_in_a_transaction() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("delayed");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;

            let txn = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            let whole = b"one message in two chunks".to_vec();
            let (first, second) = whole.split_at(10);
            let mut receipts = Vec::new();
            for (chunk_id, part) in [first, second].into_iter().enumerate() {
                let chunk = producer::Message {
                    payload: part.to_vec(),
                    uuid: Some("txn-chunked-1".to_string()),
                    chunk_id: Some(chunk_id as i32),
                    num_chunks_from_msg: Some(2),
                    total_chunk_msg_size: Some(whole.len() as i32),
                    ..Default::default()
                };
                receipts.push(producer.send_non_blocking_in(chunk, &txn).await.unwrap());
            }
            let deliver_at = chrono::Utc::now().timestamp_millis() + 8_000;
            let delayed = producer::Message {
                payload: b"delayed".to_vec(),
                deliver_at_time: Some(deliver_at),
                ..Default::default()
            };
            receipts.push(producer.send_non_blocking_in(delayed, &txn).await.unwrap());
            try_join_all(receipts).await.unwrap();
            txn.commit().await.unwrap();

            let mut chunks = Vec::new();
            for _ in 0..2 {
                let message = receive(&mut consumer, Duration::from_secs(10))
                    .await
                    .expect("the chunks did not come");
                chunks.push(message);
            }
            // not yet: the delayed message waits for its time
            assert!(receive(&mut consumer, Duration::from_secs(1))
                .await
                .is_none());
            let joined: Vec<u8> = chunks.iter().flat_map(|m| m.payload.data.clone()).collect();
            assert_eq!(joined, whole);
            let metadata = chunks[1].metadata();
            assert_eq!(metadata.uuid.as_deref(), Some("txn-chunked-1"));
            assert_eq!(metadata.chunk_id, Some(1));
            assert_eq!(metadata.num_chunks_from_msg, Some(2));
            for chunk in &chunks {
                consumer.ack(chunk).await.unwrap();
            }
            let delayed = receive(&mut consumer, Duration::from_secs(20))
                .await
                .expect("the delayed message did not come");
            assert!(chrono::Utc::now().timestamp_millis() >= deliver_at);
            assert_eq!(delayed.payload.data, b"delayed");
            consumer.ack(&delayed).await.unwrap();
        }

        /// An acknowledgement that the broker refuses (the message is acknowledged in another
        /// open transaction) fails, and makes its transaction's commit abort it: a message it
        /// sent is never seen.
        #[tokio::test]
        async fn a_failed_acknowledgement_makes_commit_abort() {
            let pulsar = test_utils::new_pulsar().await;
            let topic = topic("conflict");
            let mut producer = pulsar.producer().with_topic(&topic).build().await.unwrap();
            producer
                .send_non_blocking("input")
                .await
                .unwrap()
                .await
                .unwrap();
            let mut consumer = subscribe(&pulsar, &topic).await;
            let input = receive(&mut consumer, Duration::from_secs(10))
                .await
                .expect("the input did not come");

            let first = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            consumer.ack_with_txn(&input, &first).await.unwrap();

            let second = pulsar
                .new_transaction(Duration::from_secs(60))
                .await
                .unwrap();
            producer
                .send_non_blocking_in("output of the second", &second)
                .await
                .unwrap()
                .await
                .unwrap();
            let conflict = consumer.ack_with_txn(&input, &second).await.unwrap_err();
            assert!(
                conflict.to_string().contains("TransactionConflict"),
                "{conflict}"
            );
            let error = second.commit().await.unwrap_err();
            assert!(error.to_string().contains("it was aborted"), "{error}");
            assert!(ended(&second.abort().await.unwrap_err()));

            first.commit().await.unwrap();
            producer
                .send_non_blocking("after")
                .await
                .unwrap()
                .await
                .unwrap();
            next_is(&mut consumer, "after").await;
        }
    }
}
