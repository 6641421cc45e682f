//! The official Pulsar clients, run as child processes so that a live test can compare what
//! ruststream does with what they do on the same broker: the Python client (PyPI
//! `pulsar-client` 3.13.0, over the C++ client) by `tests/brokers/python/keyed_publish.py`, and
//! the Java client 4.0.7 by `tests/brokers/java/KeyedPublish.java`, and by
//! `tests/brokers/java/Transactions.java` for transactions (messages produced in a committed or
//! an aborted transaction, what a subscriber then sees, and the Java contender of the
//! transactional forwarding benchmark).
//!
//! Each helper uses the client's DEFAULT producer settings, so it shows what a service written
//! with that client does without any tuning. The two clients do not agree with each other:
//! for a keyed message on a partitioned topic, the Python client picks the partition by
//! Boost's string hash (the C++ client's default `BoostHash`), the Java client by
//! `String.hashCode` (its default `JavaStringHash`).

use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::BrokerError;

/// The Python client version the helper script is written for (and scripts/setup installs).
pub(crate) const PYTHON_CLIENT: &str = "the Python client (pulsar-client 3.13.0)";
/// How to install it.
const PYTHON_INSTALL: &str =
    "install it with `python3 -m pip install pulsar-client==3.13.0` (scripts/setup does)";
/// The Java client: the one on the classpath start.sh caches.
const JAVA_CLIENT: &str = "the Java client (pulsar-client 4.0.7)";
/// How to get a JDK: `javac` compiles the Java helpers, `java` runs them.
const JAVA_INSTALL: &str = "install a JDK 17+ (scripts/setup does: Debian package \
     default-jdk-headless), or set JAVA_HOME to one";
/// What is wrong when `javac` cannot be found, and how to fix it.
const JAVAC_INSTALL: &str = "javac is missing: the Java helpers are compiled, which needs a JDK, \
     not only a JRE; install a JDK 17+ (scripts/setup does: Debian package \
     default-jdk-headless), or set JAVA_HOME to one";
/// How much of a failed child's stderr an error quotes (its last lines).
const STDERR_TAIL_LINES: usize = 40;

/// Publish one message per key to `topic` on the broker at `url` with the official Python
/// client's default producer settings (default routing mode and hashing: `BoostHash`; no
/// custom router), each with `partition_key` = the key and the key as payload, and return the
/// partition index of each returned message id (`MessageId.partition()`), in key order.
///
/// On a partitioned topic (see [`crate::ApacheStandalone::create_partitioned_topic`]) the
/// indexes are `0..partitions`; on a non-partitioned one they are all `-1`. Runs `python3
/// tests/brokers/python/keyed_publish.py URL TOPIC` with the keys as a JSON array on stdin.
/// Keys must be non-empty (the Python client sends an empty `partition_key` as no key at all)
/// and, to take the same keys as [`java_keyed_partitions`], have no line breaks.
pub fn python_keyed_partitions(
    url: &str,
    topic: &str,
    keys: &[String],
) -> Result<Vec<i32>, BrokerError> {
    check_keys(PYTHON_CLIENT, keys)?;
    let script = helper(PYTHON_CLIENT, "python/keyed_publish.py")?;
    let input = serde_json::to_vec(keys).map_err(|error| BrokerError::OtherClient {
        client: PYTHON_CLIENT,
        detail: format!("cannot write the keys as JSON ({error})"),
    })?;
    let mut command = Command::new("python3");
    command.arg(&script).arg(url).arg(topic);
    let run = Run {
        client: PYTHON_CLIENT,
        shown: format!("python3 {} {url} {topic}", script.display()),
        missing_program: "python3 is not on PATH; install Python 3 (Debian package python3)",
    };
    let stdout = run.output(command, input, |code, _stderr| match code {
        Some(3) => format!(
            "the `pulsar` module cannot be imported by the python3 on PATH: {PYTHON_INSTALL}"
        ),
        Some(2) => "keyed_publish.py rejected its arguments or input: a bug in \
                    test-brokers/src/other_clients.rs or the script"
            .to_owned(),
        _ => format!(
            "see its traceback below: is a broker serving {url}, and can {topic} be \
             published to? (if the `pulsar` module itself fails, reinstall it: \
             `python3 -m pip install --force-reinstall pulsar-client==3.13.0`)"
        ),
    })?;
    run.partitions(&stdout, keys.len())
}

/// Publish `count` messages, `{"id":0}` to `{"id":count-1}`, to `topic` on the broker at `url`
/// with the official Python client: one producer, batching on (all in one batch), compressed
/// with `codec` (`none`, `lz4`, `zlib`, `zstd`, `snappy`), and with `json_schema` a registered
/// JSON schema of a record with one integer field `id`. Runs
/// `python3 tests/brokers/python/interop.py produce ..`.
pub fn python_produce(
    url: &str,
    topic: &str,
    codec: &str,
    count: usize,
    json_schema: bool,
) -> Result<(), BrokerError> {
    let mut args = vec![
        "produce".to_owned(),
        url.to_owned(),
        topic.to_owned(),
        codec.to_owned(),
        count.to_string(),
    ];
    if json_schema {
        args.push("json-schema".to_owned());
    }
    python_interop(url, topic, &args).map(drop)
}

/// Receive up to `count` messages of `topic` on the broker at `url` with the official Python
/// client (a Shared subscription `subscription` from the earliest message), within `timeout`,
/// acknowledging each; their payloads as UTF-8, in the order received. Runs
/// `python3 tests/brokers/python/interop.py consume ..`.
pub fn python_consume(
    url: &str,
    topic: &str,
    subscription: &str,
    count: usize,
    timeout: std::time::Duration,
) -> Result<Vec<String>, BrokerError> {
    let args = [
        "consume".to_owned(),
        url.to_owned(),
        topic.to_owned(),
        subscription.to_owned(),
        count.to_string(),
        format!("{:.3}", timeout.as_secs_f64()),
    ];
    let stdout = python_interop(url, topic, &args)?;
    serde_json::from_str(stdout.trim()).map_err(|error| BrokerError::OtherClient {
        client: PYTHON_CLIENT,
        detail: format!(
            "interop.py consume printed {:?}, not a JSON array of strings ({error}); it must \
             print only that",
            stdout.chars().take(300).collect::<String>()
        ),
    })
}

