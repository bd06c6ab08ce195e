import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;

/**
 * The metadata quorum as Kafka's Admin sees it: creates a topic (a metadata change), then
 * describeMetadataQuorum against one bootstrap address, printed as one JSON line (leader, epoch, high watermark, voters and
 * observers with their offsets and whether their fetch times are set, the voters' nodes).
 */
public final class QuorumScenario {
    private static String replicas(List<QuorumInfo.ReplicaState> states) {
        return states.stream()
                .map(s -> "{\"id\":" + s.replicaId() + ",\"logEndOffset\":" + s.logEndOffset()
                        + ",\"fetched\":" + s.lastFetchTimestamp().isPresent()
                        + ",\"caughtUp\":" + s.lastCaughtUpTimestamp().isPresent() + "}")
                .collect(Collectors.joining(",", "[", "]"));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: QuorumScenario BOOTSTRAP TOPIC");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(args[1], 1, (short) 1))).all()
                    .get(30, TimeUnit.SECONDS);
            QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
            String nodes = q.nodes().values().stream()
                    .map(n -> "{\"id\":" + n.nodeId() + ",\"endpoints\":" + n.endpoints().size() + "}")
                    .collect(Collectors.joining(",", "[", "]"));
            System.out.println("{\"leader\":" + q.leaderId() + ",\"epoch\":" + q.leaderEpoch()
                    + ",\"highWatermark\":" + q.highWatermark() + ",\"voters\":" + replicas(q.voters())
                    + ",\"observers\":" + replicas(q.observers()) + ",\"nodes\":" + nodes + "}");
        }
        System.exit(0);
    }
}
