"""The configs a broker knows: each key's type, default, checks and whether it is dynamic.

Topic configs name their broker-level synonym (``retention.ms`` <- ``log.retention.ms``),
as in Kafka; `store` resolves the values through it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from ..release_presets import PRESET_CONFIG, preset_ranges

__all__ = [
    "BROKER_CONFIGS",
    "ConfigDef",
    "ConfigError",
    "ConfigSource",
    "ConfigType",
    "ConfigResourceType",
    "TOPIC_CONFIGS",
    "API_VERSION_MAX",
    "parse_version_caps",
]

INT32_MAX = 2**31 - 1
#: The broker config that caps the API versions a broker serves.
API_VERSION_MAX = "kafkagen.api.version.max"
INT64_MAX = 2**63 - 1


class ConfigType(enum.IntEnum):
    """The type code DescribeConfigs v3+ reports."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class ConfigError(ValueError):
    """A config name or value that cannot be used; the text says which and why."""


Validator = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str | None
    doc: str
    #: Topic configs: the broker config that supplies the default (Kafka's synonym).
    broker_synonym: str | None = None
    #: Broker configs that cannot change while the broker runs.
    read_only: bool = False
    sensitive: bool = False
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    #: A further check of the raw value; raises ValueError saying what is wrong.
    validator: Validator | None = None

    def parse(self, value: str | None) -> object:
        """The typed value; raises ConfigError naming the config."""
        if value is None:
            return None
        t = self.type
        try:
            if t is ConfigType.BOOLEAN:
                low = value.strip().lower()
                if low not in ("true", "false"):
                    raise ValueError("expected true or false")
                return low == "true"
            if t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
                n = int(value.strip())
                limit = {ConfigType.INT: INT32_MAX, ConfigType.SHORT: 2**15 - 1}.get(t, INT64_MAX)
                if not -limit - 1 <= n <= limit:
                    raise ValueError(f"out of range for {t.name.lower()}")
                if self.minimum is not None and n < self.minimum:
                    raise ValueError(f"must be at least {self.minimum}")
                return n
            if t is ConfigType.DOUBLE:
                return float(value)
            if self.validator is not None:
                self.validator(value)
            if t is ConfigType.LIST:
                items = [v.strip() for v in value.split(",") if v.strip()]
                for item in items:
                    if self.choices and item not in self.choices:
                        raise ValueError(f"{item!r} is not one of {', '.join(self.choices)}")
                return items
        except ValueError as e:
            raise ConfigError(f"invalid value {value!r} for {self.name}: {e}") from None
        if self.choices and value not in self.choices:
            raise ConfigError(
                f"invalid value {value!r} for {self.name}: expected one of "
                f"{', '.join(self.choices)}"
            )
        return value


def _defs(*defs: ConfigDef) -> dict[str, ConfigDef]:
    return {d.name: d for d in defs}


def parse_version_caps(value: str) -> dict[int, int]:
    """API key -> highest version to serve, from ``kafkagen.api.version.max``.

    Entries are ``Name:version`` (Kafka's API name, any case) or ``key:version``; raises
    ValueError naming the entry that is wrong.
    """
    from kafkagen.generated import APIS

    by_name = {req.removesuffix("Request").lower(): key for key, (_, req, _) in APIS.items()}
    caps: dict[int, int] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        api, sep, version = entry.partition(":")
        api, version = api.strip(), version.strip()
        if not sep or not api or not version:
            raise ValueError(f"entry {entry!r} is not API:version (e.g. OffsetFetch:7)")
        key = int(api) if api.isdigit() else by_name.get(api.lower())
        if key is None or key not in APIS:
            raise ValueError(f"entry {entry!r}: {api!r} is not a known API name or key")
        try:
            top = int(version)
        except ValueError:
            raise ValueError(f"entry {entry!r}: version {version!r} is not a number") from None
        if top < 0:
            raise ValueError(f"entry {entry!r}: version must be 0 or more")
        if key in caps:
            raise ValueError(f"entry {entry!r}: API {api} is capped twice")
        caps[key] = top
    return caps


def _check_log_dirs(value: str) -> None:
    dirs = [d for d in value.split(",") if d.strip()]
    if len(dirs) != 1:
        raise ValueError("give exactly one directory")


def _check_version_caps(value: str) -> None:
    parse_version_caps(value)


def _check_preset(value: str) -> None:
    if value:
        preset_ranges(value)


T = ConfigType

