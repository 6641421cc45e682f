//! Transactions as a subscription's driver uses them, whichever transport is behind them
//! (a transactional registration: `Mounted::transactional`, `ruststream::transaction`).
//!
//! The driver opens a [`Transaction`] for each delivery before its handler runs
//! ([`Transactions::begin`]), lends the handler a publisher over the transaction's port, sends
//! the copy the machine orders through the same port, and makes the machine's
//! `Call::Commit` with `ConsumerPort::commit` and its `Call::Abort` with
//! [`TransactionHandle::abort`].

mod port;
mod settings;

pub(crate) use port::{failed_send, Transaction, TransactionHandle, Transactions};
pub(crate) use settings::TransactionSettings;
