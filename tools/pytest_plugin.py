"""The pytest plugin (entry point ``pytest11``): in-process Kafka brokers for tests.

Fixtures:

- ``kafka_cluster`` (session): brokers on free ports of 127.0.0.1, in this process, on an
  event loop in a thread of their own. ``kafka_cluster.bootstrap_servers`` is the
  ``host:port,...`` text clients take. Broker count and configs come from the ini options
  ``kafka_brokers`` and ``kafka_broker_config`` (``key=value`` lines), or, for the tests
  that carry it, from ``@pytest.mark.kafka_cluster(brokers=3, configs={...})``: each
  distinct setting is its own session cluster, started once. ``kafka_package`` and
  ``kafka_handlers`` (or ``package=``, ``handlers=[...]`` in the marker) serve with a
  package ``kafkagen generate`` wrote and handler modules, as ``kafkagen serve --package
  --handlers`` does; ``kafka_cluster.package`` is that package's module, for
  ``connect(..., package=)``. Under pytest-xdist every
  worker process has its own.
- ``kafka_topic``: a fresh topic for one test, its name as a string (partitions from
  ``@pytest.mark.kafka_topic(partitions=3)``, else the cluster's ``num.partitions``); it
  is deleted after the test.
- ``kafka_control``: the cluster's control API (`SyncControl`) for one test; its rules,
  held requests, records, stopped brokers and version caps are undone after the test.
- ``confluent_kafka_config``, ``kafka_python_config``, ``aiokafka_config``: dicts to pass
  to those clients' constructors (``Producer(conf)``, ``KafkaProducer(**conf)``).

The cluster is built only when a test asks for it: a run that uses none starts nothing.
"""

from __future__ import annotations

import inspect
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafkagen.runtime.broker.cluster import BackgroundCluster
    from kafkagen.runtime.broker.control.http_api import ControlServer
    from kafkagen.runtime.broker.control.interceptor import Control

__all__ = ["ClusterSettings", "KafkaCluster", "SyncControl"]


@dataclass(frozen=True)
class ClusterSettings:
    """How many brokers and which broker configs; equal settings share one cluster."""

    brokers: int = 1
    configs: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    #: A generated package (import name or folder; empty: the built-in) and handler modules.
    package: str = ""
    handlers: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        brokers: int = 1,
        configs: Mapping[str, Any] | None = None,
        package: str = "",
        handlers: Sequence[str] = (),
    ) -> ClusterSettings:
        if not isinstance(brokers, int) or brokers < 1:
            raise pytest.UsageError(
                f"kafka_cluster: brokers must be a positive int, not {brokers!r}"
            )
        conf = tuple(sorted((k, str(v)) for k, v in (configs or {}).items()))
        return cls(brokers, conf, str(package), tuple(map(str, handlers)))

    def __str__(self) -> str:
        conf = ",".join(f"{k}={v}" for k, v in self.configs)
        served = [f"package={self.package}"] if self.package else []
        served += [f"handlers={h}" for h in self.handlers]
        return ",".join([f"brokers={self.brokers}", *([conf] if conf else []), *served])


class SyncControl:
    """`kafkagen.runtime.broker.control.interceptor.Control` for code outside the brokers'
    loop: every method runs on that loop (coroutines are awaited there) and its result comes
    back."""

    def __init__(self, background: BackgroundCluster, control: Control) -> None:
        self._bg = background
        self._control = control

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._control, name)
        if name == "faults":  # `Faults`: its methods run on the brokers' loop too
            return SyncControl(self._bg, attr)
        if not callable(attr):
            return self._bg.call(lambda: getattr(self._control, name))

        def call(*args: Any, **kwargs: Any) -> Any:
            if inspect.iscoroutinefunction(attr):
                return self._bg.run(attr(*args, **kwargs))
            return self._bg.call(lambda: attr(*args, **kwargs))

        return call

    def record(self, on: bool = True) -> None:
        """Start (or stop) recording requests and their answers."""

        def set_recording() -> None:
            self._control.recording = on

        self._bg.call(set_recording)