/// Publish `count` orders, `{"id":0}` to `{"id":count-1}`, to `topic` on the broker at `url`
/// with the official Python client at its default producer settings (batching on); how many
/// entries they went into. Runs `python3 tests/brokers/python/forwarding.py produce ..`.
pub fn python_orders(url: &str, topic: &str, count: usize) -> Result<usize, BrokerError> {
    let count = count.to_string();
    let stdout = python_script(
        "forwarding.py",
        &["produce", url, topic, &count],
        Vec::new(),
        |_| None,
    )?;
    stdout
        .trim()
        .parse()
        .map_err(|error| BrokerError::OtherClient {
            client: PYTHON_CLIENT,
            detail: format!("forwarding.py produce printed {stdout:?}, not a count ({error})"),
        })
}

/// Read topics and peek at a subscription with the official Python client, as
/// `tests/brokers/python/forwarding.py snapshot` does (its docstring says `spec` and the
/// answer): what is on each topic to read, and what the subscription has not acknowledged,
/// each read until nothing came for `quiet`.
pub fn python_snapshot(
    url: &str,
    quiet: std::time::Duration,
    spec: &serde_json::Value,
) -> Result<serde_json::Value, BrokerError> {
    let input = serde_json::to_vec(spec).map_err(|error| BrokerError::OtherClient {
        client: PYTHON_CLIENT,
        detail: format!("cannot write the snapshot's spec as JSON ({error})"),
    })?;
    let quiet = format!("{:.3}", quiet.as_secs_f64());
    let stdout = python_script("forwarding.py", &["snapshot", url, &quiet], input, |_| None)?;
    serde_json::from_str(stdout.trim()).map_err(|error| BrokerError::OtherClient {
        client: PYTHON_CLIENT,
        detail: format!(
            "forwarding.py snapshot printed {:?}, not JSON ({error})",
            stdout.chars().take(300).collect::<String>()
        ),
    })
}

/// Run `tests/brokers/python/interop.py` with `args`; its stdout.
fn python_interop(url: &str, topic: &str, args: &[String]) -> Result<String, BrokerError> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    python_script("interop.py", &args, Vec::new(), |code| {
        (!matches!(code, Some(2 | 3))).then(|| {
            format!("see its traceback below: is a broker serving {url}, and can {topic} be used?")
        })
    })
}

/// Run the Python helper `tests/brokers/python/<file>` with `args`, and `input` on its stdin;
/// its stdout. `advice` explains a failure by its exit code; where it has nothing to say, exit
/// 3 means the `pulsar` module is missing and 2 that the script refused its arguments or input.
fn python_script(
    file: &str,
    args: &[&str],
    input: Vec<u8>,
    advice: impl FnOnce(Option<i32>) -> Option<String>,
) -> Result<String, BrokerError> {
    python_helper(&format!("python/{file}"), args, input, advice)
}

/// Run the Python helper `tests/brokers/<path>` as [`python_script`] runs those of
/// `tests/brokers/python/`. `args` are shown in errors: no secret among them (pass secrets in
/// `input`).
pub(crate) fn python_helper(
    path: &str,
    args: &[&str],
    input: Vec<u8>,
    advice: impl FnOnce(Option<i32>) -> Option<String>,
) -> Result<String, BrokerError> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let script = helper(PYTHON_CLIENT, path)?;
    let mut command = Command::new("python3");
    command.arg(&script).args(args);
    let run = Run {
        client: PYTHON_CLIENT,
        shown: format!("python3 {} {}", script.display(), args.join(" ")),
        missing_program: "python3 is not on PATH; install Python 3 (Debian package python3)",
    };
    run.output(command, input, |code, _stderr| match (code, advice(code)) {
        (_, Some(advice)) => advice,
        (Some(3), None) => format!(
            "the `pulsar` module cannot be imported by the python3 on PATH: {PYTHON_INSTALL}"
        ),
        (Some(2), None) => format!(
            "{file} rejected its arguments or input: a bug in test-brokers/src/other_clients.rs \
             or the script"
        ),
        (_, None) => "see its traceback below".to_owned(),
    })
}

/// Run the official Python client as a typed producer or consumer with a registered schema
/// (`tests/brokers/python/typed_schema.py`, whose docstring says the arguments, the JSON on
/// stdin and the JSON it prints): `args` after the script's name, e.g. `["produce", url,
/// topic, "avro"]`. Returns what it printed. The broker's refusal of the producer or of the
/// subscription is an error whose detail starts with `refused:` and quotes the client's
/// reason.
pub fn python_typed(args: &[&str], input: &serde_json::Value) -> Result<String, BrokerError> {
    let input = serde_json::to_vec(input).map_err(|error| BrokerError::OtherClient {
        client: PYTHON_CLIENT,
        detail: format!("cannot write the input as JSON ({error})"),
    })?;
    python_script("typed_schema.py", args, input, |code| match code {
        Some(3) => Some(
            "a module is missing: install `python3 -m pip install \
             'pulsar-client[avro]==3.13.0' 'protobuf>=6,<7'` (scripts/setup does)"
                .to_owned(),
        ),
        Some(4) => Some("refused: the broker refused the producer or the subscription".to_owned()),
        Some(5) => Some("the consumer received fewer records than asked within 60 s".to_owned()),
        _ => None,
    })
}

/// Publish one message per key to `topic` on the broker at `url` with the official Java
/// client 4.0.7's default producer settings (default `MessageRoutingMode`, which is
/// `RoundRobinPartition`, and default `HashingScheme`, which is `JavaStringHash`; no custom
/// router), each with the key as message key and payload, and return the partition index of
/// each returned message id (`MessageIdAdv.getPartitionIndex()`), in key order.
///
/// `classpath` holds the Java client and its dependencies:
/// [`crate::ApacheStandalone::java_classpath`]. On a partitioned topic the indexes are
/// `0..partitions`; on a non-partitioned one they are all `-1`. Runs
/// `tests/brokers/java/KeyedPublish.java URL TOPIC` with the keys on stdin, one per line: the
/// program is compiled once by `javac` and cached, then launched with `java -cp
/// CLASSES:CLASSPATH KeyedPublish ..` (the single-file source launch would compile it anew on
/// every launch, seconds each); `java` and `javac` are `$JAVA_HOME/bin/..` when `JAVA_HOME` is
/// set (as for `start.sh`), else the ones on PATH, so a JDK is needed, not only a JRE. Keys must
/// be non-empty and have no line breaks.
pub fn java_keyed_partitions(
    classpath: &str,
    url: &str,
    topic: &str,
    keys: &[String],
) -> Result<Vec<i32>, BrokerError> {
    check_keys(JAVA_CLIENT, keys)?;
    let mut input = keys.join("\n").into_bytes();
    input.push(b'\n');
    let (run, stdout) = java_program(
        classpath,
        "KeyedPublish.java",
        &[url, topic],
        input,
        |code| match code {
            Some(2) => "KeyedPublish.java rejected its arguments: a bug in \
                        test-brokers/src/other_clients.rs"
                .to_owned(),
            _ => format!(
                "see its stack trace below: is a broker serving {url}, and can {topic} be \
                 published to?"
            ),
        },
    )?;
    run.partitions(&stdout, keys.len())
}

