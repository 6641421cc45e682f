// Pulsar transactions (PIP-31) with the official Java client (pulsar-client 4.0.7): produce in a
// transaction that is committed or aborted, count what a subscriber really sees, and forward
// messages from one topic to another with each group of them in one transaction.
//
//   java -cp CLASSPATH tests/brokers/java/Transactions.java COMMAND ARGS..
//
//   produce URL TOPIC COUNT
//       COUNT messages {"id":0} .. {"id":COUNT-1}, no transaction, the client's default
//       producer (batching on). Prints {"produced":COUNT}.
//   produce-committed URL TOPIC COUNT
//       COUNT messages {"id":1000000} .. in one transaction, waits for their sends, COMMITS it.
//       Prints {"committed":COUNT}.
//   produce-aborted URL TOPIC COUNT
//       the same, then ABORTS the transaction, then sends one message {"id":-1} outside any
//       transaction: a marker that a subscriber must see (so that a count that sees nothing
//       else shows the aborted messages were hidden, not merely late). Prints {"aborted":COUNT}.
//   count URL TOPIC SUBSCRIPTION EXPECTED IDLE_MS
//       subscribes (Shared, from the earliest; TOPIC may be partitioned) and receives, acking
//       each, until nothing arrives for IDLE_MS. Reaching EXPECTED distinct payloads does not
//       end it: whatever comes after them (a duplicate, an aborted message) must be counted
//       too, so the count always ends on a silence; EXPECTED only appears in the log line.
//       Payloads are counted by their text. Batch-index acknowledgement is on (see count()).
//       Prints
//       {"total":N,"distinct":D,"duplicates":[payloads seen more than once, at most 20]}.
//   forward URL IN OUT SUBSCRIPTION COUNT GROUP
//       the Java contender of the transactional forwarding benchmark: a Shared consumer on IN
//       (from the earliest), a producer on OUT with the client's defaults (batching on), and
//       one transaction for each GROUP messages: receive, decode the payload {"id":n} with
//       Jackson into a record, send it re-encoded to OUT in the transaction, acknowledge the
//       received message in the transaction, and after GROUP messages wait for those sends
//       and acknowledgements (the client requires them complete before a commit) and commit.
//       ONE transaction at a time; within it the sends and acknowledgements are asynchronous
//       (sendAsync, acknowledgeAsync), which is how a Java service would overlap them. Stops
//       after COUNT messages (a last, smaller group commits the remainder). Timed from the
//       first message received to the last commit completed. Prints
//       {"messages":COUNT,"seconds":S,"per_second":R}.
//
// (Java 11+'s single-file source launch: no build step. CLASSPATH is the one
// tests/brokers/pulsar-standalone/start.sh caches, which holds pulsar-client-original 4.0.7 and
// jackson-databind.)
//
// The broker must run with transactionCoordinatorEnabled=true for every command but `produce`
// and `count`, and its coordinators' topic (pulsar/system/transaction_coordinator_assign) must
// have its partitions, or building the client with transactions fails. Acknowledging a
// message of a batched entry in a transaction acknowledges that one index of the entry (the
// client sends the entry's ack set whatever its own batch-index setting). Run the broker with
// acknowledgmentAtBatchIndexLevelEnabled=true too: without it (Apache Pulsar 4.0.7, seen on
// the standalone), the indexes acknowledged in committed transactions are not redelivered,
// but entries acknowledged that way never leave the subscription (its backlog kept every
// entry of the input after forwarding half of it, the whole entries included).
//
// Transactions time out after 60 s (the broker aborts them), the Java client's own default.
//
// stdout: the one JSON line above; nothing else (the client's logging goes to stderr).
// exit:   0 done; 2 bad arguments; 3 `forward` got no message for 60 s before COUNT;
//         1 any other failure (the stack trace is on stderr).
//
// ruststream-test-brokers runs this program (other_clients::java_produce, java_produce_committed,
// java_produce_aborted, java_count_distinct, java_forward).

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;

public class Transactions {
    // The first id of the transactional messages, far from `produce`'s 0.. and the marker.
    static final long FIRST_TRANSACTIONAL_ID = 1_000_000;
    // The payload `produce-aborted` sends after the abort, outside any transaction.
    static final String MARKER = "{\"id\":-1}";
    // How long `forward` waits for a message before it gives up (exit 3).
    static final int FORWARD_RECEIVE_TIMEOUT_S = 60;
    // The transactions' timeout (the Java client's default).
    static final long TRANSACTION_TIMEOUT_S = 60;
    // How many duplicated payloads `count` lists.
    static final int DUPLICATES_LISTED = 20;

