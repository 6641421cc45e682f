//! Pulsar transactions with the official Java client on Apache Pulsar standalone: the helper
//! `tests/brokers/java/Transactions.java` checked against the broker (what a committed and an
//! aborted transaction leave visible to a subscriber), then its forwarding benchmark, one
//! transaction per message and one per 100 messages.
//!
//! The forwarding figures are benchmark data for the comparison with ruststream: printed (run
//! with `-- --nocapture` to see them), never asserted; only the counts are. A live test: a
//! missing JDK, Maven or classpath fails it with what to install, it never skips.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ruststream_test_brokers::{
    java_count_distinct, java_forward, java_produce, java_produce_aborted, java_produce_committed,
    unique_topic, ApacheStandalone, Distinct,
};

/// The broker settings: transactions (PIP-31), and batch-index acknowledgement, which the
/// transactional acknowledgement of a message in a batched entry needs for the entry to leave
/// the subscription once all of it is acknowledged (see `Transactions.java`'s header).
const SETTINGS: [&str; 2] = [
    "transactionCoordinatorEnabled=true",
    "acknowledgmentAtBatchIndexLevelEnabled=true",
];
/// How long the standalone may take to create its transaction coordinators' topic after it
/// serves `public/default`.
const COORDINATORS_WITHIN: Duration = Duration::from_secs(60);
/// The coordinators' topic: clients find the coordinators among its partitions, and building a
/// client with transactions fails while it has none.
const COORDINATORS: &str =
    "/admin/v2/persistent/pulsar/system/transaction_coordinator_assign/partitions";
/// A count ends after this long without a message.
const IDLE: Duration = Duration::from_secs(5);
/// Messages in each transactional production.
const PRODUCED: usize = 100;
/// Messages in each forwarding run: enough to check the tool (its figures, at volume, are
/// `scripts/bench --only=txn-forward`'s), few enough that one transaction per message stays
/// within seconds in CI.
const FORWARDED: usize = 300;
/// Partitions of the topics the transactional productions go to: one transaction then spans
/// several topics, as the count must too.
const PARTITIONS: u32 = 4;

#[test]
fn java_client_transactions_commit_abort_and_forward() {
    let started = Instant::now();
    let broker = ApacheStandalone::start_with(&SETTINGS).unwrap_or_else(|e| {
        panic!("{e}\nscripts/setup installs a JDK, Maven and curl (Debian packages)")
    });
    wait_for_coordinators(broker.http());
    let classpath = broker.java_classpath().unwrap_or_else(|e| panic!("{e}"));
    let url = broker.url();
    eprintln!(
        "broker with transactions ready after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Committed: every message once.
    let topic = unique_topic("txn-committed");
    broker
        .create_partitioned_topic(&topic, PARTITIONS)
        .unwrap_or_else(|e| panic!("{e}"));
    java_produce_committed(&classpath, &url, &topic, PRODUCED).unwrap_or_else(|e| panic!("{e}"));
    let seen = count(&classpath, &url, &topic, PRODUCED);
    assert_eq!(
        seen,
        Distinct {
            total: PRODUCED as u64,
            distinct: PRODUCED as u64,
            duplicates: Vec::new(),
        },
        "a committed transaction of {PRODUCED} messages on {topic}"
    );

    // Aborted: only the marker sent after the abort.
    let topic = unique_topic("txn-aborted");
    broker
        .create_partitioned_topic(&topic, PARTITIONS)
        .unwrap_or_else(|e| panic!("{e}"));
    java_produce_aborted(&classpath, &url, &topic, PRODUCED).unwrap_or_else(|e| panic!("{e}"));
    let seen = count(&classpath, &url, &topic, 1);
    assert_eq!(
        (seen.total, seen.distinct),
        (1, 1),
        "an aborted transaction of {PRODUCED} messages then one marker on {topic}: only the \
         marker must be visible ({seen:?})"
    );

    // Forwarding, one transaction per message, then per 100.
    for group in [1, 100] {
        let input = unique_topic(&format!("txn-forward-in-{group}"));
        let output = unique_topic(&format!("txn-forward-out-{group}"));
        java_produce(&classpath, &url, &input, FORWARDED).unwrap_or_else(|e| panic!("{e}"));
        let figures = java_forward(
            &classpath, &url, &input, &output, "forward", FORWARDED, group,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        println!(
            "Java client 4.0.7, forwarding in transactions of {group}: {} messages in {:.3} s, \
             {:.0} msg/s",
            figures.messages, figures.seconds, figures.per_second
        );
        let seen = count(&classpath, &url, &output, FORWARDED);
        assert_eq!(
            seen,
            Distinct {
                total: FORWARDED as u64,
                distinct: FORWARDED as u64,
                duplicates: Vec::new(),
            },
            "{FORWARDED} messages forwarded in transactions of {group} to {output}"
        );
    }
    eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
}

/// What a new subscription on `topic` receives, until [`IDLE`] passes without a message.
fn count(classpath: &str, url: &str, topic: &str, expected: usize) -> Distinct {
    java_count_distinct(classpath, url, topic, "count", expected, IDLE)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Wait until the coordinators' topic reports a partition: the standalone creates it itself
/// once transactions are on, some seconds after it serves `public/default`.
fn wait_for_coordinators(admin: SocketAddr) {
    let started = Instant::now();
    loop {
        let answer = get(admin, COORDINATORS);
        if partitions(&answer).is_some_and(|n| n >= 1) {
            eprintln!(
                "transaction coordinators found after {} ms",
                started.elapsed().as_millis()
            );
            return;
        }
        assert!(
            started.elapsed() < COORDINATORS_WITHIN,
            "the broker runs with transactionCoordinatorEnabled=true, yet after \
             {COORDINATORS_WITHIN:?} GET {COORDINATORS} still answers {answer:?}, not \
             {{\"partitions\":N}} with N >= 1; see pulsar.log in the broker's data folder \
             (the transaction coordinator's start)"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The `"partitions"` number in an admin answer, if it has one.
fn partitions(answer: &str) -> Option<u64> {
    let after = answer.split_once("\"partitions\":")?.1.trim_start();
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The whole HTTP/1.1 answer to `GET path`, headers included (enough to find a number in a
/// short JSON body), or what went wrong.
fn get(admin: SocketAddr, path: &str) -> String {
    let attempt = || -> std::io::Result<String> {
        let mut stream = TcpStream::connect_timeout(&admin, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n"
        )?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    attempt().unwrap_or_else(|error| format!("(no answer: {error})"))
}

#[test]
fn the_partition_count_is_read_from_the_admin_answer() {
    let answer = "HTTP/1.1 200 OK\r\n\r\n{\"partitions\":16,\"deleted\":false}";
    assert_eq!(partitions(answer), Some(16));
    assert_eq!(partitions("{\"partitions\": 0}"), Some(0));
    assert_eq!(partitions("HTTP/1.1 404 Not Found\r\n\r\n"), None);
}