/// What [`java_count_distinct`] received on a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distinct {
    /// Every message received, duplicates included.
    pub total: u64,
    /// Distinct payloads (compared as text) among them.
    pub distinct: u64,
    /// The payloads received more than once (at most 20 of them), in the order first seen.
    pub duplicates: Vec<String>,
}

/// What [`java_forward`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForwardFigures {
    /// Messages forwarded (the `count` asked for).
    pub messages: u64,
    /// From the first message received to the last commit completed.
    pub seconds: f64,
    /// `messages / seconds`.
    pub per_second: f64,
}

/// Publish `count` messages, `{"id":0}` to `{"id":count-1}`, to `topic` on the broker at `url`
/// with the official Java client's default producer (batching on), outside any transaction:
/// the input of [`java_forward`]. Runs `tests/brokers/java/Transactions.java produce URL TOPIC
/// COUNT`, compiled once and cached; `classpath`, `java` and `javac` as for
/// [`java_keyed_partitions`].
pub fn java_produce(
    classpath: &str,
    url: &str,
    topic: &str,
    count: usize,
) -> Result<(), BrokerError> {
    java_produce_with(classpath, "produce", "produced", url, topic, count)
}

/// Publish `count` messages, `{"id":1000000}` onwards, to `topic` (which may be partitioned)
/// on the broker at `url` with the official Java client, all in one transaction that is then
/// COMMITTED: a subscriber must see each of them once. The broker must run with
/// `transactionCoordinatorEnabled=true`. Runs `Transactions.java produce-committed ..`.
pub fn java_produce_committed(
    classpath: &str,
    url: &str,
    topic: &str,
    count: usize,
) -> Result<(), BrokerError> {
    java_produce_with(
        classpath,
        "produce-committed",
        "committed",
        url,
        topic,
        count,
    )
}

/// Publish `count` messages, `{"id":1000000}` onwards, to `topic` (which may be partitioned)
/// on the broker at `url` with the official Java client in one transaction that is then
/// ABORTED, and after the abort one message `{"id":-1}` outside any transaction: a subscriber
/// must see that marker and none of the others (the marker shows the aborted messages were
/// hidden, not merely slow). The broker must run with `transactionCoordinatorEnabled=true`.
/// Runs `Transactions.java produce-aborted ..`.
pub fn java_produce_aborted(
    classpath: &str,
    url: &str,
    topic: &str,
    count: usize,
) -> Result<(), BrokerError> {
    java_produce_with(classpath, "produce-aborted", "aborted", url, topic, count)
}

/// Receive what `topic` (which may be partitioned) holds for `subscription` (Shared, from the
/// earliest message) with the official Java client, acknowledging each message, until nothing
/// arrives for `idle`; how many messages, how many distinct payloads, and which payloads came
/// more than once. `expected` (the distinct payloads the caller expects) does not end the
/// count early, so that a duplicate or a wrongly visible message after them is counted too;
/// the helper logs it beside what it saw. Runs `Transactions.java count ..`.
pub fn java_count_distinct(
    classpath: &str,
    url: &str,
    topic: &str,
    subscription: &str,
    expected: usize,
    idle: std::time::Duration,
) -> Result<Distinct, BrokerError> {
    let expected = java_int("expected", expected)?;
    let idle = java_int(
        "idle (in milliseconds)",
        usize::try_from(idle.as_millis().max(1)).unwrap_or(usize::MAX),
    )?;
    let answer = java_transactions(
        classpath,
        "count",
        &[url, topic, subscription, &expected, &idle],
        &format!("is a broker serving {url}, and can {topic} be subscribed to?"),
    )?;
    let total = answer["total"].as_u64();
    let distinct = answer["distinct"].as_u64();
    let duplicates: Option<Vec<String>> = answer["duplicates"].as_array().and_then(|list| {
        list.iter()
            .map(|payload| payload.as_str().map(str::to_owned))
            .collect()
    });
    match (total, distinct, duplicates) {
        (Some(total), Some(distinct), Some(duplicates)) => Ok(Distinct {
            total,
            distinct,
            duplicates,
        }),
        _ => Err(unexpected_answer(
            "count",
            &answer,
            r#"{"total":N,"distinct":D,"duplicates":["..",..]}"#,
        )),
    }
}

