import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Share consumers racing for the records of one partition (KIP-932). Creates a topic of one
 * partition; a first KafkaShareConsumer of the share group subscribes and, once the group
 * assigned it the partition, N records keyed 0..N-1 are produced. That consumer stalls: it
 * keeps the first records it gets without acknowledging them past the lock duration, then
 * closes. Two workers of the same group start once it holds them and acknowledge explicitly:
 * key % 10 == 3 is released on its first delivery (accepted on a later one), key % 10 == 7
 * rejected, the rest accepted. Prints one JSON line: every delivery (consumer, offset, key,
 * delivery count, what was done), the stalled deliveries, the group's state at the end and
 * the errors; the test decides whether it is right.
 */
public final class ShareScenario {
    private static final long DEADLINE_MS = 120_000;

    private final String bootstrap;
    private final String topic;
    private final String group;
    private final int n;
    private final long lockMs;
    private final List<String> deliveries = Collections.synchronizedList(new ArrayList<>());
    private final List<String> stalled = Collections.synchronizedList(new ArrayList<>());
    private final List<String> errors = Collections.synchronizedList(new ArrayList<>());
    /** Keys accepted or rejected by a worker whose acknowledgement succeeded. */
    private final Set<Integer> done = ConcurrentHashMap.newKeySet();
    private final CountDownLatch stalling = new CountDownLatch(1);
    private volatile boolean stop;

    private ShareScenario(String bootstrap, String topic, String group, int n, long lockMs) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.group = group;
        this.n = n;
        this.lockMs = lockMs;
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private KafkaShareConsumer<String, String> consumer(String name) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", name);
        p.put("share.acknowledgement.mode", "explicit");
        // Small polls, so that the stalling consumer leaves records to the workers.
        p.put("max.poll.records", "20");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(topic));
        return c;
    }

    private static short count(ConsumerRecord<String, String> r) {
        return r.deliveryCount().orElse((short) -1);
    }

    private void work(String name) {
        try (KafkaShareConsumer<String, String> c = consumer(name)) {
            while (!stop) {
                List<String> polled = new ArrayList<>();
                Map<Integer, AcknowledgeType> ends = new java.util.HashMap<>();
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    int key = Integer.parseInt(r.key());
                    AcknowledgeType type = key % 10 == 7 ? AcknowledgeType.REJECT
                            : key % 10 == 3 && count(r) == 1 ? AcknowledgeType.RELEASE
                            : AcknowledgeType.ACCEPT;
                    c.acknowledge(r, type);
                    polled.add("[" + quote(name) + "," + r.offset() + "," + key + "," + count(r) + ","
                            + quote(type.toString()) + "]");
                    if (type != AcknowledgeType.RELEASE) {
                        ends.put(key, type);
                    }
                }
                Map<TopicIdPartition, Optional<KafkaException>> result = c.commitSync();
                boolean failed = false;
                for (Optional<KafkaException> e : result.values()) {
                    if (e.isPresent()) {
                        failed = true;
                        errors.add(name + ": acknowledgement failed: " + e.get());
                    }
                }
                deliveries.addAll(polled);
                if (!failed) {
                    done.addAll(ends.keySet());
                }
            }
        } catch (Exception e) {
            errors.add(name + ": " + e);
        }
    }

    private void stall(String name) {
        try (KafkaShareConsumer<String, String> c = consumer(name)) {
            long until = System.currentTimeMillis() + DEADLINE_MS;
            while (!stop && System.currentTimeMillis() < until) {
                var records = c.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) {
                    for (ConsumerRecord<String, String> r : records) {
                        stalled.add("[" + r.offset() + "," + r.key() + "," + count(r) + "]");
                    }
                    stalling.countDown();
                    // Hold them, unacknowledged, until their locks have run out.
                    Thread.sleep(lockMs + 3000);
                    return;
                }
            }
        } catch (Exception e) {
            errors.add(name + ": " + e);
        }
    }

    private String run() throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3))).all().get(30, TimeUnit.SECONDS);
            Thread staller = new Thread(() -> stall("stalling"));
            staller.start();
            // Produce once the group assigned the partition and the member fetched (a group
            // starts at the partition's latest offset when first fetched).
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            int members = 0;
            while (members == 0 && System.currentTimeMillis() < deadline) {
                try {
                    ShareGroupDescription d = admin.describeShareGroups(List.of(group))
                            .describedGroups().get(group).get(30, TimeUnit.SECONDS);
                    members = (int) d.members().stream()
                            .filter(m -> !m.assignment().topicPartitions().isEmpty()).count();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                        throw e;
                    }
                }
                Thread.sleep(200);
            }
            Thread.sleep(3000);
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            try (KafkaProducer<String, String> producer =
                    new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < n; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, Integer.toString(i), "value-" + i));
                }
                producer.flush();
            }
            // The workers start once the stalling consumer holds its first records.
            stalling.await(60, TimeUnit.SECONDS);
            List<Thread> workers = List.of(
                    new Thread(() -> work("worker-1")), new Thread(() -> work("worker-2")));
            workers.forEach(Thread::start);
            while (done.size() < n && System.currentTimeMillis() < deadline && errors.isEmpty()) {
                Thread.sleep(200);
            }
            String state = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                    .get(30, TimeUnit.SECONDS).groupState().toString();
            stop = true;
            staller.join(60_000);
            for (Thread t : workers) {
                t.join(60_000);
            }
            return "{\"state\":" + quote(state)
                    + ",\"deliveries\":[" + String.join(",", deliveries) + "]"
                    + ",\"stalled\":[" + String.join(",", stalled) + "]"
                    + ",\"errors\":[" + errors.stream().map(ShareScenario::quote).collect(Collectors.joining(",")) + "]}";
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: ShareScenario BOOTSTRAP TOPIC GROUP N LOCK_MS");
            System.exit(2);
        }
        try {
            System.out.println(new ShareScenario(args[0], args[1], args[2], Integer.parseInt(args[3]),
                    Long.parseLong(args[4])).run());
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }
}