#: Configs a topic may override. The defaults are those of the broker synonym.
TOPIC_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef(
        "cleanup.policy",
        T.LIST,
        "delete",
        "How old segments go: deleted by retention, or compacted by key.",
        "log.cleanup.policy",
        choices=("delete", "compact"),
    ),
    ConfigDef(
        "compression.type",
        T.STRING,
        "producer",
        "The codec the log keeps; 'producer' keeps whatever the producer sent.",
        "compression.type",
        choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    ConfigDef(
        "delete.retention.ms",
        T.LONG,
        "86400000",
        "How long tombstones stay readable on a compacted topic.",
        "log.cleaner.delete.retention.ms",
        minimum=0,
    ),
    ConfigDef(
        "max.message.bytes",
        T.INT,
        "1048588",
        "The largest record batch the topic accepts, in bytes.",
        "message.max.bytes",
        minimum=0,
    ),
    ConfigDef(
        "message.timestamp.type",
        T.STRING,
        "CreateTime",
        "Whose clock stamps records: the producer's (CreateTime) or the broker's at append.",
        "log.message.timestamp.type",
        choices=("CreateTime", "LogAppendTime"),
    ),
    ConfigDef(
        "message.timestamp.before.max.ms",
        T.LONG,
        str(INT64_MAX),
        "How far a CreateTime timestamp may lie before the broker's clock.",
        "log.message.timestamp.before.max.ms",
        minimum=0,
    ),
    ConfigDef(
        "message.timestamp.after.max.ms",
        T.LONG,
        "3600000",
        "How far a CreateTime timestamp may lie after the broker's clock.",
        "log.message.timestamp.after.max.ms",
        minimum=0,
    ),
    ConfigDef(
        "min.insync.replicas",
        T.INT,
        "1",
        "In-sync replicas an acks=all write needs, or it fails with NOT_ENOUGH_REPLICAS.",
        "min.insync.replicas",
        minimum=1,
    ),
    ConfigDef(
        "retention.bytes",
        T.LONG,
        "-1",
        "Size a partition's log may reach before old batches go (-1: no limit).",
        "log.retention.bytes",
    ),
    ConfigDef(
        "retention.ms",
        T.LONG,
        "604800000",
        "Age after which batches go (-1: kept forever).",
        "log.retention.ms",
        minimum=-1,
    ),
    ConfigDef(
        "segment.bytes",
        T.INT,
        "1073741824",
        "Size of one log segment (kept for tools; the in-memory log has no segments).",
        "log.segment.bytes",
        minimum=14,
    ),
    ConfigDef(
        "segment.ms",
        T.LONG,
        "604800000",
        "Time after which a segment is rolled (kept for tools).",
        "log.roll.ms",
        minimum=1,
    ),
    ConfigDef(
        "unclean.leader.election.enable",
        T.BOOLEAN,
        "false",
        "Whether a replica outside the ISR may become leader, losing data.",
        "unclean.leader.election.enable",
    ),
)


#: Listeners, TLS, SASL, authorisation and connection limits (see `listeners`, `sasl`,
#: `authorizer`). All read-only: they take effect when the brokers start.
SECURITY_CONFIGS = (
    ConfigDef(
        "listeners",
        T.LIST,
        "",
        "NAME://host:port,... of each listener; broker i listens on each port + i. Empty: "
        "one PLAINTEXT listener on the cluster's port.",
        read_only=True,
    ),
    ConfigDef(
        "listener.security.protocol.map",
        T.LIST,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "Listener name to security protocol.",
        read_only=True,
    ),
    ConfigDef(
        "sasl.enabled.mechanisms",
        T.LIST,
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "SASL mechanisms SASL listeners accept (GSSAPI is not offered).",
        read_only=True,
    ),
    ConfigDef("ssl.keystore.type", T.STRING, "PEM", "Only PEM is read.", read_only=True),
    ConfigDef(
        "ssl.keystore.location",
        T.STRING,
        None,
        "PEM file with the broker's certificate chain and private key.",
        read_only=True,
    ),
    ConfigDef(
        "ssl.key.password",
        T.PASSWORD,
        None,
        "Password of an encrypted private key.",
        read_only=True,
        sensitive=True,
    ),
    ConfigDef("ssl.truststore.type", T.STRING, "PEM", "Only PEM is read.", read_only=True),
    ConfigDef(
        "ssl.truststore.location",
        T.STRING,
        None,
        "PEM file of the CA certificates client certificates are checked against.",
        read_only=True,
    ),
    ConfigDef(
        "ssl.client.auth",
        T.STRING,
        "none",
        "Client certificates on SSL listeners: none, requested or required.",
        read_only=True,
        choices=("none", "requested", "required"),
    ),
    ConfigDef(
        "authorizer.class.name",
        T.STRING,
        "",
        "Any non-empty value enforces the ACLs with StandardAuthorizer semantics.",
        read_only=True,
    ),
    ConfigDef(
        "super.users",
        T.STRING,
        "",
        "Principals allowed everything, separated by semicolons (User:alice;User:bob).",
        read_only=True,
    ),
    ConfigDef(
        "allow.everyone.if.no.acl.found",
        T.BOOLEAN,
        "false",
        "Allow a request on a resource no ACL applies to.",
        read_only=True,
    ),
    ConfigDef(
        "max.connections.per.ip",
        T.INT,
        str(INT32_MAX),
        "Open connections one client address may hold; further ones are closed at once.",
        read_only=True,
        minimum=0,
    ),
    ConfigDef(
        "queued.max.request.bytes",
        T.LONG,
        "-1",
        "Bytes of requests being read, across a broker's connections, before it stops "
        "reading them (-1: no bound).",
        read_only=True,
    ),
    ConfigDef(
        "connections.max.idle.ms",
        T.LONG,
        "600000",
        "A connection with no request for this long is closed.",
        read_only=True,
        minimum=1,
    ),
)


