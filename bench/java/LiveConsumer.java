// The Java client contender of the live benchmark (bench/src/bin/live.rs): the official
// Apache Pulsar Java client 4.0.7 draining a subscription, in one JVM that stays up for every
// run, so that the runs measured are a warm JVM's (JIT-compiled), as in a service that has
// been running for a while.
//
//   java -cp CLASSPATH bench/java/LiveConsumer.java TOPIC
//
// (Java 11+'s single-file source launch: no build step. CLASSPATH is the one
// tests/brokers/pulsar-standalone/start.sh caches, which holds pulsar-client-original 4.0.7.)
//
// stdin, one command a line:
//   run MODE URL SUBSCRIPTION MESSAGES
//     MODE receive:  consumer.receive() then consumer.acknowledge(message), one at a time;
//     MODE listener: a MessageListener doing the same on the client's listener thread.
//     Subscribes to TOPIC at URL (one PulsarClient per URL, kept for later runs), Shared, with
//     a receiver queue of 1000 (as pulsar-rs's raw loop), consumes MESSAGES messages reading
//     each payload, acknowledges each, then closes the consumer.
// stdout, for each run (nothing else: the client's logging goes to stderr):
//   acked mode=MODE subscription=SUB          once the last message is acknowledged
//   result mode=MODE subscription=SUB messages=N cpu_ns=C wall_ns=W sink=S
//     after the consumer is closed. C is this process's CPU time (all threads: the client's
//     I/O and listener threads, the JIT and the GC) and W the wall time, both from just before
//     subscribing to the last acknowledgement. S is a checksum of the payloads, printed so that
//     reading them cannot be optimised away.
// Before the first command it prints `ready`. It exits 0 when stdin closes, 1 on any failure
// (with `error message=...` on stdout and the stack trace on stderr).
//
// Acknowledgements are the client's defaults: grouped for 100 ms (acknowledgmentGroupTime),
// a batch acknowledged as a whole once all its messages are. The benchmark counts what reaches
// the broker in a separate round through its counting proxy.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerBuilder;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionType;

public class LiveConsumer {
    // The JVM's own CPU clock for this process; com.sun.management's bean has it.
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private static PrintStream out;

    public static void main(String[] args) throws Exception {
        // Logging backends bind their console appenders to System.out when they start: send
        // that to stderr before anything logs, and keep the real stdout for the answers.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        warnOnly();
        if (args.length != 1) {
            System.err.println("LiveConsumer: usage: LiveConsumer.java TOPIC < commands");
            System.exit(2);
        }
        String topic = args[0];
        Map<String, PulsarClient> clients = new HashMap<>();
        answer("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] words = line.trim().split("\\s+");
                if (words.length == 1 && words[0].isEmpty()) {
                    continue;
                }
                if (words.length != 5 || !words[0].equals("run")) {
                    throw new IllegalArgumentException("not a command: " + line);
                }
                String mode = words[1];
                PulsarClient client = clients.get(words[2]);
                if (client == null) {
                    client = PulsarClient.builder().serviceUrl(words[2]).build();
                    clients.put(words[2], client);
                }
                run(client, mode, topic, words[3], Long.parseLong(words[4]));
            }
            for (PulsarClient client : clients.values()) {
                client.close();
            }
        } catch (Exception e) {
            e.printStackTrace();
            answer("error message=" + String.valueOf(e).replaceAll("\\s+", "_"));
            System.exit(1);
        }
        System.exit(0);
    }

    private static void run(PulsarClient client, String mode, String topic, String subscription, long messages)
            throws Exception {
        ConsumerBuilder<byte[]> builder = client.newConsumer()
                .topic(topic)
                .subscriptionName(subscription)
                .subscriptionType(SubscriptionType.Shared)
                .receiverQueueSize(1000);
        long sink;
        long cpu;
        long wall;
        Consumer<byte[]> consumer;
        switch (mode) {
            case "receive": {
                long cpuStart = OS.getProcessCpuTime();
                long wallStart = System.nanoTime();
                consumer = builder.subscribe();
                long sum = 0;
                for (long done = 0; done < messages; done++) {
                    Message<byte[]> message = consumer.receive();
                    sum += checksum(message.getData());
                    consumer.acknowledge(message);
                }
                cpu = OS.getProcessCpuTime() - cpuStart;
                wall = System.nanoTime() - wallStart;
                sink = sum;
                break;
            }
            case "listener": {
                CountDownLatch done = new CountDownLatch(1);
                AtomicLong handled = new AtomicLong();
                AtomicLong sum = new AtomicLong();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                builder.messageListener((c, message) -> {
                    try {
                        sum.addAndGet(checksum(message.getData()));
                        c.acknowledge(message);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                        done.countDown();
                        return;
                    }
                    if (handled.incrementAndGet() == messages) {
                        done.countDown();
                    }
                });
                long cpuStart = OS.getProcessCpuTime();
                long wallStart = System.nanoTime();
                consumer = builder.subscribe();
                // Generous: 100,000 messages take a few seconds; a stalled run is a failure.
                if (!done.await(600, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the listener handled " + handled.get() + " of "
                            + messages + " messages in 600 s");
                }
                cpu = OS.getProcessCpuTime() - cpuStart;
                wall = System.nanoTime() - wallStart;
                if (failure.get() != null) {
                    throw new IllegalStateException("the listener failed", failure.get());
                }
                sink = sum.get();
                break;
            }
            default:
                throw new IllegalArgumentException("unknown mode " + mode + " (receive or listener)");
        }
        answer("acked mode=" + mode + " subscription=" + subscription);
        // Closing flushes the acknowledgements still grouped: after the measured span, as the
        // Rust contenders close their consumer after theirs.
        consumer.close();
        answer("result mode=" + mode + " subscription=" + subscription + " messages=" + messages
                + " cpu_ns=" + cpu + " wall_ns=" + wall + " sink=" + sink);
    }

    // What each contender does with a payload: read it.
    private static long checksum(byte[] payload) {
        return payload.length + (payload.length > 0 ? payload[0] : 0);
    }

    private static void answer(String line) {
        out.println(line);
        out.flush();
    }

    // WARN and above, when log4j-core is the logging backend (it is on start.sh's classpath);
    // by reflection, so that another backend only means more lines on stderr. One logger
    // context for all class loaders, so that this file's (the source launcher's) and the
    // client's share that level.
    private static void warnOnly() {
        System.setProperty("log4j2.contextSelector", "org.apache.logging.log4j.core.selector.BasicContextSelector");
        try {
            Class<?> level = Class.forName("org.apache.logging.log4j.Level");
            Class.forName("org.apache.logging.log4j.core.config.Configurator")
                    .getMethod("setRootLevel", level)
                    .invoke(null, level.getField("WARN").get(null));
        } catch (ReflectiveOperationException | LinkageError e) {
            System.err.println("LiveConsumer: log4j-core not found (" + e + "); the client logs at its default level");
        }
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    }
}