    static final ObjectMapper JSON = new ObjectMapper();

    // What `forward` decodes and re-encodes.
    public record Order(long id) {}

    // Bad arguments: exit 2.
    static final class Usage extends Exception {
        Usage(String message) {
            super(message);
        }
    }

    // `forward` ran dry: exit 3.
    static final class RanDry extends Exception {
        RanDry(String message) {
            super(message);
        }
    }

    public static void main(String[] args) throws Exception {
        // Every console appender (log4j2's default configuration, or the log4j2.xml that
        // bookkeeper-server's jar carries, both SYSTEM_OUT) binds to System.out when logging
        // starts: make that stderr before anything logs, and keep the real stdout for the answer.
        PrintStream answer = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        quietLogging();

        int code;
        try {
            Map<String, Object> result = run(args);
            answer.println(JSON.writeValueAsString(result));
            answer.flush();
            code = 0;
        } catch (Usage e) {
            System.err.println("Transactions: " + e.getMessage());
            System.err.println("usage: Transactions.java produce|produce-committed|produce-aborted URL TOPIC COUNT");
            System.err.println("       Transactions.java count URL TOPIC SUBSCRIPTION EXPECTED IDLE_MS");
            System.err.println("       Transactions.java forward URL IN OUT SUBSCRIPTION COUNT GROUP");
            code = 2;
        } catch (RanDry e) {
            System.err.println("Transactions: " + e.getMessage());
            code = 3;
        } catch (Exception e) {
            e.printStackTrace();
            code = 1;
        }
        // The client's threads are not all daemons: exit explicitly.
        System.exit(code);
    }

    static Map<String, Object> run(String[] args) throws Exception {
        if (args.length == 0) {
            throw new Usage("no command");
        }
        String command = args[0];
        switch (command) {
            case "produce":
            case "produce-committed":
            case "produce-aborted": {
                arity(args, 4);
                return produce(command, args[1], args[2], positive(args[3], "COUNT"));
            }
            case "count": {
                arity(args, 6);
                return count(args[1], args[2], args[3], positive(args[4], "EXPECTED"), positive(args[5], "IDLE_MS"));
            }
            case "forward": {
                arity(args, 7);
                return forward(args[1], args[2], args[3], args[4], positive(args[5], "COUNT"), positive(args[6], "GROUP"));
            }
            default:
                throw new Usage("unknown command " + command);
        }
    }

    static void arity(String[] args, int expected) throws Usage {
        if (args.length != expected) {
            throw new Usage(args[0] + " takes " + (expected - 1) + " arguments, not " + (args.length - 1));
        }
    }

