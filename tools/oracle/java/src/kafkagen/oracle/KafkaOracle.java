package kafkagen.oracle;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Kafka's own generated message classes behind one batch operation.
 *
 * <p>{@link #process} takes a batch of items and returns one result per item, in order. The
 * Python client speaks this format through {@link #main}: length-prefixed frames on stdin and
 * stdout, one JVM per Python process (in Spark, per Python worker).
 *
 * <p>A batch (big-endian): int32 count, then per item: int8 op, int16 api key, int8 kind (0
 * request, 1 response, 2 request header, 3 response header, 4 coordinator key and 5 coordinator
 * value, whose api key is the record type), int16 version (for the header kinds the header
 * version), int32 length and that many payload bytes. Ops: 1 READ (payload: wire
 * bytes), 2 WRITE (payload: Kafka's JSON form as UTF-8), 3 VERSIONS (no payload), 4 JUDGE (one
 * message with kafkagen's own results: see {@link #judge}).
 *
 * <p>A result: int8 status, int32 length + UTF-8 text, int32 length + bytes. Status 0 OK: the
 * bytes are Kafka's encoding of the message ({@code write} at the same version) and, for a READ,
 * the text is Kafka's JSON form of it ({@code *DataJsonConverter.write}; a WRITE leaves it empty:
 * its JSON form is that of reading its bytes); for VERSIONS the text is the table of APIs and
 * versions. Status 1 REJECTED, 2 UNSUPPORTED (no such API, kind or version here) and
 * 3 UNWRITABLE (Kafka read the bytes but could not write the message back or render its JSON)
 * carry the reason as text and no bytes. A JUDGE result is OK with the disagreements as its
 * bytes, or UNSUPPORTED.
 *
 * <p>Kafka accepts bytes when {@code read} returns and has consumed every byte: its request
 * parsing ignores bytes left over after a body, but a codec that leaves bytes unread has not read
 * that message, so trailing bytes are a rejection here.
 */
public final class KafkaOracle {
    public static final byte READ = 1;
    public static final byte WRITE = 2;
    public static final byte VERSIONS = 3;
    public static final byte JUDGE = 4;

    public static final byte OK = 0;
    public static final byte REJECTED = 1;
    public static final byte UNSUPPORTED = 2;
    public static final byte UNWRITABLE = 3;
    /** A JUDGE expectation: kafkagen failed otherwise than by refusing the bytes. */
    public static final byte FAILED = 4;
    /** A JUDGE expectation: none given, every answer goes back to be judged by the caller. */
    public static final byte NO_EXPECTATION = -1;
    /** A JUDGE length that stands for the message's own JSON form or the question's bytes. */
    private static final int SAME = -1;

    /** Written once on stdout when the server is ready: the client knows the JVM is up. */
    private static final byte[] HELLO = "KGO1".getBytes(StandardCharsets.US_ASCII);

    private static final String[] KINDS = {"request", "response", "request header", "response header",
            "coordinator key", "coordinator value"};

    /**
     * Kafka's converters put a float64 NaN or infinity in the tree as a number: written as the
     * bare tokens NaN and Infinity (not Jackson's default, strings) and read back as numbers.
     */
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
            .build();

    /** One message class with its JSON converter and the versions its spec declares. */
    private static final class Codec {
        final MethodHandle make;
        final MethodHandle fromJson;
        final MethodHandle toJson;
        final short lowest;
        final short highest;

        Codec(Class<? extends Message> type) throws ReflectiveOperationException {
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            Class<?> converter = Class.forName(type.getName() + "JsonConverter");
            make = lookup.findConstructor(type, MethodType.methodType(void.class))
                    .asType(MethodType.methodType(Message.class));
            fromJson = lookup.findStatic(converter, "read",
                            MethodType.methodType(type, JsonNode.class, short.class))
                    .asType(MethodType.methodType(Message.class, JsonNode.class, short.class));
            toJson = lookup.findStatic(converter, "write",
                            MethodType.methodType(JsonNode.class, type, short.class))
                    .asType(MethodType.methodType(JsonNode.class, Message.class, short.class));
            Message sample = newMessage();
            lowest = sample.lowestSupportedVersion();
            highest = sample.highestSupportedVersion();
        }

        Message newMessage() {
            try {
                return (Message) make.invokeExact();
            } catch (Throwable e) {
                throw new IllegalStateException("cannot create a message", e);
            }
        }
    }

    /** Codecs by api key * 2 + (0 request, 1 response); the headers apart. */
    private static final Codec[] CODECS;
    private static final Codec REQUEST_HEADER;
    private static final Codec RESPONSE_HEADER;

    static {
        try {
            int maxKey = 0;
            for (ApiMessageType type : ApiMessageType.values()) {
                maxKey = Math.max(maxKey, type.apiKey());
            }
            CODECS = new Codec[2 * (maxKey + 1)];
            for (ApiMessageType type : ApiMessageType.values()) {
                if (!hasVersions(type)) {
                    continue;
                }
                CODECS[2 * type.apiKey()] = new Codec(type.newRequest().getClass());
                CODECS[2 * type.apiKey() + 1] = new Codec(type.newResponse().getClass());
            }
            REQUEST_HEADER = new Codec(RequestHeaderData.class);
            RESPONSE_HEADER = new Codec(ResponseHeaderData.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private KafkaOracle() {}

    /** Kafka 4 keeps the keys of the APIs it removed (LeaderAndIsr and others) without versions. */
    private static boolean hasVersions(ApiMessageType type) {
        return type.highestSupportedVersion(true) >= type.lowestSupportedVersion();
    }

    /** One result, before it is framed. */
    private static final class Result {
        final byte status;
        final byte[] text;
        final byte[] bytes;

        Result(byte status, String text, byte[] bytes) {
            this.status = status;
            this.text = text.getBytes(StandardCharsets.UTF_8);
            this.bytes = bytes;
        }

        static Result fail(byte status, String reason) {
            return new Result(status, reason, new byte[0]);
        }

        int size() {
            return 9 + text.length + bytes.length;
        }
    }

    /** The results of one batch; thread-safe. */
    public static byte[] process(byte[] batch) {
        ByteBuffer in = ByteBuffer.wrap(batch);
        int count = in.getInt();
        if (count < 0) {
            throw new IllegalArgumentException("batch: negative item count " + count);
        }
        Result[] results = new Result[count];
        int size = 4;
        for (int i = 0; i < count; i++) {
            byte op = in.get();
            short apiKey = in.getShort();
            byte kind = in.get();
            short version = in.getShort();
            int length = in.getInt();
            if (length < 0 || length > in.remaining()) {
                throw new IllegalArgumentException(
                        "batch item " + i + ": payload of " + length + " bytes, "
                                + in.remaining() + " left in the batch");
            }
            byte[] payload = new byte[length];
            in.get(payload);
            results[i] = one(op, apiKey, kind, version, payload);
            size += results[i].size();
        }
        if (in.hasRemaining()) {
            throw new IllegalArgumentException(
                    "batch: " + in.remaining() + " bytes after its " + count + " items");
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        out.putInt(count);
        for (Result r : results) {
            out.put(r.status);
            out.putInt(r.text.length);
            out.put(r.text);
            out.putInt(r.bytes.length);
            out.put(r.bytes);
        }
        return out.array();
    }

    private static Result one(byte op, short apiKey, byte kind, short version, byte[] payload) {
        if (op == VERSIONS) {
            return new Result(OK, versions(), new byte[0]);
        }
        if (op != READ && op != WRITE && op != JUDGE) {
            throw new IllegalArgumentException("batch: unknown op " + op);
        }
        Codec codec = codec(apiKey, kind);
        if (codec == null) {
            String what = kind >= 0 && kind < KINDS.length ? KINDS[kind] : "kind " + kind;
            return Result.fail(UNSUPPORTED, "Kafka has no " + what + " for API key " + apiKey);
        }
        if (version < codec.lowest || version > codec.highest) {
            return Result.fail(UNSUPPORTED, "Kafka has no version " + version + " of "
                    + KINDS[kind] + " " + apiKey + " (it has " + codec.lowest + "-" + codec.highest + ")");
        }
        if (op == JUDGE) {
            return judge(codec, version, ByteBuffer.wrap(payload));
        }
        if (op == READ) {
            return read(codec, version, payload).result();
        }
        JsonNode tree;
        try {
            tree = MAPPER.readTree(payload);
        } catch (Throwable e) {
            return Result.fail(REJECTED, describe(rethrowFatal(e)));
        }
        return write(codec, version, tree).result();
    }

    /** Kafka's outcome of one question, before it is framed: the JSON form as a tree. */
    private static final class Answer {
        final byte status;
        final JsonNode json;
        final byte[] bytes;
        final String reason;

        Answer(byte status, JsonNode json, byte[] bytes, String reason) {
            this.status = status;
            this.json = json;
            this.bytes = bytes;
            this.reason = reason;
        }

        static Answer fail(byte status, Throwable e) {
            return new Answer(status, null, null, describe(rethrowFatal(e)));
        }

        Result result() {
            if (status != OK) {
                return Result.fail(status, reason);
            }
            try {
                return new Result(OK, json == null ? "" : MAPPER.writeValueAsString(json), bytes);
            } catch (IOException e) {
                return Result.fail(UNWRITABLE, describe(e));
            }
        }
    }

    /** Kafka reads the bytes, then writes them back and renders its JSON form. */
    private static Answer read(Codec codec, short version, byte[] payload) {
        Message message = codec.newMessage();
        try {
            ByteBuffer buffer = ByteBuffer.wrap(payload);
            message.read(new ByteBufferAccessor(buffer), version);
            if (buffer.hasRemaining()) {
                return new Answer(REJECTED, null, null, buffer.remaining()
                        + " trailing bytes after byte " + buffer.position());
            }
        } catch (Throwable e) {
            return Answer.fail(REJECTED, e);
        }
        try {
            byte[] bytes = encode(message, version);
            JsonNode json = (JsonNode) codec.toJson.invokeExact(message, version);
            return new Answer(OK, json, bytes, "");
        } catch (Throwable e) {
            return Answer.fail(UNWRITABLE, e);
        }
    }

    /** Kafka reads the JSON form and writes the message (no JSON form of its own). */
    private static Answer write(Codec codec, short version, JsonNode tree) {
        try {
            Message message = (Message) codec.fromJson.invokeExact(tree, version);
            // Kafka's own reader may accept what its writer refuses: a rejection either way.
            return new Answer(OK, null, encode(message, version), "");
        } catch (Throwable e) {
            return Answer.fail(REJECTED, e);
        }
    }

    /**
     * Kafka judges one message against kafkagen's own results for it, so that agreement, the
     * common case, costs no transfer and no work on the caller's side. The payload (big-endian):
     * int32 length + the message's bytes; int32 length + kafkagen's JSON form of it (UTF-8); the
     * expectation for reading the bytes; for writing the JSON form int8 0 and int32 length + the
     * bytes kafkagen writes from it (or int8 -1: none); int8 count of corrupted copies, each an
     * int32 length + its bytes and the expectation for reading it.
     *
     * <p>An expectation is kafkagen's own outcome: int8 status (0 OK, 1 REJECTED, 3 UNWRITABLE,
     * 4 FAILED, -1 none given); for OK an int32 length + its JSON form (-1: the message's JSON
     * form) and an int32 length + its re-encoding (-1: the bytes read). Kafka agrees when both
     * refuse the bytes, both cannot write them back, or both read them to JSON forms that are equal
     * (see {@link #sameJson}) and write them back as equal bytes; writing, when it writes the same
     * bytes.
     *
     * <p>The result's bytes: int16 count of the questions Kafka did not agree on, each int8 role
     * (-1 the read, -2 the write, k the corrupted copy k), Kafka's outcome framed as a READ's or
     * WRITE's result is, and int32 length + the question's payload (bytes, or the JSON form), for
     * the caller to name the difference.
     */
    private static Result judge(Codec codec, short version, ByteBuffer in) {
        byte[] data = bytes(in);
        byte[] jsonText = bytes(in);
        JsonNode tree = null;
        String unreadable = null;
        try {
            tree = MAPPER.readTree(jsonText);
        } catch (Throwable e) {
            unreadable = describe(rethrowFatal(e));
        }
        List<byte[]> disagreements = new ArrayList<>(2);
        // The read: Kafka's JSON form and bytes against kafkagen's.
        Answer read = read(codec, version, data);
        if (!agrees(in, read, data, tree)) {
            disagreements.add(frame(-1, read, data));
        }
        // The write of kafkagen's JSON form.
        byte writeExpect = in.get();
        byte[] written = writeExpect == OK ? bytes(in, data) : null;
        Answer write = tree == null ? new Answer(REJECTED, null, null, unreadable)
                : write(codec, version, tree);
        if (written == null || write.status != OK || !Arrays.equals(written, write.bytes)) {
            disagreements.add(frame(-2, write, jsonText));
        }
        int mutants = in.get();
        for (int k = 0; k < mutants; k++) {
            byte[] bad = bytes(in);
            Answer answer = read(codec, version, bad);
            if (!agrees(in, answer, bad, tree)) {
                disagreements.add(frame(k, answer, bad));
            }
        }
        if (in.hasRemaining()) {
            throw new IllegalArgumentException("judge: " + in.remaining() + " bytes after the questions");
        }
        int size = 2;
        for (byte[] d : disagreements) {
            size += d.length;
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        out.putShort((short) disagreements.size());
        for (byte[] d : disagreements) {
            out.put(d);
        }
        return new Result(OK, "", out.array());
    }

    /** Reads kafkagen's expectation for a read from {@code in} and compares Kafka's answer. */
    private static boolean agrees(ByteBuffer in, Answer kafka, byte[] question, JsonNode messageJson) {
        byte status = in.get();
        if (status != OK) {
            return (status == REJECTED || status == UNWRITABLE) && status == kafka.status;
        }
        int jsonLength = in.getInt();
        JsonNode ours = messageJson;
        boolean parsed = true;
        if (jsonLength != SAME) {
            byte[] text = take(in, jsonLength);
            try {
                ours = MAPPER.readTree(text);
            } catch (Throwable e) {
                rethrowFatal(e);
                parsed = false;
            }
        }
        byte[] bytes = bytes(in, question);
        return parsed && ours != null && kafka.status == OK && Arrays.equals(bytes, kafka.bytes)
                && sameJson(kafka.json, ours);
    }

    /**
     * Whether kafkagen's JSON form (parsed from its text) equals Kafka's tree: the same keys in
     * the same order, integers equal to integers, floating-point numbers to floating-point
     * numbers (by value: NaN equals NaN, -0.0 equals 0.0; the bytes tell the sign), strings to
     * strings, Kafka's bytes to their base64 text, booleans and nulls to themselves. Anything
     * else counts as a difference, which the caller then names.
     */
    static boolean sameJson(JsonNode kafka, JsonNode ours) {
        JsonNodeType type = kafka.getNodeType();
        switch (type) {
            case OBJECT: {
                if (!ours.isObject() || ours.size() != kafka.size()) {
                    return false;
                }
                Iterator<Map.Entry<String, JsonNode>> theirs = kafka.fields();
                Iterator<Map.Entry<String, JsonNode>> mine = ours.fields();
                while (theirs.hasNext()) {
                    Map.Entry<String, JsonNode> a = theirs.next();
                    Map.Entry<String, JsonNode> b = mine.next();
                    if (!a.getKey().equals(b.getKey()) || !sameJson(a.getValue(), b.getValue())) {
                        return false;
                    }
                }
                return true;
            }
            case ARRAY: {
                int n = kafka.size();
                if (!ours.isArray() || ours.size() != n) {
                    return false;
                }
                for (int i = 0; i < n; i++) {
                    if (!sameJson(kafka.get(i), ours.get(i))) {
                        return false;
                    }
                }
                return true;
            }
            case NUMBER:
                if (kafka.isIntegralNumber()) {
                    return ours.isIntegralNumber() && (kafka.canConvertToLong() && ours.canConvertToLong()
                            ? kafka.longValue() == ours.longValue()
                            : kafka.bigIntegerValue().equals(ours.bigIntegerValue()));
                }
                if (!kafka.isDouble() || !ours.isDouble()) {
                    return false;
                }
                double a = kafka.doubleValue();
                double b = ours.doubleValue();
                return a == b || (Double.isNaN(a) && Double.isNaN(b));
            case STRING:
                return ours.isTextual() && kafka.textValue().equals(ours.textValue());
            case BINARY:
                try {
                    return ours.isTextual()
                            && Base64.getEncoder().encodeToString(kafka.binaryValue()).equals(ours.textValue());
                } catch (IOException e) {
                    return false;
                }
            case BOOLEAN:
                return ours.isBoolean() && kafka.booleanValue() == ours.booleanValue();
            case NULL:
                return ours.isNull();
            default:
                return false;
        }
    }

    /** A disagreement as the JUDGE result carries it. */
    private static byte[] frame(int role, Answer kafka, byte[] question) {
        Result r = kafka.result();
        ByteBuffer out = ByteBuffer.allocate(1 + r.size() + 4 + question.length);
        out.put((byte) role);
        out.put(r.status);
        out.putInt(r.text.length);
        out.put(r.text);
        out.putInt(r.bytes.length);
        out.put(r.bytes);
        out.putInt(question.length);
        out.put(question);
        return out.array();
    }

    private static byte[] bytes(ByteBuffer in) {
        return take(in, in.getInt());
    }

    /** Length-prefixed bytes, where the length {@link #SAME} stands for {@code same}. */
    private static byte[] bytes(ByteBuffer in, byte[] same) {
        int length = in.getInt();
        return length == SAME ? same : take(in, length);
    }

    private static byte[] take(ByteBuffer in, int length) {
        if (length < 0 || length > in.remaining()) {
            throw new IllegalArgumentException("judge: a field of " + length + " bytes, "
                    + in.remaining() + " left");
        }
        byte[] out = new byte[length];
        in.get(out);
        return out;
    }

    private static Codec codec(short apiKey, byte kind) {
        if (kind == 4 || kind == 5) {
            return recordCodec(apiKey, kind == 4);
        }
        if (kind == 2) {
            return REQUEST_HEADER;
        }
        if (kind == 3) {
            return RESPONSE_HEADER;
        }
        if ((kind != 0 && kind != 1) || apiKey < 0 || 2 * apiKey + kind >= CODECS.length) {
            return null;
        }
        return CODECS[2 * apiKey + kind];
    }

    /** Where the group coordinator's record classes are, when it is on the classpath. */
    private static final String RECORD_TYPES =
            "org.apache.kafka.coordinator.group.generated.CoordinatorRecordType";

    /** Codecs of the coordinator's records by record type * 2 + (0 key, 1 value). */
    private static final Map<Integer, Codec> RECORD_CODECS = new ConcurrentHashMap<>();

    /**
     * The group coordinator's key or value class of a record type (the API key of kinds 4 and
     * 5), looked up by name: only callers that put kafka-group-coordinator on the classpath
     * ask for them. Null when it is absent or has no such record type.
     */
    private static Codec recordCodec(short type, boolean key) {
        return RECORD_CODECS.computeIfAbsent(2 * type + (key ? 0 : 1), k -> {
            try {
                Class<?> types = Class.forName(RECORD_TYPES);
                Object recordType = types.getMethod("fromId", short.class).invoke(null, type);
                Object sample = types.getMethod(key ? "newRecordKey" : "newRecordValue")
                        .invoke(recordType);
                return new Codec(sample.getClass().asSubclass(Message.class));
            } catch (ReflectiveOperationException e) {
                return null;
            }
        });
    }

    private static byte[] encode(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        message.write(new ByteBufferAccessor(buffer), cache, version);
        if (buffer.hasRemaining()) {
            throw new IllegalStateException("Kafka sized the message at " + size
                    + " bytes but wrote " + buffer.position());
        }
        return buffer.array();
    }

    /** Errors that leave the JVM unusable are not a verdict on the bytes: let them end it. */
    private static Throwable rethrowFatal(Throwable e) {
        if (e instanceof VirtualMachineError && !(e instanceof StackOverflowError)
                && !(e instanceof OutOfMemoryError)) {
            throw (VirtualMachineError) e;
        }
        return e;
    }

    private static String describe(Throwable e) {
        String message = e.getMessage();
        return e.getClass().getName() + (message == null ? "" : ": " + message);
    }

    /** Every API with its versions and header versions, and the header versions there are. */
    private static String versions() {
        ObjectNode root = MAPPER.createObjectNode();
        ArrayNode apis = root.putArray("apis");
        for (ApiMessageType type : ApiMessageType.values()) {
            if (!hasVersions(type)) {
                continue;
            }
            ObjectNode api = apis.addObject();
            api.put("api_key", type.apiKey());
            api.put("name", type.name);
            api.put("lowest", type.lowestSupportedVersion());
            api.put("highest", type.highestSupportedVersion(true));
            api.put("highest_stable", type.highestSupportedVersion(false));
            api.put("request_lowest", CODECS[2 * type.apiKey()].lowest);
            api.put("request_highest", CODECS[2 * type.apiKey()].highest);
            api.put("response_lowest", CODECS[2 * type.apiKey() + 1].lowest);
            api.put("response_highest", CODECS[2 * type.apiKey() + 1].highest);
            ArrayNode requestHeaders = api.putArray("request_header_versions");
            ArrayNode responseHeaders = api.putArray("response_header_versions");
            for (short v = type.lowestSupportedVersion(); v <= type.highestSupportedVersion(true); v++) {
                requestHeaders.add(type.requestHeaderVersion(v));
                responseHeaders.add(type.responseHeaderVersion(v));
            }
        }
        root.putArray("request_header").add(REQUEST_HEADER.lowest).add(REQUEST_HEADER.highest);
        root.putArray("response_header").add(RESPONSE_HEADER.lowest).add(RESPONSE_HEADER.highest);
        return root.toString();
    }

    /**
     * The server: a length-prefixed batch on stdin, its length-prefixed results on stdout, until
     * stdin ends. A batch that cannot be parsed gets length -1 and a length-prefixed reason.
     */
    public static void main(String[] args) throws IOException {
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        DataOutputStream out = new DataOutputStream(
                new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16));
        // Anything else printing to stdout would corrupt the frames: send it to stderr.
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        out.write(HELLO);
        out.flush();
        while (true) {
            int length;
            try {
                length = in.readInt();
            } catch (EOFException e) {
                return;
            }
            byte[] batch = new byte[length];
            in.readFully(batch);
            byte[] results;
            try {
                results = process(batch);
            } catch (RuntimeException e) {
                byte[] reason = describe(e).getBytes(StandardCharsets.UTF_8);
                out.writeInt(-1);
                out.writeInt(reason.length);
                out.write(reason);
                out.flush();
                continue;
            }
            out.writeInt(results.length);
            out.write(results);
            out.flush();
        }
    }
}
