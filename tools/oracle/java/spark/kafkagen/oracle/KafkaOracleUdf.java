package kafkagen.oracle;

import org.apache.spark.sql.api.java.UDF1;

/**
 * {@link KafkaOracle#process} as a Spark SQL function over a binary column of batches, so
 * that Kafka's classes run in the executors' JVMs, next to the bytes: one call per batch of
 * many messages. A null batch gives null.
 */
public final class KafkaOracleUdf implements UDF1<byte[], byte[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public byte[] call(byte[] batch) {
        return batch == null ? null : KafkaOracle.process(batch);
    }
}
