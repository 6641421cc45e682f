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
//     I/O and listener threads, the JIT and the GC) and W the wall time, both from the consumer
//     subscribed to the last acknowledgement. S sums the ids of the orders decoded, printed so
//     that decoding them cannot be optimised away.
//   share URL TOPIC SUBSCRIPTION
//     One instance of the partitioned benchmark (bench/src/bin/live_load.rs, one JVM per
//     instance): subscribes to TOPIC (a partitioned topic: every partition) Shared, receiver
//     queue 1000, and runs the receive/acknowledge loop in the background until `stop`,
//     noting the time of each message.
//   share-forward URL TOPIC SUBSCRIPTION OUT
//     The same with the forwarding pipeline: each order decoded, its shipment sent to OUT with
//     `sendAsync` (a producer at its defaults, created before), the order acknowledged and
//     counted in the send's callback.
//   latency MODE URL TOPIC SUBSCRIPTION WARMUP FILE
//     MODE receive: the same loop on TOPIC, recording for each message from sequence number
//     WARMUP on its receive time minus the send time it carries (bench/src/stamp.rs), in ns;
//     written to FILE, one a line, at `stop`.
//   stop
//     Ends the background run: answers
//     `result messages=N cpu_ns=C start_unix_ns=S last_unix_ns=L recorded=K`, C being this
//     process's CPU time from the command to the first progress report that saw the final
//     count, S when the command was read, L when the last message was acknowledged.
//   While a background run goes: `subscribed` once subscribed, then `progress messages=N` at
//   most every 50 ms while the count changes.
//   forward URL SUBSCRIPTION TO MESSAGES
//     The forwarding pipeline: subscribes to TOPIC (Shared, receiver queue 1000), and for each
//     of MESSAGES orders decodes it (Jackson), publishes a shipment keyed by the order id to TO
//     with `sendAsync` through a producer at its defaults (created before the span: batching
//     on, 1 ms, 1,000 messages or 128 KiB an entry), and acknowledges the order in the send's
//     callback. Answers `acked ...` at the last acknowledgement, then
//     `result messages=N cpu_ns=C wall_ns=W`, both from just after `subscribe()` returned.
//   publish URL TO MESSAGES
//     MESSAGES 128-byte JSON orders (encoded with Jackson, each as it is sent) with
//     `sendAsync` through a producer at its defaults; `acked ...` once every receipt came, then
//     `result ...`, from the first send.
//   send-latency URL TO RATE SECONDS FILE
//     One order every 1/RATE s for SECONDS s through a producer at its defaults, each timed
//     from `sendAsync` to its receipt (ns), the first second's not counted; written to FILE,
//     one a line; then `result messages=N`.
// Each consumed order is decoded from JSON (Jackson), as the Rust contenders decode theirs.
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
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.pulsar.client.api.SubscriptionType;

public class LiveConsumer {
    // The JVM's own CPU clock for this process; com.sun.management's bean has it.
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private static PrintStream out;

    // Decodes the orders and encodes the shipments, as serde_json does for the Rust contenders.
    private static final ObjectMapper MAPPER =
            new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    // The benchmark's order (bench/src/order.rs), as JSON names it.
    public static final class Order {
        public long id;
        public String customer;
        public long amount_cents;
        public String currency;
    }

    // What the forwarding pipeline publishes for each order.
    public static final class Shipment {
        public long order;
        public String customer;
        public long amount_cents;

