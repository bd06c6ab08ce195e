import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions of Kafka's Java producer, printed as one JSON line; the test decides what is
 * right. Modes:
 *
 * <ul>
 *   <li>{@code transform BOOTSTRAP TOPIC N K}: N records into TOPIC-in, then a
 *       consume-transform-produce loop in group TOPIC-group: each poll becomes one
 *       transaction that writes the records, transformed, to TOPIC-out and commits the
 *       group's offsets in it (sendOffsetsToTransaction); every K-th transaction is aborted
 *       and its input read again. Then TOPIC-out read read_committed and read_uncommitted.
 *   <li>{@code two-phase-open BOOTSTRAP TOPIC}: a two-phase commit producer
 *       (transaction.two.phase.commit.enable) writes to TOPIC in a transaction, flushes and
 *       halts without ending it, as a crashed participant would.
 *   <li>{@code two-phase-resume BOOTSTRAP TOPIC WAIT_MS}: after WAIT_MS, the transaction's
 *       description; then the next two-phase producer of the same id (which aborts what the
 *       last one left open) commits one record; then TOPIC read read_committed.
 * </ul>
 */
public final class TransactionScenario {
    static final long DEADLINE_MS = 90_000;
    static final int PARTITIONS = 3;

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static String strings(List<String> values) {
        return values.stream().map(TransactionScenario::q).collect(Collectors.joining(",", "[", "]"));
    }

    static Properties producerProps(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return p;
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        }
        return new KafkaConsumer<>(c);
    }

    static void createTopics(String bootstrap, String... topics) throws Exception {
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            List<NewTopic> news = new ArrayList<>();
            for (String t : topics) {
                news.add(new NewTopic(t, PARTITIONS, (short) 3));
            }
            admin.createTopics(news).all().get(30, TimeUnit.SECONDS);
        }
    }

    static String describe(String bootstrap, String transactionalId) throws Exception {
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            TransactionDescription d = admin.describeTransactions(List.of(transactionalId))
                    .description(transactionalId).get(30, TimeUnit.SECONDS);
            return "{\"state\":" + q(d.state().toString()) + ",\"producer_epoch\":" + d.producerEpoch()
                    + ",\"timeout_ms\":" + d.transactionTimeoutMs() + ",\"partitions\":"
                    + d.topicPartitions().size() + "}";
        }
    }

    /** Every value of {@code topic} up to its end offsets, read at {@code isolation}. */
    static List<String> readAll(String bootstrap, String topic, String isolation) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap, null, isolation)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                parts.add(new TopicPartition(topic, p));
            }
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(topic + ": not read to its end in time");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        return values;
    }

    static String transform(String bootstrap, String topic, int n, int k) throws Exception {
        String in = topic + "-in";
        String out = topic + "-out";
        String tid = topic + "-transform";
        createTopics(bootstrap, in, out);
        Properties idempotent = producerProps(bootstrap);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(idempotent)) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(in, "key-" + i, "in-" + i));
            }
            p.flush();
        }
        Properties tp = producerProps(bootstrap);
        tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        int committed = 0;
        int aborted = 0;
        int done = 0;
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(tp);
                KafkaConsumer<String, String> consumer = consumer(bootstrap, topic + "-group",
                        "read_committed")) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            while (done < n) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("transformed " + done + " of " + n + " in time");
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                Map<TopicPartition, Long> first = new HashMap<>();
                producer.beginTransaction();
                for (ConsumerRecord<String, String> r : records) {
                    TopicPartition from = new TopicPartition(r.topic(), r.partition());
                    first.putIfAbsent(from, r.offset());
                    next.put(from, new OffsetAndMetadata(r.offset() + 1));
                    producer.send(new ProducerRecord<>(out, r.key(), "out-" + r.value()));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if ((committed + aborted + 1) % k == 0) {
                    // Flushed first: an abort drops batches not yet sent, and the check
                    // that read_uncommitted sees aborted records needs them in the log.
                    producer.flush();
                    producer.abortTransaction();
                    aborted++;
                    first.forEach(consumer::seek);  // read this input again
                } else {
                    producer.commitTransaction();
                    committed++;
                    done += records.count();
                }
            }
            Map<Integer, Long> offsets = new HashMap<>();
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                parts.add(new TopicPartition(in, p));
            }
            consumer.committed(new java.util.HashSet<>(parts), Duration.ofSeconds(30))
                    .forEach((part, o) -> offsets.put(part.partition(), o == null ? -1 : o.offset()));
            Map<TopicPartition, Long> ends = consumer.endOffsets(parts);
            String committedOffsets = parts.stream()
                    .map(part -> q(Integer.toString(part.partition())) + ":[" + offsets.get(part.partition())
                            + "," + ends.get(part) + "]")
                    .collect(Collectors.joining(",", "{", "}"));
            return "{\"committed\":" + committed + ",\"aborted\":" + aborted
                    + ",\"offsets\":" + committedOffsets
                    + ",\"transaction\":" + describe(bootstrap, tid)
                    + ",\"read_committed\":" + strings(readAll(bootstrap, out, "read_committed"))
                    + ",\"read_uncommitted\":" + strings(readAll(bootstrap, out, "read_uncommitted")) + "}";
        }
    }

    static Properties twoPhase(String bootstrap, String topic) {
        Properties p = producerProps(bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-2pc");
        p.put(ProducerConfig.TRANSACTION_TWO_PHASE_COMMIT_ENABLE_CONFIG, "true");
        return p;
    }

    static void twoPhaseOpen(String bootstrap, String topic) throws Exception {
        createTopics(bootstrap, topic);
        KafkaProducer<String, String> producer = new KafkaProducer<>(twoPhase(bootstrap, topic));
        producer.initTransactions();
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, "key", "left-open")).get(30, TimeUnit.SECONDS);
        producer.flush();
        System.out.println("{\"open\":true}");
        System.out.flush();
        Runtime.getRuntime().halt(0);  // no EndTxn, no close: a crashed participant
    }

    static String twoPhaseResume(String bootstrap, String topic, long waitMs) throws Exception {
        Thread.sleep(waitMs);
        String before = describe(bootstrap, topic + "-2pc");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(twoPhase(bootstrap, topic))) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, "key", "committed")).get(30, TimeUnit.SECONDS);
            producer.commitTransaction();
        }
        return "{\"before\":" + before + ",\"after\":" + describe(bootstrap, topic + "-2pc")
                + ",\"read_committed\":" + strings(readAll(bootstrap, topic, "read_committed"))
                + ",\"read_uncommitted\":" + strings(readAll(bootstrap, topic, "read_uncommitted")) + "}";
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "";
        String json;
        if (mode.equals("transform") && args.length == 5) {
            json = transform(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        } else if (mode.equals("two-phase-open") && args.length == 3) {
            twoPhaseOpen(args[1], args[2]);
            return;
        } else if (mode.equals("two-phase-resume") && args.length == 4) {
            json = twoPhaseResume(args[1], args[2], Long.parseLong(args[3]));
        } else {
            System.err.println("usage: TransactionScenario transform BOOTSTRAP TOPIC N K"
                    + " | two-phase-open BOOTSTRAP TOPIC | two-phase-resume BOOTSTRAP TOPIC WAIT_MS");
            System.exit(2);
            return;
        }
        System.out.println(json);
        System.exit(0);
    }
}
