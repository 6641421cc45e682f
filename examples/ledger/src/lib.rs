//! The ledger service: account movements stored in SQLite, one transaction per batch.
//!
//! `store_movements` takes up to 100 movements at a time and writes them in one transaction,
//! so a batch pays SQLite's commit (a sync to disk) once instead of once per movement;
//! `store_movement` is the same service with a handler of one message, for comparison
//! (`scripts/bench` prints both). A movement is stored once whatever the redeliveries (its id
//! is the key), a movement of zero goes to the dead-letter topic on its own, and a database
//! error retries the whole batch.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{params, Connection};
use ruststream::batch::BatchOutcome;
use ruststream_pulsar::prelude::*;
use serde::{Deserialize, Serialize};

/// The topic movements are published to.
pub const MOVEMENTS: &str = "movements";
/// Where a movement that cannot be stored goes.
pub const MOVEMENTS_DLQ: &str = "movements-dlq";
/// The most movements one transaction stores.
pub const BATCH: usize = 100;

/// One movement on an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Outgoing)]
#[outgoing(name = "movements")]
pub struct Movement {
    /// Unique: a movement delivered twice is stored once.
    pub id: u64,
    /// The account it moves money on.
    pub account: String,
    /// Positive in, negative out; never zero.
    pub amount_cents: i64,
}

/// What became of one movement in a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Written now.
    New,
    /// Written before (a redelivery): nothing to do.
    Duplicate,
    /// A movement of zero: refused.
    Zero,
}

