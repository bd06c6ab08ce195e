import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The client scenario with Kafka's Java client: create a topic, produce with acks=all
 * (idempotent, or in transactions with one aborted among them, then one transaction of only
 * another group's offsets), consume in a group of three that commits after every poll while
 * one member leaves half-way, then list and describe the group and the topic (and the
 * transactional id). Prints one JSON object on stdout; the test decides what is right.
 *
 * <p>Arguments: BOOTSTRAP TOPIC PROTOCOL(classic|consumer) PRODUCER(idempotent|transactional) N;
 * the group is TOPIC-group.
 */
public final class ClientScenario {
    static final int PARTITIONS = 3;
    static final long DEADLINE_MS = 90_000;
    /** The offset the transactional run commits for its transaction's group. */
    static final long TXN_OFFSET = 42;

    final String bootstrap;
    final String protocol;
    final boolean transactional;
    final int n;
    final String topic;
    final String group;
    /** The group whose offsets the transactional run commits inside a transaction. */
    final String txnGroup;
    final long started = System.nanoTime();
    final Map<String, Long> timings = new TreeMap<>();
    final List<String> produced = new ArrayList<>();
    final List<String> aborted = new ArrayList<>();
    final List<String> consumed = java.util.Collections.synchronizedList(new ArrayList<>());
    final Map<Integer, Set<Integer>> assignment = new java.util.concurrent.ConcurrentHashMap<>();
    final AtomicInteger assignments = new AtomicInteger();
    final AtomicInteger staleEpochCommits = new AtomicInteger();
    final List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());

    ClientScenario(String bootstrap, String topic, String protocol, String producer, int n) {
        this.bootstrap = bootstrap;
        this.protocol = protocol;
        this.transactional = producer.equals("transactional");
        this.n = n;
        this.topic = topic;
        this.group = topic + "-group";
        this.txnGroup = topic + "-txn-group";
    }

    void mark(String what) {
        timings.put(what, (System.nanoTime() - started) / 1_000_000);
    }

    static String key(int i) {
        return "key-" + i;
    }

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /** One consumer of the group, polling until told to stop, committing after each poll. */
    final class Member implements Runnable {
        final int index;
        final AtomicBoolean stop = new AtomicBoolean();
        final Thread thread;

        Member(int index) {
            this.index = index;
            this.thread = new Thread(this, "member-" + index);
        }

        @Override
        public void run() {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "member-" + index);
            if (protocol.equals("classic")) {
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            }
            try (KafkaConsumer<String, String> c =
                    new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                        Set<Integer> now = new TreeSet<>(assignment.getOrDefault(index, Set.of()));
                        parts.forEach(tp -> now.remove(tp.partition()));
                        assignment.put(index, now);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        Set<Integer> now = new TreeSet<>(assignment.getOrDefault(index, Set.of()));
                        parts.forEach(tp -> now.add(tp.partition()));
                        assignment.put(index, now);
                        assignments.incrementAndGet();
                    }
                });
                while (!stop.get()) {
                    ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : records) {
                        consumed.add("[" + index + "," + r.partition() + "," + r.offset() + ","
                                + q(r.key()) + "]");
                    }
                    if (!records.isEmpty()) {
                        commit(c);
                    }
                }
            } catch (Exception e) {
                errors.add("member " + index + ": " + e);
            }
            assignment.remove(index);
        }

        /**
         * commitSync, retried while the coordinator answers STALE_MEMBER_EPOCH: a commit
         * sent just before a heartbeat brought a new member epoch. The member still owns
         * its partitions, and the retry carries the new epoch.
         */
        void commit(KafkaConsumer<String, String> c) throws InterruptedException {
            for (int attempt = 1; ; attempt++) {
                try {
                    c.commitSync(Duration.ofSeconds(30));
                    return;
                } catch (CommitFailedException e) {
                    String why = String.valueOf(e.getMessage());
                    if (!why.contains("stale member epoch") || attempt == 20) {
                        throw e;
                    }
                    staleEpochCommits.incrementAndGet();
                    Thread.sleep(50);
                }
            }
        }
    }

    void await(String what, java.util.function.BooleanSupplier cond) throws InterruptedException {
        long end = System.currentTimeMillis() + DEADLINE_MS;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > end) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    boolean shared(int members) {
        Map<Integer, Set<Integer>> now = new HashMap<>(assignment);
        List<Integer> all = new ArrayList<>();
        now.values().forEach(all::addAll);
        all.sort(null);
        return now.size() == members && now.values().stream().noneMatch(Set::isEmpty)
                && all.equals(List.of(0, 1, 2));
    }

    KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        if (transactional) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-txn");
        }
        KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        if (transactional) {
            producer.initTransactions();
        }
        return producer;
    }

    /** A transaction of only a group's offsets (TxnOffsetCommit), committed. */
    void commitOffsetsInTransaction(KafkaProducer<String, String> producer) {
        producer.beginTransaction();
        producer.sendOffsetsToTransaction(
                Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(TXN_OFFSET)),
                new ConsumerGroupMetadata(txnGroup));
        producer.commitTransaction();
    }

    /** The transactional id as the admin client describes it, and the offsets it committed. */
    String transaction(Admin admin) throws Exception {
        String id = topic + "-txn";
        TransactionDescription d = admin.describeTransactions(List.of(id)).description(id)
                .get(30, TimeUnit.SECONDS);
        return "{\"state\":" + q(d.state().toString())
                + ",\"producer_epoch\":" + d.producerEpoch()
                + ",\"offsets\":" + committed(admin, txnGroup) + "}";
    }

    /** Messages [from, to) with acks=all; in a transaction (committed) when transactional. */
    void produce(KafkaProducer<String, String> producer, int from, int to, boolean abort)
            throws Exception {
        if (transactional) {
            producer.beginTransaction();
        }
        List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = from; i < to; i++) {
            sent.add(producer.send(new ProducerRecord<>(topic, key(i), "value-" + i)));
        }
        if (transactional) {
            if (abort) {
                producer.flush();
                producer.abortTransaction();
            } else {
                producer.commitTransaction();
            }
        }
        for (int i = from; i < to; i++) {
            RecordMetadata md = sent.get(i - from).get(30, TimeUnit.SECONDS);
            String row = "[" + md.partition() + "," + md.offset() + "," + q(key(i)) + "]";
            (abort ? aborted : produced).add(row);
        }
    }

    String run() throws Exception {
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        StringBuilder out = new StringBuilder();
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 3))).all()
                    .get(30, TimeUnit.SECONDS);
            mark("topic_created");
            List<Member> members = List.of(new Member(0), new Member(1), new Member(2));
            members.forEach(m -> m.thread.start());
            String groupJson;
            try (KafkaProducer<String, String> producer = producer()) {
                await("three members sharing the partitions", () -> shared(3));
                mark("group_of_three");
                int half = n / 2;
                produce(producer, 0, half, false);
                if (transactional) {
                    produce(producer, n, n + 100, true);
                }
                mark("first_half_produced");
                await("the first half consumed", () -> consumed.size() >= half);
                members.get(0).stop.set(true);
                members.get(0).thread.join(DEADLINE_MS);
                await("two members sharing the partitions", () -> shared(2));
                mark("rebalanced_to_two");
                produce(producer, half, n, false);
                if (transactional) {
                    commitOffsetsInTransaction(producer);
                }
                mark("second_half_produced");
                await("every message consumed", () -> consumed.size() >= n);
                mark("all_consumed");
                Thread.sleep(500); // a duplicate would arrive now
                groupJson = describeGroup(admin);
                mark("group_described");
            } finally {
                for (Member m : members) {
                    m.stop.set(true);
                }
                for (Member m : members) {
                    m.thread.join(DEADLINE_MS);
                }
            }
            out.append("{\"client\":\"java\",\"version\":")
                    .append(q(org.apache.kafka.common.utils.internals.AppInfoParser.getVersion()))
                    .append(",\"protocol\":").append(q(protocol))
                    .append(",\"topic\":").append(q(topic))
                    .append(",\"group\":").append(q(group))
                    .append(",\"produced\":[").append(String.join(",", produced))
                    .append("],\"aborted\":[").append(String.join(",", aborted))
                    .append("],\"consumed\":[").append(String.join(",", consumed))
                    .append("],\"assignments\":").append(assignments.get())
                    .append(",\"stale_epoch_commits\":").append(staleEpochCommits.get())
                    .append(",\"group_description\":").append(groupJson)
                    .append(",\"committed\":").append(committed(admin, group))
                    .append(",\"transaction\":").append(transactional ? transaction(admin) : "null")
                    .append(",\"topics\":").append(describeTopic(admin))
                    .append(",\"errors\":[")
                    .append(errors.stream().map(ClientScenario::q).collect(Collectors.joining(",")))
                    .append("],\"timings_ms\":{")
                    .append(timings.entrySet().stream().map(e -> q(e.getKey()) + ":" + e.getValue())
                            .collect(Collectors.joining(",")))
                    .append("}}");
        }
        return out.toString();
    }

    String describeGroup(Admin admin) throws Exception {
        Collection<GroupListing> listed = admin.listGroups().all().get(30, TimeUnit.SECONDS);
        String names = listed.stream().map(g -> q(g.groupId())).collect(Collectors.joining(","));
        // A consumer-protocol group is Reconciling until each member has acknowledged its new
        // assignment on its next heartbeat; wait for Stable, within the deadline.
        long end = System.currentTimeMillis() + DEADLINE_MS;
        ConsumerGroupDescription d;
        do {
            d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group)
                    .get(30, TimeUnit.SECONDS);
        } while (d.groupState() != org.apache.kafka.common.GroupState.STABLE
                && System.currentTimeMillis() < end && sleep(100));
        return "{\"listed\":[" + names + "],\"state\":" + q(d.groupState().toString())
                + ",\"type\":" + q(d.type().toString())
                + ",\"members\":" + d.members().size() + "}";
    }

    static boolean sleep(long ms) throws InterruptedException {
        Thread.sleep(ms);
        return true;
    }

    String committed(Admin admin, String groupId) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(groupId)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        return "{" + offsets.entrySet().stream()
                .map(e -> q(String.valueOf(e.getKey().partition())) + ":" + e.getValue().offset())
                .collect(Collectors.joining(",")) + "}";
    }

    String describeTopic(Admin admin) throws Exception {
        Set<String> names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames()
                .get(30, TimeUnit.SECONDS).get(topic);
        String parts = d.partitions().stream()
                .map(p -> "{\"partition\":" + p.partition() + ",\"leader\":" + p.leader().id()
                        + ",\"replicas\":" + p.replicas().size() + ",\"isr\":" + p.isr().size() + "}")
                .collect(Collectors.joining(","));
        return "{\"listed\":[" + names.stream().map(ClientScenario::q)
                .collect(Collectors.joining(",")) + "],\"partitions\":[" + parts + "]}";
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: ClientScenario BOOTSTRAP TOPIC classic|consumer "
                    + "idempotent|transactional N");
            System.exit(2);
        }
        String json = new ClientScenario(args[0], args[1], args[2], args[3],
                Integer.parseInt(args[4])).run();
        System.out.println(json);
        System.exit(0);
    }
}