/// Forward `count` messages from `input` to `output` on the broker at `url` with the official
/// Java client, one transaction for each `group` of them (the last may be smaller), and time
/// it: the Java contender of the transactional forwarding benchmark. A Shared consumer of
/// `subscription` on `input` (from the earliest message) and a producer on `output` with the
/// client's defaults (batching on); each message's payload `{"id":n}` is decoded with Jackson
/// and sent re-encoded in the transaction, and acknowledged in the transaction. One
/// transaction at a time; within it the sends and acknowledgements are asynchronous, and
/// complete before the commit, as the client requires.
///
/// The broker must run with `transactionCoordinatorEnabled=true` and, since the input's
/// entries are batches, `acknowledgmentAtBatchIndexLevelEnabled=true` (without it the entries
/// acknowledged in transactions are never removed from the subscription; see
/// `tests/brokers/java/Transactions.java`). `input` must hold `count` messages
/// ([`java_produce`]); the helper fails if none comes for 60 s before then. Runs
/// `Transactions.java forward URL IN OUT SUBSCRIPTION COUNT GROUP`.
pub fn java_forward(
    classpath: &str,
    url: &str,
    input: &str,
    output: &str,
    subscription: &str,
    count: usize,
    group: usize,
) -> Result<ForwardFigures, BrokerError> {
    let asked = count;
    let count = java_int("count", count)?;
    let group = java_int("group", group)?;
    let answer = java_transactions(
        classpath,
        "forward",
        &[url, input, output, subscription, &count, &group],
        &format!(
            "is a broker serving {url} with transactionCoordinatorEnabled=true, and can {input} \
             and {output} be used?"
        ),
    )?;
    let messages = answer["messages"].as_u64();
    let seconds = answer["seconds"].as_f64();
    let per_second = answer["per_second"].as_f64();
    match (messages, seconds, per_second) {
        (Some(messages), Some(seconds), Some(per_second))
            if usize::try_from(messages) == Ok(asked) =>
        {
            Ok(ForwardFigures {
                messages,
                seconds,
                per_second,
            })
        }
        _ => Err(unexpected_answer(
            "forward",
            &answer,
            &format!(r#"{{"messages":{asked},"seconds":S,"per_second":R}}"#),
        )),
    }
}

/// `Transactions.java <command> URL TOPIC COUNT`, which prints `{"<key>":COUNT}`.
fn java_produce_with(
    classpath: &str,
    command: &str,
    key: &str,
    url: &str,
    topic: &str,
    count: usize,
) -> Result<(), BrokerError> {
    let asked = java_int("count", count)?;
    let transactions = if command == "produce" {
        ""
    } else {
        " with transactionCoordinatorEnabled=true (and its coordinators' topic, \
         pulsar/system/transaction_coordinator_assign, partitioned)"
    };
    let answer = java_transactions(
        classpath,
        command,
        &[url, topic, &asked],
        &format!("is a broker serving {url}{transactions}, and can {topic} be published to?"),
    )?;
    if answer[key].as_u64().and_then(|n| usize::try_from(n).ok()) == Some(count) {
        return Ok(());
    }
    Err(unexpected_answer(
        command,
        &answer,
        &format!(r#"{{"{key}":{count}}}"#),
    ))
}

/// Run `tests/brokers/java/Transactions.java <command> <args>`; the JSON line it printed.
/// `broker_question` is what to check when it fails for a reason of its own (exit 1).
fn java_transactions(
    classpath: &str,
    command: &str,
    args: &[&str],
    broker_question: &str,
) -> Result<serde_json::Value, BrokerError> {
    let mut all = vec![command];
    all.extend_from_slice(args);
    let (run, stdout) =
        java_program(
            classpath,
            "Transactions.java",
            &all,
            Vec::new(),
            |code| match code {
                Some(2) => format!(
                    "Transactions.java rejected its arguments ({command}): a bug in \
                 test-brokers/src/other_clients.rs or the program"
                ),
                Some(3) => "the input ran dry (see the reason below): publish the messages to \
                        forward first (java_produce)"
                    .to_owned(),
                _ => format!("see its stack trace below: {broker_question}"),
            },
        )?;
    serde_json::from_str(stdout.trim()).map_err(|error| BrokerError::OtherClient {
        client: JAVA_CLIENT,
        detail: format!(
            "`{}` printed {:?}, not one line of JSON ({error}); Transactions.java must print \
             only that on stdout",
            run.shown,
            stdout.chars().take(300).collect::<String>()
        ),
    })
}

/// `value` as an argument of a Java helper, which reads it as a positive `int`.
fn java_int(name: &str, value: usize) -> Result<String, BrokerError> {
    if value == 0 || i32::try_from(value).is_err() {
        return Err(BrokerError::OtherClient {
            client: JAVA_CLIENT,
            detail: format!(
                "{name} is {value}; the Java helpers take 1 to {} (a Java int)",
                i32::MAX
            ),
        });
    }
    Ok(value.to_string())
}

/// The error for an answer of `Transactions.java <command>` that is not what it prints.
fn unexpected_answer(command: &str, answer: &serde_json::Value, wanted: &str) -> BrokerError {
    BrokerError::OtherClient {
        client: JAVA_CLIENT,
        detail: format!(
            "`Transactions.java {command}` printed {answer}, not {wanted}: the program and \
             test-brokers/src/other_clients.rs disagree"
        ),
    }
}

/// Run the Java program `tests/brokers/java/<file>` with `args` and `input` on its stdin, on
/// `classpath` (which must hold the Java client); the run (for messages) and its stdout.
/// `advice` explains a failure by its exit code when the cause is not the classpath or the JVM.
///
/// The program is compiled once by `javac` ([`compiled_helper`]) and launched from its classes,
/// `java -cp CLASSES:CLASSPATH <Class> ARGS`, not by Java's single-file source launch (`java -cp
/// CLASSPATH File.java`, which needs no build step): that one compiles the source anew on every
/// launch, 3 to 10 s each on a 2-core machine (more when it is busy), and the live tests launch
/// the helpers many times (`java_transactions` ten). `java` and `javac` are
/// `$JAVA_HOME/bin/java` and `$JAVA_HOME/bin/javac` when `JAVA_HOME` is set (as for `start.sh`),
/// else the ones on PATH.
fn java_program(
    classpath: &str,
    file: &str,
    args: &[&str],
    input: Vec<u8>,
    advice: impl FnOnce(Option<i32>) -> String,
) -> Result<(Run, String), BrokerError> {
    if classpath.trim().is_empty() {
        return Err(BrokerError::OtherClient {
            client: JAVA_CLIENT,
            detail: "the classpath is empty; pass ApacheStandalone::java_classpath(), which \
                     holds pulsar-client-original-4.0.7.jar"
                .to_owned(),
        });
    }
    let program = helper(JAVA_CLIENT, &format!("java/{file}"))?;
    let jdk = Jdk::from_env();
    let classes = compiled_helper(&jdk, classpath, file, &program, &class_cache())?;
    let class = class_name(file);
    // The compiled classes first, so that they are the ones found under the helper's names.
    let mut full = OsString::from(classes.as_os_str());
    full.push(":");
    full.push(classpath);
    let mut command = Command::new(&jdk.java);
    command.arg("-cp").arg(&full).arg(class).args(args);
    let run = Run {
        client: JAVA_CLIENT,
        shown: format!(
            "{} -cp {}:<classpath> {class} {}",
            jdk.java.display(),
            classes.display(),
            args.join(" ")
        ),
        missing_program: JAVA_INSTALL,
    };
    let stdout = run.output(command, input, |code, stderr| {
        if stderr.contains("UnsupportedClassVersionError") || stderr.contains("Unrecognized option")
        {
            format!(
                "this java is too old for the client or for the classes javac compiled (java \
                 and javac must come from one JDK; JAVA_HOME picks both): {JAVA_INSTALL}"
            )
        } else if stderr.contains("Could not find or load main class")
            || stderr.contains(&format!("NoClassDefFoundError: {class}"))
        {
            format!(
                "the classes compiled from {file} in {} are incomplete: delete that directory \
                 (the next run compiles {file} again)",
                classes.display()
            )
        } else {
            advice(code)
        }
    })?;
    Ok((run, stdout))
}

/// Where the JDK's programs are: `$JAVA_HOME/bin/` when `JAVA_HOME` is set (as for `start.sh`),
/// else PATH.
struct Jdk {
    /// Runs the helpers.
    java: PathBuf,
    /// Compiles them; a JRE has none.
    javac: PathBuf,
}

impl Jdk {
    /// The JDK `JAVA_HOME` names, else the one on PATH.
    fn from_env() -> Self {
        match std::env::var_os("JAVA_HOME").filter(|home| !home.is_empty()) {
            Some(home) => Jdk {
                java: Path::new(&home).join("bin").join("java"),
                javac: Path::new(&home).join("bin").join("javac"),
            },
            None => Jdk {
                java: PathBuf::from("java"),
                javac: PathBuf::from("javac"),
            },
        }
    }
}

/// The Java helper `source` (`tests/brokers/java/<file>`) compiled against `classpath`: a
/// directory under `cache` holding `<Class>.class`, compiled by `javac` on the first call and
/// reused by every later one, in this process or another ([`cached`]).
///
/// The directory is named after the class and the SHA-256 of the source, the classpath and
/// where `javac` really is (symbolic links resolved), so that an edited helper, another client
/// version or another JDK (`update-alternatives` switches them by a link) is compiled anew
/// rather than run stale. The directories of earlier versions stay behind: a few tens of
/// kilobytes each, and deleting them is always safe.
fn compiled_helper(
    jdk: &Jdk,
    classpath: &str,
    file: &str,
    source: &Path,
    cache: &Path,
) -> Result<PathBuf, BrokerError> {
    let mut key = std::fs::read(source).map_err(|error| BrokerError::OtherClient {
        client: JAVA_CLIENT,
        detail: format!(
            "cannot read its helper {} ({error}); it belongs to this workspace \
             (tests/brokers/java/{file}): restore it from version control",
            source.display()
        ),
    })?;
    for part in [
        classpath.as_bytes(),
        real_path(&jdk.javac).as_os_str().as_encoded_bytes(),
    ] {
        key.push(0);
        key.extend_from_slice(part);
    }
    let sum = sha256_hex(key)?;
    let class = class_name(file);
    cached(
        cache,
        &format!("{class}-{}", &sum[..16]),
        &format!("{class}.class"),
        |out| javac(jdk, classpath, file, source, out),
    )
}

/// Where compiled helpers are kept: `java-classes/` beside the Java classpath start.sh caches,
/// `${PULSAR_M2_REPO:-$HOME/.m2/repository}/../ruststream-pulsar-standalone` (see
/// `ApacheStandalone::java_classpath`): the user's own, and kept as long as that classpath is.
/// Under the system temp dir when neither variable is set.
fn class_cache() -> PathBuf {
    let repo = std::env::var_os("PULSAR_M2_REPO")
        .filter(|repo| !repo.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| Path::new(&home).join(".m2").join("repository"))
        });
    match repo {
        Some(repo) => repo
            .join("..")
            .join("ruststream-pulsar-standalone")
            .join("java-classes"),
        None => std::env::temp_dir().join("ruststream-java-classes"),
    }
}

