// Prints, as JSON on stdout, what Kafka's own config definitions say about every topic and
// broker config: type, default, validator, importance, dynamic update mode and synonyms.
// Run by kafkagen.configs_from_jars in Java's source-file mode on Kafka's broker classpath.

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.DynamicConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.storage.internals.log.LogConfig;

public class ConfigFacts {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\"topic\": {");
        String sep = "";
        for (String name : new TreeMap<>(LogConfig.configKeys()).keySet()) {
            ConfigDef.ConfigKey key = LogConfig.configKeys().get(name);
            List<String> chain = new ArrayList<>();
            for (ConfigSynonym s : ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.getOrDefault(name, List.of())) {
                chain.add(s.name() + "|" + converter(s));
            }
            out.append(sep).append(str(name)).append(": ").append(key(key, "\"synonyms\": " + strs(chain)));
            sep = ",\n";
        }
        out.append("},\n\"broker\": {");
        Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
        sep = "";
        // The broker's static definitions, then those only ever set dynamically (the quotas).
        Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(DynamicConfig.Broker.configKeys());
        keys.putAll(AbstractKafkaConfig.CONFIG_DEF.configKeys());
        for (Map.Entry<String, ConfigDef.ConfigKey> e : keys.entrySet()) {
            String name = e.getKey();
            boolean staticKey = AbstractKafkaConfig.CONFIG_DEF.configKeys().containsKey(name);
            String mode = staticKey ? modes.getOrDefault(name, "read-only") : "dynamic-only";
            String extra = "\"mode\": " + str(mode)
                + ", \"synonyms\": " + strs(DynamicBrokerConfig.brokerConfigSynonyms(name, true));
            out.append(sep).append(str(name)).append(": ").append(key(e.getValue(), extra));
            sep = ",\n";
        }
        out.append("},\n\"probe_values\": ").append(strs(List.of(PROBES))).append(",\n\"probes\": {");
        sep = "";
        Map<String, ConfigDef.ConfigKey> all = new TreeMap<>(keys);
        all.putAll(LogConfig.configKeys());
        for (Map.Entry<String, ConfigDef.ConfigKey> e : all.entrySet()) {
            List<String> answers = new ArrayList<>();
            for (String probe : PROBES) answers.add(answer(e.getValue(), probe));
            out.append(sep).append(str(e.getKey())).append(": ").append(strs(answers));
            sep = ",\n";
        }
        out.append("}}");
        System.out.println(out);
    }

    // Values each config is tried with; Kafka's answer to each is compared with kafkagen's.
    static final String[] PROBES = {
        "abc", "-2", "0", "1", "", " 7 ", "99999999999999999999", "0.5", "TRUE", "delete,compact",
        "compact,compact", "producer", "1:0,1:1", "*", "-1", "100000"};

    static String answer(ConfigDef.ConfigKey k, String probe) {
        try {
            Object parsed = ConfigDef.parseType(k.name, probe, k.type);
            if (k.validator != null) k.validator.ensureValid(k.name, parsed);
            return "ok";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    static String converter(ConfigSynonym s) {
        if (s.converter() == ConfigSynonym.HOURS_TO_MILLISECONDS) return "hours";
        if (s.converter() == ConfigSynonym.MINUTES_TO_MILLISECONDS) return "minutes";
        return "same";
    }

    static String key(ConfigDef.ConfigKey k, String extra) throws Exception {
        String def = k.hasDefault() && k.defaultValue != null ? str(ConfigDef.convertToString(k.defaultValue, k.type)) : "null";
        return "{\"type\": " + str(k.type.name()) + ", \"default\": " + def
            + ", \"has_default\": " + k.hasDefault()
            + ", \"importance\": " + str(k.importance.name())
            + ", \"internal\": " + k.internalConfig
            + ", \"validator\": " + validator(k.validator) + ", " + extra + "}";
    }

    // A validator as its kind and its fields (bounds, allowed strings, flags).
    static String validator(Object v) throws Exception {
        if (v == null) return "null";
        Class<?> c = v.getClass();
        String kind = c.isSynthetic() || c.getSimpleName().contains("$$") ? "lambda" : c.getSimpleName();
        StringBuilder b = new StringBuilder("{\"kind\": " + str(kind));
        if (kind.equals("LambdaValidator")) {
            b.append(", \"text\": ").append(str(v.toString()));
        } else if (!kind.equals("lambda")) {
            for (Field f : c.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers())) continue;
                f.setAccessible(true);
                Object x = f.get(v);
                String val;
                if (x == null) val = "null";
                else if (x instanceof Number || x instanceof Boolean) val = str(x.toString());
                else if (x instanceof String) val = str((String) x);
                else if (x instanceof Collection) {
                    List<String> items = new ArrayList<>();
                    for (Object i : (Collection<?>) x) items.add(String.valueOf(i));
                    val = strs(items);
                } else if (x instanceof ConfigDef.Validator) val = validator(x);
                else val = str(x.getClass().getSimpleName());
                b.append(", ").append(str(f.getName())).append(": ").append(val);
            }
        }
        return b.append("}").toString();
    }

    static String strs(Collection<String> items) {
        StringBuilder b = new StringBuilder("[");
        String sep = "";
        for (String i : items) { b.append(sep).append(str(i)); sep = ", "; }
        return b.append("]").toString();
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
