import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
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
 * One instance of an exactly-once Kafka Streams application, run until SIGTERM; what it
 * does is printed as JSON lines and the test decides what is right.
 *
 * <p>{@code StreamsScenario BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR NAME}: records of INPUT
 * (any key, a word as value) are regrouped by word, through a repartition topic, and counted
 * in a store with a changelog; every new count goes to OUTPUT (word, count as a long), under
 * {@code processing.guarantee=exactly_once_v2} and the classic group protocol. No record
 * cache, so each input record makes exactly one output record. Lines printed:
 *
 * <ul>
 *   <li>{@code {"name", "state", "tasks"}} at each state change, with the active tasks held
 *       once RUNNING;
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

    static String activeTasks(KafkaStreams streams) {
        TreeSet<String> tasks = new TreeSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            thread.activeTasks().forEach(t -> tasks.add(t.taskId().toString()));
        }
        return tasks.stream().map(StreamsScenario::q).collect(Collectors.joining(",", "[", "]"));
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
        if (args.length != 6) {
            System.err.println("usage: StreamsScenario BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR NAME");
            System.exit(2);
            return;
        }
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        String stateDir = args[4], name = args[5];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // A killed instance's tasks move after 6 s instead of the default 45 s.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        String who = "{\"name\":" + q(name);
        streams.setStateListener((now, before) -> {
            String tasks = now == KafkaStreams.State.RUNNING ? activeTasks(streams) : "[]";
            say(who + ",\"state\":" + q(now.name()) + ",\"tasks\":" + tasks + "}");
        });
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
        closed.await();
    }
}
