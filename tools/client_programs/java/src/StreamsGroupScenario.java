import java.time.Duration;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.GroupProtocol;
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
 * One instance of a word-count Kafka Streams application on the streams group protocol
 * (KIP-1071), run until SIGTERM; what it does is printed as JSON lines.
 *
 * <p>{@code StreamsGroupScenario BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR NAME}:
 * records of INPUT (a word as value) are regrouped by word through a repartition topic and
 * counted in a store with a changelog; each new count goes to OUTPUT (word, count as a
 * long), at least once, with {@code group.protocol=streams}. (Standby replicas are the
 * group's to decide on this protocol: {@code group.streams.num.standby.replicas}.) Lines
 * printed:
 *
 * <ul>
 *   <li>{@code {"name", "state", "active", "standby"}} at each state change and whenever the
 *       tasks it holds change while RUNNING;
 *   <li>{@code {"name", "error"}} if a stream thread dies;
 *   <li>{@code {"name", "closed"}} after a clean close.
 * </ul>
 */
public final class StreamsGroupScenario {
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
        return out.stream().map(StreamsGroupScenario::q).collect(Collectors.joining(",", "[", "]"));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println(
                    "usage: StreamsGroupScenario BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR NAME");
            System.exit(2);
            return;
        }
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        String stateDir = args[4], name = args[5];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, GroupProtocol.STREAMS.name().toLowerCase());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

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
            boolean clean = streams.close(Duration.ofSeconds(30));
            say(who + ",\"closed\":" + clean + "}");
            closed.countDown();
        }));
        streams.start();
        // Task changes do not always change the state: look every half second, bounded by
        // the run (the test stops the instance).
        while (!closed.await(500, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            report.run();
        }
    }
}
