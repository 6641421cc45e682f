//! The ledger on the in-process Pulsar with a stopped clock, on tokio, async-std and smol.

use std::sync::Arc;
use std::time::Duration;

use ruststream::runtime::Spawn;
use ruststream::Message;
use ruststream_pulsar::testing::TestApp;

use super::*;

fn movement(id: u64, account: &str, amount_cents: i64) -> Movement {
    Movement {
        id,
        account: account.into(),
        amount_cents,
    }
}

async fn start(spawn: Arc<dyn Spawn>, handling: Handling) -> (TestApp, Arc<Ledger>) {
    let ledger = Arc::new(Ledger::in_memory().expect("an in-memory ledger"));
    let books = Books {
        ledger: ledger.clone(),
    };
    let app = TestApp::with_state(
        app_on(PulsarBroker::new("pulsar://localhost:6650"), handling, None),
        books,
    )
    .on(spawn)
    .await
    .expect("the ledger starts");
    (app, ledger)
}

/// 250 movements published at once: three transactions (100, 100, then the last 50 at the
/// max wait), every balance right.
async fn a_transaction_per_batch(spawn: Arc<dyn Spawn>) {
    let (tb, ledger) = start(spawn, Handling::Batches).await;
    let movements: Vec<Movement> = (0..250)
        .map(|id| movement(id, if id % 2 == 0 { "alice" } else { "bob" }, 10))
        .collect();
    tb.publish_batch(movements.iter()).await.expect("published");
    assert_eq!(ledger.commits(), 2, "two full batches at once");
    tb.advance(Duration::from_millis(49)).await.unwrap();
    assert_eq!(ledger.commits(), 2, "the last 50 wait for the max wait");
    tb.advance(Duration::from_millis(1)).await.unwrap();
    assert_eq!(ledger.commits(), 3, "and go at 50 ms exactly");
    assert_eq!(ledger.movements().unwrap(), 250);
    assert_eq!(ledger.balance("alice").unwrap(), 1250);
    assert_eq!(ledger.balance("bob").unwrap(), 1250);
    assert_eq!(tb.calls_of("store_movements").len(), 250);
    tb.stop().await;
}

/// The same movements one by one: a transaction each.
async fn a_transaction_per_movement(spawn: Arc<dyn Spawn>) {
    let (tb, ledger) = start(spawn, Handling::OneByOne).await;
    let movements: Vec<Movement> = (0..25).map(|id| movement(id, "alice", 4)).collect();
    tb.publish_batch(movements.iter()).await.expect("published");
    assert_eq!(ledger.commits(), 25);
    assert_eq!(ledger.balance("alice").unwrap(), 100);
    tb.stop().await;
}

/// In one batch: a movement of zero goes to the dead-letter topic with its reason, one that
/// does not decode with `undecodable`, a duplicate is stored once; the rest are stored.
async fn a_bad_movement_goes_alone(spawn: Arc<dyn Spawn>) {
    let (tb, ledger) = start(spawn, Handling::Batches).await;
    let json = |m: &Movement| serde_json::to_vec(m).unwrap();
    let messages = vec![
        Message::new(MOVEMENTS, json(&movement(1, "alice", 500))),
        Message::new(MOVEMENTS, json(&movement(2, "alice", 0))),
        Message::new(MOVEMENTS, b"{\"id\": 3".to_vec()),
        Message::new(MOVEMENTS, json(&movement(1, "alice", 500))),
        Message::new(MOVEMENTS, json(&movement(4, "bob", -200))),
    ];
    tb.publish_batch(messages).await.expect("published");
    tb.advance(Duration::from_millis(50)).await.unwrap();
    assert_eq!(ledger.commits(), 1, "one transaction for the batch");
    assert_eq!(
        ledger.balance("alice").unwrap(),
        500,
        "the duplicate stored once"
    );
    assert_eq!(ledger.balance("bob").unwrap(), -200);
    let dead = tb.topic(MOVEMENTS_DLQ);
    let reasons: Vec<_> = dead
        .iter()
        .map(|m| {
            m.property("DEAD_LETTER_REASON")
                .unwrap_or("none")
                .to_owned()
        })
        .collect();
    assert_eq!(reasons, ["zero-amount", "undecodable"], "{dead:?}");
    tb.advance(Duration::from_secs(60)).await.unwrap();
    assert_eq!(
        tb.calls_of("store_movements").len(),
        5,
        "nothing comes back"
    );
    tb.stop().await;
}

/// A case, on the runtime it is given.
type Case = fn(Arc<dyn Spawn>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

fn on_all(case: Case) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tokio = ruststream_tokio_spawn(&rt);
    rt.block_on(case(tokio));
    async_std::task::block_on(case(Arc::new(ruststream_async_std::AsyncStdRuntime::new())));
    smol::block_on(case(Arc::new(ruststream_smol::SmolRuntime::global())));
}

fn ruststream_tokio_spawn(rt: &tokio::runtime::Runtime) -> Arc<dyn Spawn> {
    Arc::new(ruststream_tokio::TokioRuntime::new(rt.handle().clone()))
}

#[test]
fn batches_store_in_one_transaction_each() {
    on_all(|s| Box::pin(a_transaction_per_batch(s)));
}

#[test]
fn one_by_one_stores_a_transaction_each() {
    on_all(|s| Box::pin(a_transaction_per_movement(s)));
}

#[test]
fn a_bad_movement_goes_to_the_dead_letter_topic_alone() {
    on_all(|s| Box::pin(a_bad_movement_goes_alone(s)));
}
