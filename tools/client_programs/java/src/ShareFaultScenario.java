import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One KafkaShareConsumer that accepts every record it gets, for a test that injects faults
 * while it runs; what it sees is printed as JSON lines and the test decides what is right.
 *
 * <p>{@code ShareFaultScenario BOOTSTRAP TOPIC GROUP N}: subscribes to TOPIC in share group
 * GROUP and polls until records with keys 0..N-1 were all accepted (commitSync answered
 * without error) or 120 s passed. Lines printed: {@code {"polled": [[key, deliveryCount],
 * ...]}} for each poll that returned records, {@code {"failed": "..."}} for each
 * acknowledgement that failed, then {@code {"accepted": K, "errors": [...]}} at the end.
 */
public final class ShareFaultScenario {
    static final long DEADLINE_MS = 120_000;

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: ShareFaultScenario BOOTSTRAP TOPIC GROUP N");
            System.exit(2);
            return;
        }
        int n = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        Set<Integer> accepted = new TreeSet<>();
        String error = "";
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(Set.of(args[1]));
            while (accepted.size() < n && System.currentTimeMillis() < deadline) {
                StringBuilder polled = new StringBuilder();
                Set<Integer> keys = new TreeSet<>();
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    keys.add(Integer.parseInt(r.key()));
                    polled.append(polled.length() == 0 ? "" : ",")
                            .append("[").append(r.key()).append(",")
                            .append(r.deliveryCount().orElse((short) -1)).append("]");
                }
                if (keys.isEmpty()) {
                    continue;
                }
                System.out.println("{\"polled\":[" + polled + "]}");
                boolean ok = true;
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync().entrySet()) {
                    if (e.getValue().isPresent()) {
                        ok = false;
                        System.out.println("{\"failed\":" + q(String.valueOf(e.getValue().get())) + "}");
                    }
                }
                if (ok) {
                    accepted.addAll(keys);
                }
                System.out.flush();
            }
        } catch (Exception e) {
            error = String.valueOf(e);
        }
        System.out.println("{\"accepted\":" + accepted.size() + ",\"error\":" + q(error) + "}");
        System.exit(0);
    }
}