/// The class a helper file holds, which its name gives: `Transactions.java` -> `Transactions`.
fn class_name(file: &str) -> &str {
    file.strip_suffix(".java").unwrap_or(file)
}

/// `cache/<name>`, made by `build` unless it already holds `class_file`.
///
/// Cargo runs test binaries one at a time but a binary's tests in parallel, and several
/// processes may share the cache, so two of them may build the same directory at once. Each
/// builds into a temporary directory of its own under `cache` and renames it into place: a
/// directory in place is always complete, whoever built it. The rename that loses the race
/// (the winner's directory is in place) is fine: the loser drops its copy and takes the
/// winner's, which is compiled from the same source.
fn cached(
    cache: &Path,
    name: &str,
    class_file: &str,
    build: impl FnOnce(&Path) -> Result<(), BrokerError>,
) -> Result<PathBuf, BrokerError> {
    let fail = |detail: String| BrokerError::OtherClient {
        client: JAVA_CLIENT,
        detail,
    };
    let dir = cache.join(name);
    if dir.join(class_file).is_file() {
        return Ok(dir);
    }
    std::fs::create_dir_all(cache).map_err(|error| {
        fail(format!(
            "cannot create {}, where the compiled Java helpers are kept ({error}); make it \
             writable, or set PULSAR_M2_REPO (it is beside that)",
            cache.display()
        ))
    })?;
    // Removed on drop: when `build` fails, and when another process's copy won.
    let building = tempfile::Builder::new()
        .prefix(&format!(".{name}.building-"))
        .tempdir_in(cache)
        .map_err(|error| {
            fail(format!(
                "cannot create a directory in {} to compile a Java helper into ({error}); \
                 make it writable",
                cache.display()
            ))
        })?;
    build(building.path())?;
    if !building.path().join(class_file).is_file() {
        return Err(fail(format!(
            "javac compiled no {class_file}: the helper's public class must be named after its \
             file"
        )));
    }
    match std::fs::rename(building.path(), &dir) {
        Ok(()) => {
            // Moved: nothing left to remove.
            let _ = building.keep();
            Ok(dir)
        }
        Err(_) if dir.join(class_file).is_file() => Ok(dir),
        Err(error) => Err(fail(format!(
            "cannot move the compiled Java helper into {} ({error}); if that directory exists, \
             it is not what this cache puts there: delete it",
            dir.display()
        ))),
    }
}

