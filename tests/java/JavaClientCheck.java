import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.*;

/**
 * Kafka's own Java client against a broker: the admin client creates a topic of three
 * partitions with three replicas, an idempotent producer writes RECORDS records with
 * acks=all, a transactional producer commits RECORDS more and aborts RECORDS, a
 * read_committed consumer of the given group protocol (classic or consumer) reads in a
 * group and commits until it is at the end of every partition, and the admin client
 * lists and describes the group, its offsets and the topic. Prints one "check: ..." line
 * per result; exits 1 on any failure.
 *
 * Usage: java -cp kafka-clients... JavaClientCheck BOOTSTRAP TOPIC GROUP PROTOCOL RECORDS
 */
public class JavaClientCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], protocol = args[3];
        int records = Integer.parseInt(args[4]);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        common.put("request.timeout.ms", "15000");
        common.put("default.api.timeout.ms", "30000");

        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 3))).all().get(30, TimeUnit.SECONDS);
            System.out.println("check: created " + topic);

            Properties p = new Properties();
            p.putAll(common);
            p.put("acks", "all");
            p.put("enable.idempotence", "true");
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < records; i++) {
                    sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
                }
                producer.flush();
                for (Future<RecordMetadata> f : sent) f.get(30, TimeUnit.SECONDS);
            }
            System.out.println("check: produced " + records);

            // A transactional producer: one transaction committed, one aborted.
            Properties t = new Properties();
            t.putAll(p);
            t.put("transactional.id", group + "-txn");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(t)) {
                producer.initTransactions();
                producer.beginTransaction();
                for (int i = 0; i < records; i++) producer.send(new ProducerRecord<>(topic, "t" + i, "v"));
                producer.commitTransaction();
                producer.beginTransaction();
                for (int i = 0; i < records; i++) producer.send(new ProducerRecord<>(topic, "a" + i, "v"));
                producer.flush();
                producer.abortTransaction();
            }
            System.out.println("check: committed one transaction, aborted one");

            Properties c = new Properties();
            c.putAll(common);
            c.put("group.id", group);
            c.put("group.protocol", protocol);
            c.put("auto.offset.reset", "earliest");
            c.put("enable.auto.commit", "false");
            c.put("isolation.level", "read_committed");
            c.put("key.deserializer", StringDeserializer.class.getName());
            c.put("value.deserializer", StringDeserializer.class.getName());
            Set<String> seen = new HashSet<>();
            int duplicates = 0;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60_000;
                int aborted = 0;
                Map<org.apache.kafka.common.TopicPartition, Long> end = null;
                while (System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                        if (r.key().startsWith("a")) aborted++;
                        else if (!seen.add(r.key())) duplicates++;
                    }
                    consumer.commitSync();
                    if (seen.size() >= 2 * records) {
                        // Done once the group's position reaches the end of every partition.
                        end = consumer.endOffsets(consumer.assignment());
                        boolean atEnd = true;
                        for (var e : end.entrySet()) atEnd &= consumer.position(e.getKey()) >= e.getValue();
                        if (atEnd && consumer.assignment().size() == 3) break;
                    }
                }
                System.out.println("check: consumed " + seen.size() + " duplicates " + duplicates
                        + " aborted " + aborted);

                Collection<GroupListing> groups = admin.listGroups().all().get(30, TimeUnit.SECONDS);
                boolean listed = groups.stream().anyMatch(g -> g.groupId().equals(group));
                System.out.println("check: listed group " + listed);
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(30, TimeUnit.SECONDS).get(group);
                System.out.println("check: group members " + d.members().size() + " state " + d.groupState());
            }
            Map<org.apache.kafka.common.TopicPartition, OffsetAndMetadata> committed = admin
                    .listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            long total = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            Map<org.apache.kafka.common.TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (var tp : committed.keySet()) latest.put(tp, OffsetSpec.latest());
            long logEnd = 0;
            for (var info : admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values()) logEnd += info.offset();
            System.out.println("check: committed offsets at the log ends " + (total == logEnd && committed.size() == 3));
            TopicDescription td = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get(topic);
            System.out.println("check: partitions " + td.partitions().size() + " replicas "
                    + td.partitions().get(0).replicas().size());
            boolean ok = seen.size() == 2 * records && duplicates == 0 && total == logEnd
                    && committed.size() == 3 && td.partitions().size() == 3;
            System.exit(ok ? 0 : 1);
        }
    }
}