    static int positive(String text, String name) throws Usage {
        try {
            int value = Integer.parseInt(text);
            if (value > 0) {
                return value;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new Usage(name + " must be a positive integer, not " + text);
    }

    static byte[] payload(long id) {
        return ("{\"id\":" + id + "}").getBytes(StandardCharsets.UTF_8);
    }

    static Transaction newTransaction(PulsarClient client) throws Exception {
        return client.newTransaction().withTransactionTimeout(TRANSACTION_TIMEOUT_S, TimeUnit.SECONDS).build().get();
    }

    static Map<String, Object> produce(String command, String url, String topic, int count) throws Exception {
        boolean transactional = !command.equals("produce");
        Map<String, Object> result = new LinkedHashMap<>();
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).enableTransaction(transactional).build();
                Producer<byte[]> producer = client.newProducer().topic(topic).create()) {
            List<CompletableFuture<MessageId>> sent = new ArrayList<>(count);
            if (!transactional) {
                for (long id = 0; id < count; id++) {
                    sent.add(producer.newMessage().value(payload(id)).sendAsync());
                }
                CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0])).get();
                result.put("produced", count);
                return result;
            }
            Transaction txn = newTransaction(client);
            for (long i = 0; i < count; i++) {
                sent.add(producer.newMessage(txn).value(payload(FIRST_TRANSACTIONAL_ID + i)).sendAsync());
            }
            CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0])).get();
            if (command.equals("produce-committed")) {
                txn.commit().get();
                System.err.println("Transactions: committed " + count + " messages on " + topic + " (" + txn.getTxnID() + ")");
                result.put("committed", count);
            } else {
                txn.abort().get();
                System.err.println("Transactions: aborted " + count + " messages on " + topic + " (" + txn.getTxnID() + ")");
                producer.newMessage().value(MARKER.getBytes(StandardCharsets.UTF_8)).send();
                result.put("aborted", count);
            }
        }
        return result;
    }

    static Map<String, Object> count(String url, String topic, String subscription, int expected, int idleMs) throws Exception {
        Map<String, Integer> seen = new LinkedHashMap<>();
        long total = 0;
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).build();
                Consumer<byte[]> consumer = client.newConsumer()
                        .topic(topic)
                        .subscriptionName(subscription)
                        .subscriptionType(SubscriptionType.Shared)
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                        // Without it, the client acknowledges a batched entry only once it has
                        // acknowledged every message of it, and on an entry some of whose
                        // messages were acknowledged in a transaction it only receives the others:
                        // the entry stays unacknowledged and comes back to the next consumer.
                        .enableBatchIndexAcknowledgment(true)
                        .subscribe()) {
            for (Message<byte[]> message = consumer.receive(idleMs, TimeUnit.MILLISECONDS);
                    message != null;
                    message = consumer.receive(idleMs, TimeUnit.MILLISECONDS)) {
                total++;
                seen.merge(new String(message.getValue(), StandardCharsets.UTF_8), 1, Integer::sum);
                consumer.acknowledge(message);
            }
        }
        List<String> duplicates = new ArrayList<>();
        for (Map.Entry<String, Integer> entry : seen.entrySet()) {
            if (entry.getValue() > 1 && duplicates.size() < DUPLICATES_LISTED) {
                duplicates.add(entry.getKey());
            }
        }
        System.err.println("Transactions: " + total + " messages, " + seen.size() + " distinct of the "
                + expected + " expected, on " + topic + " (then nothing for " + idleMs + " ms)");
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("total", total);
        result.put("distinct", seen.size());
        result.put("duplicates", duplicates);
        return result;
    }

    static Map<String, Object> forward(String url, String in, String out, String subscription, int count, int group)
            throws Exception {
        long started = 0;
        boolean receiving = false;
        long finished = 0;
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).enableTransaction(true).build();
                Consumer<byte[]> consumer = client.newConsumer()
                        .topic(in)
                        .subscriptionName(subscription)
                        .subscriptionType(SubscriptionType.Shared)
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                        .subscribe();
                Producer<byte[]> producer = client.newProducer().topic(out).create()) {
            int done = 0;
            while (done < count) {
                int size = Math.min(group, count - done);
                Transaction txn = newTransaction(client);
                List<CompletableFuture<?>> pending = new ArrayList<>(2 * size);
                for (int i = 0; i < size; i++) {
                    Message<byte[]> message = consumer.receive(FORWARD_RECEIVE_TIMEOUT_S, TimeUnit.SECONDS);
                    if (message == null) {
                        txn.abort().get();
                        throw new RanDry("forward: no message on " + in + " for " + FORWARD_RECEIVE_TIMEOUT_S
                                + " s after " + (done + i) + " of " + count
                                + " (the last transaction was aborted); publish COUNT messages to IN first");
                    }
                    if (!receiving) {
                        started = System.nanoTime();
                        receiving = true;
                    }
                    Order order = JSON.readValue(message.getValue(), Order.class);
                    pending.add(producer.newMessage(txn).value(JSON.writeValueAsBytes(order)).sendAsync());
                    pending.add(consumer.acknowledgeAsync(message.getMessageId(), txn));
                }
                CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])).get();
                txn.commit().get();
                done += size;
            }
            finished = System.nanoTime();
        }
        double seconds = (finished - started) / 1e9;
        System.err.println("Transactions: forwarded " + count + " messages from " + in + " to " + out + " in "
                + ((count + group - 1) / group) + " transactions of up to " + group + " in " + seconds + " s");
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("messages", count);
        result.put("seconds", seconds);
        result.put("per_second", count / seconds);
        return result;
    }

    // WARN and above only, when log4j-core is the logging backend (it is on start.sh's
    // classpath); by reflection, so that another backend only means more lines on stderr.
    // One logger context for every class loader: log4j2 otherwise keeps one per loader, and this
    // file's classes (loaded by the source launcher) would not share the client's.
    private static void quietLogging() {
        System.setProperty("log4j2.contextSelector", "org.apache.logging.log4j.core.selector.BasicContextSelector");
        try {
            Class<?> level = Class.forName("org.apache.logging.log4j.Level");
            Object warn = level.getField("WARN").get(null);
            Class.forName("org.apache.logging.log4j.core.config.Configurator")
                    .getMethod("setRootLevel", level)
                    .invoke(null, warn);
        } catch (ReflectiveOperationException | LinkageError e) {
            System.err.println("Transactions: log4j-core not found (" + e + "); the client logs at its default level");
        }
        // java.util.logging (OpenTelemetry's INFO line about its autoconfiguration).
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    }
}
