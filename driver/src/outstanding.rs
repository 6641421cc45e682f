//! What a driver has outstanding between events: the consumer calls it will make at the next
//! flush, and the broker's answers it waits for.

use std::num::NonZeroU32;
use std::sync::Arc;

use ruststream::app::BoxError;
use ruststream::broker::machine::TxnId;

use crate::port::{CommitError, Received, Transaction};

/// An invocation, as a driver's machine asks for it.
pub(crate) type Invoke<Id> = ruststream::broker::machine::Invoke<Received<Id>, Transaction>;

/// The consumer calls of the flush under way, made together, and the releases made after
/// them.
pub(crate) struct Calls<Id> {
    pub(crate) acks: Vec<Id>,
    pub(crate) nacks: Vec<Id>,
    pub(crate) index: Vec<(Id, NonZeroU32, Vec<i64>)>,
    pub(crate) releases: Vec<Id>,
}

impl<Id> Default for Calls<Id> {
    fn default() -> Self {
        Calls {
            acks: Vec::new(),
            nacks: Vec::new(),
            index: Vec::new(),
            releases: Vec::new(),
        }
    }
}

/// What the broker answered for the machine.
pub(crate) enum Io {
    Opened(TxnId, Result<Transaction, Arc<str>>),
    /// A commit, of so many messages, and how it went.
    Committed(TxnId, usize, Result<(), CommitError>),
    /// An abort, of the transaction that prints so, and how it went.
    Aborted(String, Result<(), BoxError>),
    /// A copy handed to its producer (its answer comes through the outbox).
    Sent,
}
