import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * One instance of a word-count Kafka Streams application, run until SIGTERM; what it does
 * is printed as JSON lines and the test decides what is right.
 *
 * <p>{@code StreamsScenario PROTOCOL GUARANTEE BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR NAME}:
 * records of INPUT (any key, a word as value) are regrouped by word, through a repartition
 * topic, and counted in a store with a changelog; every new count goes to OUTPUT (word, count
 * as a long). PROTOCOL is the group protocol ({@code classic}, or {@code streams} for
 * KIP-1071's streams groups, where standby replicas are the group's to decide), GUARANTEE
 * the processing guarantee ({@code exactly_once_v2} or {@code at_least_once}). No record
 * cache, so each input record makes exactly one output record. Lines printed:
 *
 * <ul>
 *   <li>{@code {"name", "state", "active", "standby"}} at each state change and whenever the
 *       tasks it holds change while RUNNING;
 *   <li>{@code {"name", "error"}} if a stream thread dies (the instance then shuts down);
 *   <li>{@code {"name", "closed", "retries", "errors"}} after a clean close: the producers'
 *       record-retry-total and record-error-total.
 * </ul>
 */
public final class StreamsScenario {
    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static synchronized void say(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String tasks(KafkaStreams streams, boolean active) {
        TreeSet<String> out = new TreeSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            (active ? thread.activeTasks() : thread.standbyTasks())
                    .forEach(t -> out.add(t.taskId().toString()));
        }
        return out.stream().map(StreamsScenario::q).collect(Collectors.joining(",", "[", "]"));
    }

    /** The sum of one producer metric over the instance's producers. */
    static long producerTotal(KafkaStreams streams, String metric) {
        double total = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
            MetricName n = e.getKey();
            if (n.group().equals("producer-metrics") && n.name().equals(metric)) {
                total += ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return (long) total;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: StreamsScenario PROTOCOL GUARANTEE BOOTSTRAP APP_ID"
                    + " INPUT OUTPUT STATE_DIR NAME");
            System.exit(2);
            return;
        }
        String protocol = args[0], guarantee = args[1], bootstrap = args[2], appId = args[3];
        String input = args[4], output = args[5], stateDir = args[6], name = args[7];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        if (protocol.equals("classic")) {
            // A killed instance's tasks move after 6 s instead of the default 45 s. (A
            // streams group's session timeout is the broker's to set.)
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        String who = "{\"name\":" + q(name);
        String[] last = {""};
        Runnable report = () -> {
            KafkaStreams.State now = streams.state();
            boolean running = now == KafkaStreams.State.RUNNING;
            String line = ",\"state\":" + q(now.name())
                    + ",\"active\":" + (running ? tasks(streams, true) : "[]")
                    + ",\"standby\":" + (running ? tasks(streams, false) : "[]") + "}";
            synchronized (last) {
                if (!line.equals(last[0])) {
                    last[0] = line;
                    say(who + line);
                }
            }
        };
        streams.setStateListener((now, before) -> report.run());
        streams.setUncaughtExceptionHandler(e -> {
            say(who + ",\"error\":" + q(String.valueOf(e)) + "}");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long retries = producerTotal(streams, "record-retry-total");
            long errors = producerTotal(streams, "record-error-total");
            boolean clean = streams.close(Duration.ofSeconds(30));
            say(who + ",\"closed\":" + clean + ",\"retries\":" + retries + ",\"errors\":" + errors + "}");
            closed.countDown();
        }));
        streams.start();
        // Task changes do not always change the state: look every half second, bounded by
        // the run (the test stops the instance).
        while (!closed.await(500, TimeUnit.MILLISECONDS)) {
            report.run();
        }
    }
}