        Shipment(long order, String customer, long amountCents) {
            this.order = order;
            this.customer = customer;
            this.amount_cents = amountCents;
        }
    }

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
        Background background = null;
        answer("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] words = line.trim().split("\\s+");
                if (words.length == 1 && words[0].isEmpty()) {
                    continue;
                }
                if (words[0].equals("stop") && words.length == 1) {
                    if (background == null) {
                        throw new IllegalStateException("stop: nothing runs");
                    }
                    background.stop();
                    background = null;
                    continue;
                }
                if (background != null) {
                    throw new IllegalStateException("a run is in progress: stop it first");
                }
                long startUnixNs = unixNs();
                long startCpu = OS.getProcessCpuTime();
                if (words[0].equals("share") && words.length == 4) {
                    background = new Background(client(clients, words[1]), words[2], words[3], startUnixNs,
                            startCpu, Long.MAX_VALUE, null, null);
                    continue;
                }
                if (words[0].equals("share-forward") && words.length == 5) {
                    background = new Background(client(clients, words[1]), words[2], words[3], startUnixNs,
                            startCpu, Long.MAX_VALUE, null, words[4]);
                    continue;
                }
                if (words[0].equals("latency") && words.length == 7 && words[1].equals("receive")) {
                    background = new Background(client(clients, words[2]), words[3], words[4], startUnixNs,
                            startCpu, Long.parseLong(words[5]), words[6], null);
                    continue;
                }
                if (words[0].equals("forward") && words.length == 5) {
                    forward(client(clients, words[1]), topic, words[2], words[3], Long.parseLong(words[4]));
                    continue;
                }
                if (words[0].equals("publish") && words.length == 4) {
                    publish(client(clients, words[1]), words[2], Long.parseLong(words[3]));
                    continue;
                }
                if (words[0].equals("send-latency") && words.length == 6) {
                    sendLatency(client(clients, words[1]), words[2], Long.parseLong(words[3]),
                            Long.parseLong(words[4]), words[5]);
                    continue;
                }
                if (words.length != 5 || !words[0].equals("run")) {
                    throw new IllegalArgumentException("not a command: " + line);
                }
                String mode = words[1];
                PulsarClient client = client(clients, words[2]);
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

    private static PulsarClient client(Map<String, PulsarClient> clients, String url) throws Exception {
        PulsarClient client = clients.get(url);
        if (client == null) {
            client = PulsarClient.builder().serviceUrl(url).build();
            clients.put(url, client);
        }
        return client;
    }

    private static long unixNs() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    // A receive/acknowledge loop in the background (`share` and `latency`), with its progress
    // reports, until `stop`.
    private static final class Background {
        private final Consumer<byte[]> consumer;
        private final Producer<byte[]> producer;
        private final long startUnixNs;
        private final long startCpu;
        private final long warmup;
        private final String file;
        private final AtomicLong handled = new AtomicLong();
        private final long[] lastNs = new long[1];
        private final java.util.ArrayList<Long> values = new java.util.ArrayList<>();
        private volatile boolean stopping;
        private volatile long cpuAtChange;
        private volatile Throwable failure;
        private final Thread loop;
        private final java.util.concurrent.ScheduledExecutorService reporter =
                java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "progress");
                    t.setDaemon(true);
                    return t;
                });

        Background(PulsarClient client, String topic, String subscription, long startUnixNs, long startCpu,
                long warmup, String file, String forwardTo) throws Exception {
            this.producer = forwardTo == null ? null : client.newProducer().topic(forwardTo).create();
            this.startUnixNs = startUnixNs;
            this.startCpu = startCpu;
            this.warmup = warmup;
            this.file = file;
            this.consumer = client.newConsumer()
                    .topic(topic)
                    .subscriptionName(subscription)
                    .subscriptionType(SubscriptionType.Shared)
                    .receiverQueueSize(1000)
                    .subscribe();
            answer("subscribed");
            long[] seen = {0};
            reporter.scheduleAtFixedRate(() -> {
                long now = handled.get();
                if (now != seen[0]) {
                    seen[0] = now;
                    cpuAtChange = OS.getProcessCpuTime() - startCpu;
                    answer("progress messages=" + now);
                }
            }, 50, 50, TimeUnit.MILLISECONDS);
            loop = new Thread(this::consume, "receive-loop");
            loop.start();
        }

        private void consume() {
            // System.nanoTime() per message, turned into Unix time once: a clock read as cheap
            // as the Rust worker's.
            long base = unixNs() - System.nanoTime();
            long sum = 0;
            try {
                while (!stopping) {
                    Message<byte[]> message = consumer.receive(50, TimeUnit.MILLISECONDS);
                    if (message == null) {
                        continue;
                    }
                    byte[] data = message.getData();
                    if (producer != null) {
                        Order order = MAPPER.readValue(data, Order.class);
                        byte[] shipment = MAPPER.writeValueAsBytes(
                                new Shipment(order.id, order.customer, order.amount_cents));
                        producer.newMessage().key(Long.toString(order.id)).value(shipment).sendAsync()
                                .whenComplete((id, e) -> {
                                    if (e != null) {
                                        failure = e;
                                        return;
                                    }
                                    consumer.acknowledgeAsync(message.getMessageId());
                                    lastNs[0] = base + System.nanoTime();
                                    handled.incrementAndGet();
                                });
                        continue;
                    }
                    if (file != null) {
                        long now = unixNs();
                        long seq = field(data, "\"seq\":");
                        if (seq >= warmup) {
                            values.add(now - field(data, "\"sent_ns\":"));
                        }
                    } else {
                        sum += checksum(data);
                    }
                    consumer.acknowledge(message);
                    lastNs[0] = base + System.nanoTime();
                    handled.incrementAndGet();
                }
            } catch (Throwable e) {
                failure = e;
            }
            if (sum == 42) {
                System.err.println("LiveConsumer: checksum 42");
            }
        }

        void stop() throws Exception {
            stopping = true;
            loop.join();
            reporter.shutdown();
            reporter.awaitTermination(10, TimeUnit.SECONDS);
            if (failure != null) {
                throw new IllegalStateException("the receive loop failed", failure);
            }
            consumer.close();
            if (producer != null) {
                producer.close();
            }
            if (file != null) {
                StringBuilder text = new StringBuilder();
                for (long value : values) {
                    text.append(value).append('\n');
                }
                java.nio.file.Files.writeString(java.nio.file.Path.of(file), text);
            }
            answer("result messages=" + handled.get() + " cpu_ns=" + cpuAtChange + " start_unix_ns=" + startUnixNs
                    + " last_unix_ns=" + lastNs[0] + " recorded=" + values.size());
        }
    }

    // The unsigned integer after `key` in an ASCII payload; -1 if there is none.
    private static long field(byte[] data, String key) {
        byte[] k = key.getBytes(StandardCharsets.US_ASCII);
        outer:
        for (int at = 0; at + k.length <= data.length; at++) {
            for (int i = 0; i < k.length; i++) {
                if (data[at + i] != k[i]) {
                    continue outer;
                }
            }
            long value = 0;
            int i = at + k.length;
            if (i >= data.length || data[i] < '0' || data[i] > '9') {
                return -1;
            }
            for (; i < data.length && data[i] >= '0' && data[i] <= '9'; i++) {
                value = value * 10 + (data[i] - '0');
            }
            return value;
        }
        return -1;
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
                // Timed from the consumer subscribed, as every contender is.
                consumer = builder.subscribe();
                long cpuStart = OS.getProcessCpuTime();
                long wallStart = System.nanoTime();
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
                // Timed from the consumer subscribed, as every contender is (the listener may
                // take its first messages a moment before: not counted here, a few of 100,000).
                consumer = builder.subscribe();
                long cpuStart = OS.getProcessCpuTime();
                long wallStart = System.nanoTime();
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

    // What each contender does with a payload: decode the order it holds.
    private static long checksum(byte[] payload) throws java.io.IOException {
        return MAPPER.readValue(payload, Order.class).id;
    }

    // The forwarding pipeline (see `forward` above).
    private static void forward(PulsarClient client, String topic, String subscription, String to, long messages)
            throws Exception {
        Producer<byte[]> producer = client.newProducer().topic(to).create();
        CountDownLatch done = new CountDownLatch(1);
        AtomicLong acked = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Consumer<byte[]> consumer = client.newConsumer()
                .topic(topic)
                .subscriptionName(subscription)
                .subscriptionType(SubscriptionType.Shared)
                .receiverQueueSize(1000)
                .subscribe();
        long cpuStart = OS.getProcessCpuTime();
        long wallStart = System.nanoTime();
        for (long n = 0; n < messages && failure.get() == null; n++) {
            Message<byte[]> message = consumer.receive();
            Order order = MAPPER.readValue(message.getData(), Order.class);
            byte[] shipment = MAPPER.writeValueAsBytes(new Shipment(order.id, order.customer, order.amount_cents));
            producer.newMessage()
                    .key(Long.toString(order.id))
                    .value(shipment)
                    .sendAsync()
                    .whenComplete((id, e) -> {
                        if (e != null) {
                            failure.compareAndSet(null, e);
                            done.countDown();
                            return;
                        }
                        consumer.acknowledgeAsync(message.getMessageId());
                        if (acked.incrementAndGet() == messages) {
                            done.countDown();
                        }
                    });
        }
        if (!done.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("forwarded " + acked.get() + " of " + messages + " in 600 s");
        }
        long cpu = OS.getProcessCpuTime() - cpuStart;
        long wall = System.nanoTime() - wallStart;
        if (failure.get() != null) {
            throw new IllegalStateException("a send failed", failure.get());
        }
        answer("acked mode=forward subscription=" + subscription);
        consumer.close();
        producer.close();
        answer("result mode=forward subscription=" + subscription + " messages=" + messages + " cpu_ns=" + cpu
                + " wall_ns=" + wall);
    }

    // The `n`-th order as 128 bytes of JSON (bench/src/order.rs pads its customer the same way).
    private static Order order(long n, int padding) {
        Order order = new Order();
        order.id = n;
        order.customer = String.format("customer-%06d", n % 1000) + "x".repeat(padding);
        order.amount_cents = 1000 + n % 9000;
        order.currency = "EUR";
        return order;
    }

    // How many characters the customer of order `n` takes to make it 128 bytes of JSON.
    private static int padding(long n) throws Exception {
        return Math.max(0, 128 - MAPPER.writeValueAsBytes(order(n, 0)).length);
    }

    // Publishing alone (see `publish` above).
    private static void publish(PulsarClient client, String to, long messages) throws Exception {
        Producer<byte[]> producer = client.newProducer().topic(to).create();
        CountDownLatch done = new CountDownLatch(1);
        AtomicLong confirmed = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long cpuStart = OS.getProcessCpuTime();
        long wallStart = System.nanoTime();
        for (long n = 0; n < messages && failure.get() == null; n++) {
            byte[] payload = MAPPER.writeValueAsBytes(order(n, padding(0)));
            producer.sendAsync(payload).whenComplete((id, e) -> {
                if (e != null) {
                    failure.compareAndSet(null, e);
                    done.countDown();
                } else if (confirmed.incrementAndGet() == messages) {
                    done.countDown();
                }
            });
        }
        if (!done.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("confirmed " + confirmed.get() + " of " + messages + " in 600 s");
        }
        long cpu = OS.getProcessCpuTime() - cpuStart;
        long wall = System.nanoTime() - wallStart;
        if (failure.get() != null) {
            throw new IllegalStateException("a send failed", failure.get());
        }
        answer("acked mode=publish");
        producer.close();
        answer("result mode=publish messages=" + messages + " cpu_ns=" + cpu + " wall_ns=" + wall);
    }

    // Publish latency (see `send-latency` above).
    private static void sendLatency(PulsarClient client, String to, long rate, long seconds, String file)
            throws Exception {
        Producer<byte[]> producer = client.newProducer().topic(to).create();
        long total = rate * seconds;
        long[] taken = new long[(int) total];
        CountDownLatch done = new CountDownLatch((int) total);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long every = 1_000_000_000L / rate;
        int pad = padding(0);
        long start = System.nanoTime();
        for (int n = 0; n < total; n++) {
            long due = start + n * every;
            for (long now = System.nanoTime(); now < due; now = System.nanoTime()) {
                java.util.concurrent.locks.LockSupport.parkNanos(due - now);
            }
            byte[] payload = MAPPER.writeValueAsBytes(order(n, pad));
            long sent = System.nanoTime();
            final int index = n;
            producer.sendAsync(payload).whenComplete((id, e) -> {
                if (e != null) {
                    failure.compareAndSet(null, e);
                } else {
                    taken[index] = System.nanoTime() - sent;
                }
                done.countDown();
            });
        }
        if (!done.await(600, TimeUnit.SECONDS) || failure.get() != null) {
            throw new IllegalStateException("sends failed", failure.get());
        }
        StringBuilder text = new StringBuilder();
        for (long n = rate; n < total; n++) {
            text.append(taken[(int) n]).append('\n');
        }
        java.nio.file.Files.writeString(java.nio.file.Path.of(file), text);
        producer.close();
        answer("result mode=send-latency messages=" + (total - rate));
    }

    private static synchronized void answer(String line) {
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