class KafkaCluster:
    """A running in-process cluster, as the fixtures hand it out."""

    def __init__(self, settings: ClusterSettings) -> None:
        from kafkagen.generator.packages import PackageError, load
        from kafkagen.runtime.broker.api import Registry, RegistryError
        from kafkagen.runtime.broker.cluster import BackgroundCluster
        from kafkagen.runtime.handlers import declare_handlers

        self.settings = settings
        started = time.perf_counter()
        try:
            #: The module of the package served (None: the built-in).
            self.package = load(settings.package).module if settings.package else None
            registry = Registry(declare_handlers(), self.package)
            for module in settings.handlers:
                registry.register_module(module)
        except (PackageError, RegistryError) as e:
            raise pytest.UsageError(f"kafka_cluster: {e}") from None
        self._bg = BackgroundCluster(
            settings.brokers, configs=dict(settings.configs), registry=registry
        ).start()
        #: Seconds from asking for the cluster to every broker listening.
        self.start_seconds = time.perf_counter() - started
        assert self._bg.cluster is not None
        self.cluster = self._bg.cluster
        self.control = SyncControl(self._bg, self.cluster.control)
        self._control_server: ControlServer | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self._bg.bootstrap

    @property
    def ports(self) -> list[int]:
        return [int(a.rsplit(":", 1)[1]) for a in self.bootstrap_servers.split(",")]

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> str:
        """Create a topic (on the brokers' loop) and return its name."""
        self._bg.call(
            lambda: self.cluster.metadata.create_topic(name, partitions, replication_factor)
        )
        return name

    def delete_topic(self, name: str) -> None:
        self._bg.call(lambda: self.cluster.metadata.delete_topic(name))

    def run(self, coro: Any, timeout: float = 10.0) -> Any:
        """Run a coroutine on the brokers' loop, e.g. ``run(cluster.cluster.pause_broker(1))``."""
        return self._bg.run(coro, timeout)

    def call(self, fn: Any, timeout: float = 10.0) -> Any:
        return self._bg.call(fn, timeout)

    def confluent_config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers, **extra}

    def kafka_python_config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers.split(","), **extra}

    def aiokafka_config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers, **extra}

    def serve_control(self, port: int = 0) -> str:
        """Serve the control API over HTTP (docs/control.md) on 127.0.0.1 until the cluster
        stops, for a test that drives a client in another process or language; its URL."""
        if self._control_server is None:
            from kafkagen.runtime.broker.control.http_api import ControlServer

            server = ControlServer(self.cluster.control, self.cluster.describe_brokers)
            self._bg.run(server.start(port))
            self._control_server = server
        return f"http://127.0.0.1:{self._control_server.port}"

    @property
    def alive(self) -> bool:
        """True until `stop` has ended the brokers' thread."""
        return self._bg.alive

    def stop(self) -> None:
        if self._control_server is not None:
            self._bg.run(self._control_server.stop())
            self._control_server = None
        self._bg.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("kafka_brokers", "brokers in the kafka_cluster fixture (default 1)", default="1")
    parser.addini(
        "kafka_broker_config",
        "broker configs of the kafka_cluster fixture, one key=value a line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "kafka_package",
        "a package kafkagen generate wrote (import name or folder) the kafka_cluster "
        "fixture serves with (default: the built-in)",
        default="",
    )
    parser.addini(
        "kafka_handlers",
        "handler modules (dotted names or .py files) of the kafka_cluster fixture, one a line",
        type="linelist",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kafka_cluster(brokers=1, configs={}, package='', handlers=[]): the kafka_cluster "
        "this test uses "
        "(one session cluster per distinct setting)",
    )
    config.addinivalue_line(
        "markers", "kafka_topic(partitions=N): the partition count of this test's kafka_topic"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The broker's modules (about 0.3 s of CPU, once per process) load with collection when
    # some test will use a cluster, so that starting one costs only the start. The request
    # handlers and their codecs are not loaded here: each loads on the first request of its
    # API (a few ms), so a suite pays only for the APIs its clients use.
    if any("kafka_cluster" in getattr(item, "fixturenames", ()) for item in items):
        import kafkagen.runtime.broker.cluster  # noqa: F401


def _ini_settings(config: pytest.Config) -> ClusterSettings:
    raw = str(config.getini("kafka_brokers")).strip() or "1"
    if not raw.isdigit():
        raise pytest.UsageError(f"ini option kafka_brokers: {raw!r} is not a number")
    configs = {}
    for line in config.getini("kafka_broker_config"):
        key, sep, value = str(line).partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"ini option kafka_broker_config: {line!r} is not key=value")
        configs[key.strip()] = value.strip()
    package = str(config.getini("kafka_package")).strip()
    return ClusterSettings.of(int(raw), configs, package, config.getini("kafka_handlers"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A marked test gets the cluster of its settings, as a session-scoped parameter: pytest
    # starts each distinct one once and groups the tests that share it.
    marker = metafunc.definition.get_closest_marker("kafka_cluster")
    if marker is None or "kafka_cluster" not in metafunc.fixturenames:
        return
    settings = ClusterSettings.of(*marker.args, **marker.kwargs)
    metafunc.parametrize(
        "kafka_cluster", [settings], indirect=True, scope="session", ids=[str(settings)]
    )


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    settings = getattr(request, "param", None) or _ini_settings(request.config)
    cluster = KafkaCluster(settings)
    try:
        yield cluster
    finally:
        cluster.stop()


_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


@pytest.fixture
def kafka_topic(kafka_cluster: KafkaCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    marker = request.node.get_closest_marker("kafka_topic")
    cfg = kafka_cluster.cluster.configs
    partitions = (
        int(marker.kwargs.get("partitions", 1)) if marker else cfg.broker_int("num.partitions")
    )
    base = _UNSAFE.sub("-", request.node.name)[:180]
    name = f"{base}-{uuid.uuid4().hex[:8]}"
    rf = min(kafka_cluster.settings.brokers, 3)
    kafka_cluster.create_topic(name, partitions, rf)
    yield name
    try:
        kafka_cluster.delete_topic(name)
    except Exception:  # the test deleted it itself
        pass


@pytest.fixture
def kafka_control(kafka_cluster: KafkaCluster) -> Iterator[SyncControl]:
    control = kafka_cluster.control
    control.record(True)
    yield control
    control.reset()


@pytest.fixture
def confluent_kafka_config(kafka_cluster: KafkaCluster) -> dict[str, Any]:
    return kafka_cluster.confluent_config()


@pytest.fixture
def kafka_python_config(kafka_cluster: KafkaCluster) -> dict[str, Any]:
    return kafka_cluster.kafka_python_config()


@pytest.fixture
def aiokafka_config(kafka_cluster: KafkaCluster) -> dict[str, Any]:
    return kafka_cluster.aiokafka_config()