#: Broker configs. Those that are not topic synonyms are read-only unless marked otherwise.
BROKER_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("broker.id", T.INT, "0", "This broker's id.", read_only=True),
    ConfigDef("node.id", T.INT, "0", "This node's id (same as broker.id).", read_only=True),
    ConfigDef(
        "num.partitions",
        T.INT,
        "1",
        "Partitions of a topic created without a count.",
        minimum=1,
    ),
    ConfigDef(
        "default.replication.factor",
        T.INT,
        "1",
        "Replicas of a topic created without a replication factor.",
        minimum=1,
    ),
    ConfigDef(
        "auto.create.topics.enable",
        T.BOOLEAN,
        "false",
        "Create unknown topics named in Metadata requests that allow it. Off by default here.",
    ),
    ConfigDef("delete.topic.enable", T.BOOLEAN, "true", "Whether topics may be deleted."),
    ConfigDef(
        "socket.request.max.bytes",
        T.INT,
        "104857600",
        "Largest request frame accepted; a larger size prefix closes the connection.",
        read_only=True,
        minimum=1,
    ),
    ConfigDef(
        "max.connections",
        T.INT,
        "1000",
        "Open connections a listener accepts; further ones are closed at once.",
        minimum=1,
    ),
    ConfigDef(
        "queued.max.requests",
        T.INT,
        "500",
        "Requests a connection may have in flight before the broker stops reading it.",
        minimum=1,
    ),
    ConfigDef(
        "unstable.api.versions.enable",
        T.BOOLEAN,
        "false",
        "Also advertise API versions that are still unstable.",
        read_only=True,
    ),
    ConfigDef(
        "offsets.topic.num.partitions",
        T.INT,
        "50",
        "Partitions of __consumer_offsets.",
        read_only=True,
        minimum=1,
    ),
    ConfigDef(
        "offsets.topic.replication.factor",
        T.SHORT,
        "3",
        "Replicas of __consumer_offsets (capped at the number of brokers here).",
        read_only=True,
        minimum=1,
    ),
    ConfigDef(
        "offsets.commit.timeout.ms",
        T.INT,
        "5000",
        "How long an offset commit waits for the offsets topic's replicas.",
        minimum=1,
    ),
    ConfigDef(
        "offsets.retention.minutes",
        T.INT,
        "10080",
        "How long committed offsets of an empty group are kept.",
        minimum=1,
    ),
    ConfigDef(
        "group.initial.rebalance.delay.ms",
        T.INT,
        "3000",
        "How long the first rebalance of an empty group waits for more members.",
        minimum=0,
    ),
    ConfigDef(
        "group.min.session.timeout.ms",
        T.INT,
        "6000",
        "Smallest session timeout a group member may ask for.",
        minimum=0,
    ),
    ConfigDef(
        "group.max.session.timeout.ms",
        T.INT,
        "1800000",
        "Largest session timeout a group member may ask for.",
        minimum=0,
    ),
    ConfigDef(
        "group.max.size",
        T.INT,
        str(INT32_MAX),
        "Members a classic group may hold.",
        minimum=1,
    ),
    ConfigDef(
        "replica.lag.time.max.ms",
        T.LONG,
        "30000",
        "How long a follower may lag before it leaves the ISR.",
        minimum=0,
    ),
    ConfigDef(
        "producer.id.expiration.ms",
        T.INT,
        "86400000",
        "How long an idle producer's state is kept.",
        minimum=1,
    ),
    ConfigDef(
        "log.dirs",
        T.STRING,
        None,
        "Directory that keeps logs, offsets and cluster metadata across restarts "
        "(unset: everything stays in memory).",
        read_only=True,
        validator=_check_log_dirs,
    ),
    ConfigDef(
        "log.retention.check.interval.ms",
        T.LONG,
        "300000",
        "How often logs are trimmed by retention.ms and retention.bytes.",
        minimum=1,
    ),
    ConfigDef(
        "transaction.state.log.num.partitions",
        T.INT,
        "50",
        "Partitions of __transaction_state.",
        read_only=True,
        minimum=1,
    ),
    ConfigDef(
        "transaction.state.log.replication.factor",
        T.SHORT,
        "3",
        "Replicas of __transaction_state (capped at the number of brokers here).",
        read_only=True,
        minimum=1,
    ),
    ConfigDef(
        "transaction.max.timeout.ms",
        T.INT,
        "900000",
        "Largest transaction timeout a producer may ask for.",
        minimum=1,
    ),
    ConfigDef(
        "transactional.id.expiration.ms",
        T.INT,
        "604800000",
        "How long an idle transactional id is kept.",
        minimum=1,
    ),
    ConfigDef(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        T.INT,
        "3600000",
        "How often transactional ids idle past transactional.id.expiration.ms are removed.",
        minimum=1,
    ),
    ConfigDef(
        "add.partitions.to.txn.retry.backoff.ms",
        T.INT,
        "20",
        "Pause before a transactions v2 Produce asks a busy transaction coordinator again.",
        read_only=True,
        minimum=1,
    ),
    ConfigDef(
        "add.partitions.to.txn.retry.backoff.max.ms",
        T.INT,
        "100",
        "How long a transactions v2 Produce keeps asking a busy transaction coordinator.",
        read_only=True,
        minimum=0,
    ),
    ConfigDef(
        "max.request.pagination.size.limit",
        T.INT,
        "2000",
        "Upper bound of ResponsePaginationLimit for paginated admin responses.",
        minimum=1,
    ),
    ConfigDef(
        "max.request.partition.size.limit",
        T.INT,
        None,
        "Upper bound of DescribeTopicPartitions' ResponsePartitionLimit "
        "(unset: max.request.pagination.size.limit).",
        minimum=1,
    ),
    ConfigDef(
        "group.coordinator.rebalance.protocols",
        T.LIST,
        "classic,consumer",
        "Group protocols the coordinator serves.",
        choices=("classic", "consumer"),
    ),
    ConfigDef(
        "group.consumer.session.timeout.ms",
        T.INT,
        "45000",
        "How long a member of a consumer-protocol group lives without a heartbeat.",
        minimum=1,
    ),
    ConfigDef(
        "group.consumer.heartbeat.interval.ms",
        T.INT,
        "5000",
        "How often members of a consumer-protocol group are told to heartbeat.",
        minimum=1,
    ),
    ConfigDef(
        "group.consumer.max.size",
        T.INT,
        str(INT32_MAX),
        "Members a consumer-protocol group may hold.",
        minimum=1,
    ),
    ConfigDef(
        "group.consumer.assignors",
        T.LIST,
        "uniform,range",
        "Server-side assignors of consumer-protocol groups; the first is the default.",
        choices=("uniform", "range"),
    ),
    ConfigDef(
        API_VERSION_MAX,
        T.LIST,
        "",
        "Highest version served per API, as Name:version or key:version pairs "
        "(FindCoordinator:3,OffsetFetch:7), to play an older broker. A capped version is "
        "neither advertised nor accepted; a cap below the lowest version hides the API.",
        read_only=True,
        validator=_check_version_caps,
    ),
    ConfigDef(
        PRESET_CONFIG,
        T.STRING,
        "",
        "Play the broker of a Kafka release (any minor release, 2.4 to 4.4): advertise and "
        "accept at most its versions of each API, and none of an API it did not have. "
        "kafkagen.api.version.max caps further.",
        read_only=True,
        validator=_check_preset,
    ),
    *SECURITY_CONFIGS,
)

# Broker-level names of the topic configs (their synonyms), with the topic default.
for _d in TOPIC_CONFIGS.values():
    assert _d.broker_synonym is not None
    if _d.broker_synonym not in BROKER_CONFIGS:
        BROKER_CONFIGS[_d.broker_synonym] = ConfigDef(
            _d.broker_synonym,
            _d.type,
            _d.default,
            _d.doc,
            choices=_d.choices,
            minimum=_d.minimum,
        )
del _d