/// Compile `source` (`tests/brokers/java/<file>`) against `classpath` into `out` with `javac`,
/// as the single-file source launch would compile it (no annotation processing: the
/// classpath's jars carry processors, log4j's among them, that the helpers do not want).
fn javac(
    jdk: &Jdk,
    classpath: &str,
    file: &str,
    source: &Path,
    out: &Path,
) -> Result<(), BrokerError> {
    let mut command = Command::new(&jdk.javac);
    command
        .args(["-proc:none", "-encoding", "UTF-8", "-cp"])
        .arg(classpath)
        .arg("-d")
        .arg(out)
        .arg(source);
    let run = Run {
        client: JAVA_CLIENT,
        shown: format!(
            "{} -proc:none -encoding UTF-8 -cp <classpath> -d {} {}",
            jdk.javac.display(),
            out.display(),
            source.display()
        ),
        missing_program: JAVAC_INSTALL,
    };
    run.output(command, Vec::new(), |_code, stderr| {
        javac_advice(file, stderr)
    })
    .map(drop)
}

/// What to do when `javac` fails to compile `file` with `stderr`.
fn javac_advice(file: &str, stderr: &str) -> String {
    if stderr.contains("class file has wrong version")
        || stderr.contains("release version")
        || stderr.contains("invalid source release")
    {
        format!("this javac is too old for the client or for {file}: {JAVA_INSTALL}")
    } else {
        format!(
            "javac could not compile {file}: if it says a package org.apache.pulsar.client.api \
             (or com.fasterxml.jackson) does not exist, the classpath lacks the Java client; \
             pass ApacheStandalone::java_classpath(), which holds \
             pulsar-client-original-4.0.7.jar and jackson-databind; otherwise fix \
             tests/brokers/java/{file}"
        )
    }
}

/// Where `program` (a path, or a name to look up on PATH) really is, symbolic links resolved;
/// `program` itself when it cannot be found (running it then says what is wrong).
fn real_path(program: &Path) -> PathBuf {
    let found = if program.components().count() > 1 {
        Some(program.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
    };
    found
        .and_then(|path| path.canonicalize().ok())
        .unwrap_or_else(|| program.to_path_buf())
}

/// The SHA-256 of `bytes` in hex, by `sha256sum` (GNU coreutils, which start.sh needs too).
fn sha256_hex(bytes: Vec<u8>) -> Result<String, BrokerError> {
    let run = Run {
        client: JAVA_CLIENT,
        shown: "sha256sum".to_owned(),
        missing_program: "sha256sum names the compiled Java helpers' directory: install GNU \
                          coreutils (Debian package coreutils), which start.sh needs too",
    };
    let stdout = run.output(Command::new("sha256sum"), bytes, |_, _| {
        "sha256sum names the compiled Java helpers' directory".to_owned()
    })?;
    match stdout.split_whitespace().next() {
        Some(sum) if sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(sum.to_owned())
        }
        _ => Err(BrokerError::OtherClient {
            client: JAVA_CLIENT,
            detail: format!(
                "sha256sum printed {:?}, not a SHA-256 in hex; the sha256sum on PATH must be \
                 GNU coreutils'",
                stdout.chars().take(200).collect::<String>()
            ),
        }),
    }
}

/// `tests/brokers/<file>` in this workspace, which must exist.
fn helper(client: &'static str, file: &str) -> Result<PathBuf, BrokerError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("brokers")
        .join(file);
    if path.is_file() {
        return Ok(path);
    }
    Err(BrokerError::OtherClient {
        client,
        detail: format!(
            "its helper {} is missing; it belongs to this workspace (tests/brokers/{file}): \
             restore it from version control",
            path.display()
        ),
    })
}

/// Keys both helpers can pass on as keys: non-empty, without line breaks.
fn check_keys(client: &'static str, keys: &[String]) -> Result<(), BrokerError> {
    match keys
        .iter()
        .position(|key| key.is_empty() || key.contains(['\n', '\r']))
    {
        None => Ok(()),
        Some(at) => Err(BrokerError::OtherClient {
            client,
            detail: format!(
                "key {at} ({:?}) is empty or has a line break; the helpers take non-empty keys \
                 without line breaks (the Python client sends an empty key as no key, and the \
                 Java helper reads one key per line)",
                keys[at]
            ),
        }),
    }
}

/// One run of a helper: what to call it in errors.
struct Run {
    /// Which client.
    client: &'static str,
    /// The command line, for error messages.
    shown: String,
    /// What to do when the program cannot be found.
    missing_program: &'static str,
}

impl Run {
    /// Run `command` with `input` on its stdin; its stdout, or an error built with `advice`
    /// (given the exit code and the stderr) if it fails.
    fn output(
        &self,
        mut command: Command,
        input: Vec<u8>,
        advice: impl FnOnce(Option<i32>, &str) -> String,
    ) -> Result<String, BrokerError> {
        let fail = |detail: String| BrokerError::OtherClient {
            client: self.client,
            detail,
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| {
                fail(if error.kind() == ErrorKind::NotFound {
                    format!(
                        "cannot run `{}` ({error}): {}",
                        self.shown, self.missing_program
                    )
                } else {
                    format!("cannot run `{}` ({error})", self.shown)
                })
            })?;
        // Written from another thread: a child that logs a lot before reading its stdin would
        // otherwise block on a full stderr pipe while we block on a full stdin pipe.
        let stdin = child.stdin.take();
        let writer = std::thread::spawn(move || match stdin {
            Some(mut stdin) => stdin.write_all(&input),
            None => Ok(()),
        });
        let output = child
            .wait_with_output()
            .map_err(|error| fail(format!("waiting for `{}` failed ({error})", self.shown)))?;
        let written = writer.join().unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the thread writing the keys panicked",
            ))
        });
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(fail(format!(
                "`{}` exited with {}. {}\nIts stderr ends with:\n{}",
                self.shown,
                output.status,
                advice(output.status.code(), &stderr),
                tail(&stderr)
            )));
        }
        written.map_err(|error| {
            fail(format!(
                "writing the keys to `{}` failed ({error}), yet it exited successfully; its \
                 stderr ends with:\n{}",
                self.shown,
                tail(&stderr)
            ))
        })?;
        String::from_utf8(output.stdout).map_err(|error| {
            fail(format!(
                "`{}` printed non-UTF-8 output ({error}); its stderr ends with:\n{}",
                self.shown,
                tail(&stderr)
            ))
        })
    }

    /// The partition indexes printed on `stdout`: a JSON array with one per key.
    fn partitions(&self, stdout: &str, keys: usize) -> Result<Vec<i32>, BrokerError> {
        let partitions: Vec<i32> =
            serde_json::from_str(stdout.trim()).map_err(|error| BrokerError::OtherClient {
                client: self.client,
                detail: format!(
                    "`{}` printed {:?} on stdout, not a JSON array of partition indexes \
                     ({error}); its helper in tests/brokers/ must print only that",
                    self.shown,
                    stdout.chars().take(300).collect::<String>()
                ),
            })?;
        if partitions.len() != keys {
            return Err(BrokerError::OtherClient {
                client: self.client,
                detail: format!(
                    "`{}` printed {} partition indexes for {keys} keys; its helper in \
                     tests/brokers/ must print one per key",
                    self.shown,
                    partitions.len()
                ),
            });
        }
        Ok(partitions)
    }
}

