// Publish one keyed message per key with the official Java client (pulsar-client 4.0.7), and
// print the partition each one landed on.
//
//   java -cp CLASSPATH tests/brokers/java/KeyedPublish.java URL TOPIC < keys.txt
//
// (Java 11+'s single-file source launch: no build step. CLASSPATH is the one
// tests/brokers/pulsar-standalone/start.sh caches, which holds pulsar-client-original 4.0.7.)
//
// stdin:  the keys, one per line (UTF-8).
// stdout: a JSON array of integers, in key order: the partition index of the MessageId that
//         sending the message with that key returned (MessageIdAdv.getPartitionIndex()).
//         Nothing else is written to stdout: the client's logging goes to stderr.
// exit:   0 done; 2 bad arguments; 1 any other failure (the stack trace is on stderr).
//
// The producer has the client's DEFAULT settings, so keys are routed as a Java service would
// route them: default MessageRoutingMode (RoundRobinPartition, which sends a keyed message to
// the partition its key hashes to) and default HashingScheme (JavaStringHash); no custom
// router. Each message's payload is its key (UTF-8). ruststream-test-brokers runs this program
// (other_clients::java_keyed_partitions) to compare ruststream's routing with the official
// client's.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;

public class KeyedPublish {
    public static void main(String[] args) throws Exception {
        // Every console appender (log4j2's default configuration, or the log4j2.xml that
        // bookkeeper-server's jar carries, both SYSTEM_OUT) binds to System.out when logging
        // starts: make that stderr before anything logs, and keep the real stdout for the answer.
        PrintStream answer = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        quietLogging();

        if (args.length != 2) {
            System.err.println("KeyedPublish: usage: KeyedPublish.java URL TOPIC < keys (one per line)");
            System.exit(2);
        }
        String url = args[0];
        String topic = args[1];
        List<String> keys = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                keys.add(line);
            }
        }

        try {
            StringBuilder json = new StringBuilder("[");
            try (PulsarClient client = PulsarClient.builder().serviceUrl(url).build();
                    Producer<byte[]> producer = client.newProducer().topic(topic).create()) {
                List<CompletableFuture<MessageId>> sent = new ArrayList<>(keys.size());
                for (String key : keys) {
                    sent.add(producer.newMessage().key(key).value(key.getBytes(StandardCharsets.UTF_8)).sendAsync());
                }
                for (int i = 0; i < sent.size(); i++) {
                    MessageId id = sent.get(i).get();
                    if (!(id instanceof MessageIdAdv)) {
                        throw new IllegalStateException("the id of key " + keys.get(i) + " is a "
                                + id.getClass().getName() + ", not a MessageIdAdv: no partition index");
                    }
                    json.append(i == 0 ? "" : ",").append(((MessageIdAdv) id).getPartitionIndex());
                }
            }
            json.append("]");
            answer.println(json);
            answer.flush();
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
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
            System.err.println("KeyedPublish: log4j-core not found (" + e + "); the client logs at its default level");
        }
        // java.util.logging (OpenTelemetry's INFO line about its autoconfiguration).
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    }
}
