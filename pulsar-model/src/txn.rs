//! What names a transaction and what becomes of it, shared by the coordinator
//! ([`crate::transaction`]) and the errors that name transactions ([`crate::error`]).

use core::fmt;
use std::time::Duration;

use ruststream::Instant;

/// Names a transaction, as [`Cluster::new_transaction`](crate::Cluster::new_transaction) returns it: Pulsar's `TxnID`, the id
/// of the coordinator that owns it (its most significant bits) and its sequence number there
/// (its least significant bits). Displayed as Pulsar prints it, `(0,7)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId {
    most_sig_bits: u64,
    least_sig_bits: u64,
}

impl TxnId {
    /// The id of transaction `sequence` of coordinator `coordinator`. The model's coordinator
    /// is 0 and numbers from 0; an id made up here names no transaction unless it names one
    /// the cluster opened.
    pub const fn new(coordinator: u64, sequence: u64) -> Self {
        TxnId {
            most_sig_bits: coordinator,
            least_sig_bits: sequence,
        }
    }

    /// The coordinator's id (`TxnID.getMostSigBits`).
    pub const fn most_sig_bits(self) -> u64 {
        self.most_sig_bits
    }

    /// The sequence number within the coordinator (`TxnID.getLeastSigBits`).
    pub const fn least_sig_bits(self) -> u64 {
        self.least_sig_bits
    }
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.most_sig_bits, self.least_sig_bits)
    }
}

/// What became of a transaction ([`Cluster::transaction_state`](crate::Cluster::transaction_state)): the coordinator's
/// `TxnStatus`, without the COMMITTING and ABORTING steps, which the model passes within one
/// call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransactionState {
    /// It may still publish and acknowledge.
    Open,
    /// Committed: its messages are readable in their places, its acknowledgements done.
    Committed,
    /// Aborted by a call to [`Cluster::abort`](crate::Cluster::abort): its messages will never be delivered, the
    /// messages it acknowledged were delivered again.
    Aborted,
    /// Aborted by the coordinator when its timeout passed, with the same effects as
    /// [`TransactionState::Aborted`].
    TimedOut,
}

impl fmt::Display for TransactionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransactionState::Open => "open",
            TransactionState::Committed => "committed",
            TransactionState::Aborted => "aborted",
            TransactionState::TimedOut => "aborted for its timeout",
        })
    }
}

/// Why a transactional acknowledgement was refused ([`ModelError::TransactionConflict`](crate::ModelError::TransactionConflict)):
/// what the broker's pending-ack handle found (`TransactionConflictException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Conflict {
    /// The message is pending in transaction `holder`, which has not ended (possibly the very
    /// transaction that asks again): the broker's "in pending ack status".
    Pending {
        /// The transaction that acknowledged it.
        holder: TxnId,
    },
    /// The subscription acknowledged the message already, plainly or in a committed
    /// transaction: the broker's "already acked before".
    Acknowledged,
    /// A committed transaction acknowledged this message of a batch, and the cluster, not
    /// acknowledging at batch-index level, did not apply it: it stays pending for good.
    CommittedBatchIndex,
}

/// Why a transaction is not open and what to do, for [`ModelError::TransactionNotOpen`](crate::ModelError::TransactionNotOpen)'s
/// message.
pub(crate) fn not_open(state: &TransactionState, ended_at: &Instant, timeout: &Duration) -> String {
    let at = ended_at.elapsed_since_origin();
    match state {
        TransactionState::TimedOut => format!(
            "the coordinator aborted it at {at:?} on the cluster's clock, its timeout of \
             {timeout:?} having passed, and undid its work; open a new transaction, with a \
             timeout longer than the work takes, and do the work again in it"
        ),
        TransactionState::Committed => format!(
            "it was committed at {at:?} on the cluster's clock, and a transaction ends once; \
             open a new transaction for more work"
        ),
        TransactionState::Aborted => format!(
            "it was aborted at {at:?} on the cluster's clock, and its work undone; open a new \
             transaction and do the work again in it"
        ),
        TransactionState::Open => "it is open".to_owned(),
    }
}

/// What a refused transactional acknowledgement ran into, for
/// [`ModelError::TransactionConflict`](crate::ModelError::TransactionConflict)'s message.
pub(crate) fn conflict(cause: &Conflict, txn: &TxnId) -> String {
    match cause {
        Conflict::Pending { holder } if holder == txn => format!(
            "it is pending in this transaction already ({txn}): the broker refuses a second \
             acknowledgement of a message in a transaction; acknowledge each message once"
        ),
        Conflict::Pending { holder } => format!(
            "it is pending in transaction {holder}, which has not ended, and a message is \
             acknowledged in one transaction at a time; end {holder} first (its abort delivers \
             the message again), or leave the message to it"
        ),
        Conflict::Acknowledged => "the subscription acknowledged it already (plainly, or in a \
             committed transaction): there is nothing left to acknowledge"
            .to_owned(),
        Conflict::CommittedBatchIndex => "a committed transaction acknowledged this message of a \
             batch, which this cluster did not apply (it does not acknowledge at batch-index \
             level, as Apache Pulsar's acknowledgmentAtBatchIndexLevelEnabled=false does), so it \
             stays pending for good; make the cluster \
             `with_batch_index_acknowledgement(true)`, as Pulsar's documentation asks for to \
             acknowledge batched messages in transactions"
            .to_owned(),
    }
}