/// One message for [`python_chunked_publish`]: its payload (UTF-8 text) and key, if any.
pub type ChunkedMessage = (String, Option<String>);

/// Publish `messages` to `topic` on the broker at `url` with the official Python client's
/// producer set for chunking as the client requires it (`chunking_enabled=True`,
/// `batching_enabled=False`): a payload over the broker's `maxMessageSize` is stored as chunks
/// of that size (PIP-37); with `codec` (`lz4`, `zlib`, `zstd`, `snappy`) each message is
/// compressed whole before it is split, as the client does. Returns the ids `send()` returned,
/// as the client prints them. Runs `python3 tests/brokers/python/chunked.py publish URL TOPIC
/// [CODEC]` with the messages as JSON on stdin.
pub fn python_chunked_publish(
    url: &str,
    topic: &str,
    messages: &[ChunkedMessage],
    codec: Option<&str>,
) -> Result<Vec<String>, BrokerError> {
    let input: Vec<serde_json::Value> = messages
        .iter()
        .map(|(payload, key)| serde_json::json!({ "payload": payload, "key": key }))
        .collect();
    let mut args = vec!["publish", url, topic];
    args.extend(codec);
    let stdout = python_chunked(&args, serde_json::to_vec(&input).unwrap_or_default())?;
    let ids = parse_answer(&stdout, "publish")?;
    Ok(ids
        .iter()
        .map(|id| id.as_str().map_or_else(|| id.to_string(), str::to_owned))
        .collect())
}

/// What [`python_receive`] received of one message: its size in bytes and its properties.
pub type ReceivedByPython = (usize, std::collections::BTreeMap<String, String>);

/// Receive `count` messages of `topic` on `subscription` (Shared, from the earliest) with the
/// official Python client, which joins chunked messages itself, and acknowledge them: the size
/// and properties of each. Fails if they do not all come within 60 s. Runs `python3
/// tests/brokers/python/chunked.py receive URL TOPIC SUBSCRIPTION COUNT`.
pub fn python_receive(
    url: &str,
    topic: &str,
    subscription: &str,
    count: usize,
) -> Result<Vec<ReceivedByPython>, BrokerError> {
    let count = count.to_string();
    let stdout = python_chunked(&["receive", url, topic, subscription, &count], Vec::new())?;
    let answers = parse_answer(&stdout, "receive")?;
    answers
        .iter()
        .map(|answer| {
            let size = answer["size"]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok());
            let properties = answer["properties"].as_object().map(|pairs| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            });
            size.zip(properties)
                .ok_or_else(|| BrokerError::OtherClient {
                    client: PYTHON_CLIENT,
                    detail: format!(
                    "`chunked.py receive` printed {answer}, not {{\"size\": n, \"properties\": \
                     {{..}}}}"
                ),
                })
        })
        .collect()
}

/// Run `chunked.py` with `args` and `input` on stdin; its stdout.
fn python_chunked(args: &[&str], input: Vec<u8>) -> Result<String, BrokerError> {
    python_script("chunked.py", args, input, |code| {
        (!matches!(code, Some(2 | 3))).then(|| {
            "see its traceback below: is the broker up, and did every message come within 60 s?"
                .to_owned()
        })
    })
}

/// `stdout` of `chunked.py <command>` read as the JSON it prints.
fn parse_answer(stdout: &str, command: &str) -> Result<Vec<serde_json::Value>, BrokerError> {
    serde_json::from_str(stdout.trim()).map_err(|error| BrokerError::OtherClient {
        client: PYTHON_CLIENT,
        detail: format!(
            "`chunked.py {command}` printed {:?}, not the JSON it is written to print ({error})",
            stdout.chars().take(300).collect::<String>()
        ),
    })
}