/// Why the database did not store a batch.
#[derive(Debug, thiserror::Error)]
#[error("the ledger database refused the write ({0}); the movements are retried")]
pub struct LedgerError(#[from] rusqlite::Error);

impl ruststream::IntoOutcome for LedgerError {
    fn into_outcome(self) -> ruststream::Answer {
        ruststream::Answer::new(HandlerOutcome::retry_after(Duration::from_secs(1))).because(self)
    }
}

/// The ledger: one SQLite database, and how many transactions it committed.
#[derive(Debug)]
pub struct Ledger {
    db: Mutex<Connection>,
    commits: Mutex<u64>,
    /// Movements written (not counting duplicates), read without the database.
    written: std::sync::atomic::AtomicU64,
}

impl Ledger {
    /// The ledger in the SQLite file at `path` (created with its tables if new), synced to
    /// disk at every commit, as a ledger must be.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        Self::with(Connection::open(path)?)
    }

    /// A ledger held in memory, for tests.
    pub fn in_memory() -> Result<Self, LedgerError> {
        Self::with(Connection::open_in_memory()?)
    }

    fn with(db: Connection) -> Result<Self, LedgerError> {
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS movements (
                 id INTEGER PRIMARY KEY,
                 account TEXT NOT NULL,
                 amount_cents INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS balances (
                 account TEXT PRIMARY KEY,
                 cents INTEGER NOT NULL
             );",
        )?;
        Ok(Ledger {
            db: Mutex::new(db),
            commits: Mutex::new(0),
            written: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Store `movements` in one transaction: each new one is written and added to its
    /// account's balance. Returns what became of each, in order; nothing is written on error.
    pub fn store(&self, movements: &[Movement]) -> Result<Vec<Stored>, LedgerError> {
        let mut db = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        let tx = db.transaction()?;
        let mut stored = Vec::with_capacity(movements.len());
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO movements (id, account, amount_cents) VALUES (?1, ?2, ?3)",
            )?;
            let mut add = tx.prepare_cached(
                "INSERT INTO balances (account, cents) VALUES (?1, ?2)
                 ON CONFLICT (account) DO UPDATE SET cents = cents + excluded.cents",
            )?;
            for movement in movements {
                if movement.amount_cents == 0 {
                    stored.push(Stored::Zero);
                    continue;
                }
                let id = i64::try_from(movement.id).unwrap_or(i64::MAX);
                let written =
                    insert.execute(params![id, movement.account, movement.amount_cents])?;
                if written == 0 {
                    stored.push(Stored::Duplicate);
                    continue;
                }
                add.execute(params![movement.account, movement.amount_cents])?;
                stored.push(Stored::New);
            }
        }
        tx.commit()?;
        *self.commits.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        let new = stored.iter().filter(|s| **s == Stored::New).count() as u64;
        (self.written).fetch_add(new, std::sync::atomic::Ordering::Relaxed);
        Ok(stored)
    }

    /// The balance of `account`, in cents (0 for an account with no movement).
    pub fn balance(&self, account: &str) -> Result<i64, LedgerError> {
        let db = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        let cents = db
            .query_row(
                "SELECT cents FROM balances WHERE account = ?1",
                params![account],
                |row| row.get(0),
            )
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(0),
                e => Err(e),
            })?;
        Ok(cents)
    }

    /// How many movements are stored.
    pub fn movements(&self) -> Result<u64, LedgerError> {
        let db = self.db.lock().unwrap_or_else(PoisonError::into_inner);
        let count: i64 = db.query_row("SELECT COUNT(*) FROM movements", [], |row| row.get(0))?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// How many movements this process wrote (duplicates not counted), without asking the
    /// database.
    pub fn written(&self) -> u64 {
        self.written.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many transactions were committed.
    pub fn commits(&self) -> u64 {
        *self.commits.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the handlers share.
#[derive(Debug, Clone, FromRef)]
pub struct Books {
    /// The ledger.
    pub ledger: Arc<Ledger>,
}

/// Up to [`BATCH`] movements, one transaction: a movement of zero goes to the dead-letter
/// topic on its own; a database error retries them all.
#[subscriber(
    PulsarSubscription::new(MOVEMENTS, "ledger")
        .ack_timeout(Duration::from_secs(30))
        .initial_position(InitialPosition::Earliest),
    dead_letter
)]
pub async fn store_movements(
    movements: &[Movement],
    State(ledger): State<Arc<Ledger>>,
) -> Result<BatchOutcome, LedgerError> {
    let stored = ledger.store(movements)?;
    let mut outcome = BatchOutcome::ack();
    for (i, stored) in stored.iter().enumerate() {
        if *stored == Stored::Zero {
            outcome = outcome.except(i, HandlerOutcome::dead_letter("zero-amount"));
        }
    }
    tracing::debug!(movements = movements.len(), "stored in one transaction");
    Ok(outcome)
}

/// The same service one movement at a time: a transaction each.
#[subscriber(
    PulsarSubscription::new(MOVEMENTS, "ledger")
        .ack_timeout(Duration::from_secs(30))
        .initial_position(InitialPosition::Earliest),
    dead_letter
)]
pub async fn store_movement(
    movement: &Movement,
    State(ledger): State<Arc<Ledger>>,
) -> Result<HandlerOutcome, LedgerError> {
    let stored = ledger.store(std::slice::from_ref(movement))?;
    Ok(match stored[0] {
        Stored::Zero => HandlerOutcome::dead_letter("zero-amount"),
        Stored::New | Stored::Duplicate => HandlerOutcome::ack(),
    })
}

/// How the ledger takes its movements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// [`store_movements`], in batches of [`BATCH`], handed over after 50 ms at most.
    Batches,
    /// [`store_movement`], one transaction per movement.
    OneByOne,
}

/// The ledger service on `broker`, its movements taken as `handling` says, stored
/// in the SQLite file `db` (in memory without one) opened at startup.
pub fn app_on(
    broker: PulsarBroker<Books>,
    handling: Handling,
    db: Option<PathBuf>,
) -> impl App<State = Books> {
    RustStream::new(AppInfo::new("ledger", "0.1.0"))
        .on_startup(async move |()| {
            let ledger = match &db {
                Some(path) => Ledger::open(path)?,
                None => Ledger::in_memory()?,
            };
            Ok::<_, LedgerError>(Books {
                ledger: Arc::new(ledger),
            })
        })
        .with_broker(broker, move |b| {
            let mounted = match handling {
                Handling::Batches => b.include(
                    store_movements
                        .batch(ruststream::nonzero!(BATCH))
                        .batch_wait(Duration::from_millis(50)),
                ),
                Handling::OneByOne => b.include(store_movement),
            };
            mounted
                .max_attempts(ruststream::nonzero!(5u32))
                .dead_letter(MOVEMENTS_DLQ);
        })
}

#[cfg(test)]
mod tests;