/// The last [`STDERR_TAIL_LINES`] lines of `stderr` (or a note that it is empty).
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    if lines.is_empty() {
        return "(nothing)".to_owned();
    }
    let start = lines.len().saturating_sub(STDERR_TAIL_LINES);
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_the_helpers_cannot_pass_on_are_refused_by_position() {
        let keys = vec!["a".to_owned(), "b\nc".to_owned()];
        let error = check_keys(JAVA_CLIENT, &keys).unwrap_err().to_string();
        assert!(error.contains("key 1 (\"b\\nc\")"), "{error}");
        let error = python_keyed_partitions("pulsar://127.0.0.1:1", "t", &[String::new()])
            .unwrap_err()
            .to_string();
        assert!(error.contains("key 0 (\"\")"), "{error}");
    }

    #[test]
    fn the_helpers_exist_where_the_functions_look() {
        helper(PYTHON_CLIENT, "python/keyed_publish.py").unwrap();
        helper(PYTHON_CLIENT, "python/interop.py").unwrap();
        helper(JAVA_CLIENT, "java/KeyedPublish.java").unwrap();
        helper(JAVA_CLIENT, "java/Transactions.java").unwrap();
        let error = helper(JAVA_CLIENT, "java/Missing.java")
            .unwrap_err()
            .to_string();
        assert!(error.contains("Missing.java is missing"), "{error}");
    }

    #[test]
    fn counts_the_java_helpers_cannot_read_as_an_int_are_refused_before_running_java() {
        assert_eq!(java_int("count", 2_000).unwrap(), "2000");
        let error = java_int("group", 0).unwrap_err().to_string();
        assert!(error.contains("group is 0"), "{error}");
        let error = java_forward("cp", "pulsar://127.0.0.1:1", "a", "b", "s", 10, 1 << 31)
            .unwrap_err()
            .to_string();
        assert!(error.contains("group is 2147483648"), "{error}");
        let error = java_produce_aborted(" ", "pulsar://127.0.0.1:1", "t", 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("the classpath is empty"), "{error}");
    }

    #[test]
    fn a_failing_child_is_reported_with_its_stderr_tail_and_the_advice() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo first >&2; echo 'the reason' >&2; exit 3"]);
        let run = Run {
            client: PYTHON_CLIENT,
            shown: "sh -c ...".to_owned(),
            missing_program: "install sh",
        };
        let error = run
            .output(command, b"ignored".to_vec(), |code, stderr| {
                format!("advice for {code:?} after {:?}", stderr.lines().last())
            })
            .unwrap_err()
            .to_string();
        assert!(error.contains("exited with exit status: 3"), "{error}");
        assert!(error.contains("advice for Some(3)"), "{error}");
        assert!(error.ends_with("first\nthe reason"), "{error}");
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        let run = Run {
            client: JAVA_CLIENT,
            shown: "no-such-program-ruststream".to_owned(),
            missing_program: JAVA_INSTALL,
        };
        let error = run
            .output(
                Command::new("no-such-program-ruststream"),
                Vec::new(),
                |_, _| String::new(),
            )
            .unwrap_err()
            .to_string();
        assert!(error.contains("install a JDK 17+"), "{error}");
    }

    #[test]
    fn a_helper_is_compiled_once_and_then_taken_from_the_cache() {
        let cache = tempfile::tempdir().unwrap();
        let builds = std::cell::Cell::new(0);
        let build = |out: &Path| {
            builds.set(builds.get() + 1);
            std::fs::write(out.join("Hello.class"), b"classes").unwrap();
            Ok(())
        };
        let first = cached(cache.path(), "Hello-0123", "Hello.class", build).unwrap();
        let second = cached(cache.path(), "Hello-0123", "Hello.class", build).unwrap();
        assert_eq!(first, cache.path().join("Hello-0123"));
        assert_eq!(second, first);
        assert_eq!(builds.get(), 1);
        assert_eq!(entries(cache.path()), vec!["Hello-0123".to_owned()]);
    }

    #[test]
    fn the_build_that_loses_the_race_takes_the_winners_classes() {
        let cache = tempfile::tempdir().unwrap();
        let dir = cached(cache.path(), "Hello-0123", "Hello.class", |out| {
            // Another process renames its copy into place while this one compiles.
            let winner = cache.path().join("Hello-0123");
            std::fs::create_dir(&winner).unwrap();
            std::fs::write(winner.join("Hello.class"), b"winner").unwrap();
            std::fs::write(out.join("Hello.class"), b"loser").unwrap();
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(dir.join("Hello.class")).unwrap(), b"winner");
        assert_eq!(entries(cache.path()), vec!["Hello-0123".to_owned()]);
    }

    #[test]
    fn a_failed_or_wrong_build_leaves_nothing_in_the_cache() {
        let cache = tempfile::tempdir().unwrap();
        let error = cached(cache.path(), "Hello-0123", "Hello.class", |_| {
            Err(BrokerError::OtherClient {
                client: JAVA_CLIENT,
                detail: "javac failed".to_owned(),
            })
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("javac failed"), "{error}");
        let error = cached(cache.path(), "Hello-0123", "Hello.class", |out| {
            std::fs::write(out.join("Other.class"), b"classes").unwrap();
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("compiled no Hello.class"), "{error}");
        assert!(entries(cache.path()).is_empty());
        // A directory in place without the class is not this cache's: it says to delete it.
        std::fs::create_dir(cache.path().join("Hello-0123")).unwrap();
        std::fs::write(cache.path().join("Hello-0123").join("stray"), b"").unwrap();
        let error = cached(cache.path(), "Hello-0123", "Hello.class", |out| {
            std::fs::write(out.join("Hello.class"), b"classes").unwrap();
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("delete it"), "{error}");
    }

    #[test]
    fn a_missing_javac_says_a_jdk_is_needed() {
        let cache = tempfile::tempdir().unwrap();
        let jdk = Jdk {
            java: PathBuf::from("no-such-java-ruststream"),
            javac: PathBuf::from("no-such-javac-ruststream"),
        };
        let source = helper(JAVA_CLIENT, "java/KeyedPublish.java").unwrap();
        let error = compiled_helper(&jdk, "cp.jar", "KeyedPublish.java", &source, cache.path())
            .unwrap_err()
            .to_string();
        assert!(error.contains("javac is missing"), "{error}");
        assert!(error.contains("needs a JDK"), "{error}");
        assert!(error.contains("scripts/setup"), "{error}");
        assert!(
            entries(cache.path()).is_empty(),
            "{:?}",
            entries(cache.path())
        );
    }

    #[test]
    fn javac_failures_say_what_to_fix() {
        let advice = javac_advice(
            "KeyedPublish.java",
            "error: package org.apache.pulsar.client.api does not exist",
        );
        assert!(
            advice.contains("the classpath lacks the Java client"),
            "{advice}"
        );
        let advice = javac_advice(
            "KeyedPublish.java",
            "class file has wrong version 61.0, should be 55.0",
        );
        assert!(advice.contains("too old"), "{advice}");
        assert!(advice.contains("install a JDK 17+"), "{advice}");
    }

    #[test]
    fn the_cache_key_is_a_sha256_and_the_class_is_named_after_the_file() {
        assert_eq!(
            sha256_hex(b"abc".to_vec()).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(class_name("Transactions.java"), "Transactions");
    }

    /// The names in `dir`, sorted.
    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_answer_must_have_one_partition_per_key() {
        let run = Run {
            client: PYTHON_CLIENT,
            shown: "x".to_owned(),
            missing_program: "",
        };
        assert_eq!(run.partitions("[0, 3, -1]\n", 3).unwrap(), vec![0, 3, -1]);
        let error = run.partitions("[0]", 2).unwrap_err().to_string();
        assert!(error.contains("1 partition indexes for 2 keys"), "{error}");
        let error = run
            .partitions("INFO noise\n[0]", 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a JSON array"), "{error}");
    }
}
