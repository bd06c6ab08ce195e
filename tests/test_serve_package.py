"""Serving a user's generated package and handler modules (``kafkagen serve --package
--specs --handlers``), and the async client sending with the same package.

The package is made from a few spec files of message_specs/: DescribeCluster gains v3 and
a ClusterName field in its response (the worked change of docs/serve-your-change.md), and
ApiVersions, Metadata and the headers come along unchanged, so those are served through
the package's classes by the built-in handlers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from broker_helpers import BrokerProcess
from kafkagen.generated.describe_cluster import DescribeClusterRequest
from kafkagen.generated.metadata import MetadataRequest
from kafkagen.generator.packages import GeneratedPackage, from_specs
from kafkagen.runtime.broker.api import Registry, RegistryError
from kafkagen.runtime.broker.cluster import BackgroundCluster
from kafkagen.runtime.client import KafkaClient, connect
from kafkagen.runtime.handlers import declare_handlers

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "message_specs"
KIP_FILES = ["DescribeClusterRequest.json", "DescribeClusterResponse.json"]
ALONG = ["ApiVersionsRequest.json", "ApiVersionsResponse.json", "MetadataRequest.json"]
ALONG += ["MetadataResponse.json", "RequestHeader.json", "ResponseHeader.json"]
NAME = "kip-demo"

HANDLERS = f"""
NAME = "{NAME}"


def register(registry):
    @registry.handler(60, versions=3)
    def describe_cluster_v3(ctx, request):
        def add_name(response):
            response.cluster_name = NAME
            ctx.respond(response)

        registry.call_builtin(ctx, request, add_name)
"""


def write_kip_specs(folder: Path, *, along: bool = True) -> Path:
    """message_specs' DescribeCluster with v3 and ClusterName (plus the ones along)."""
    folder.mkdir(parents=True)
    for name in KIP_FILES + (ALONG if along else []):
        shutil.copy(SPECS / name, folder / name)
    for name in KIP_FILES:
        spec = json.loads((folder / name).read_text())
        spec["validVersions"] = "0-3"
        if spec["type"] == "response":
            field = {"name": "ClusterName", "type": "string", "versions": "3+"}
            field.update({"nullableVersions": "3+", "default": "null"})
            spec["fields"].insert(-1, field)
        (folder / name).write_text(json.dumps(spec, indent=2))
    return folder


@pytest.fixture(scope="module")
def kip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GeneratedPackage]:
    package = from_specs([write_kip_specs(tmp_path_factory.mktemp("kip") / "specs")])
    yield package
    package.close()


@pytest.fixture(scope="module")
def handlers_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("handlers") / "cluster_name.py"
    path.write_text(HANDLERS)
    return path


def registry(package: ModuleType | None, *handler_files: Path) -> Registry:
    reg = Registry(declare_handlers(), package)
    for path in handler_files:
        reg.register_module(str(path))
    return reg


def run_client(bootstrap: str, package: ModuleType | None, body: Any, timeout: float = 20.0) -> Any:
    async def go() -> Any:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        client = await connect(host, int(port), package=package, request_timeout=10)
        try:
            return await body(client)
        finally:
            await client.close()

    return asyncio.run(asyncio.wait_for(go(), timeout))


def describe_cluster(bootstrap: str, package: ModuleType | None, version: int | None = None) -> Any:
    """A DescribeCluster response, the request sent with ``package``."""

    async def body(client: KafkaClient) -> Any:
        return await client.request(DescribeClusterRequest(), version)

    return run_client(bootstrap, package, body)


def test_the_new_version_is_advertised_and_its_field_answered(
    kip: GeneratedPackage, handlers_file: Path
) -> None:
    with BackgroundCluster(registry=registry(kip.module, handlers_file)) as c:

        async def body(client: KafkaClient) -> Any:
            new = await client.request(DescribeClusterRequest())
            old = await client.request(DescribeClusterRequest(), 2)
            return client.versions.get(60), new, old

        served, new, old = run_client(c.bootstrap, kip.module, body)
    assert (served.min, served.max) == (0, 3)
    assert type(new).__module__ == f"{kip.name}.describe_cluster"
    assert new.cluster_name == NAME
    assert new.error_code == 0 and [b.broker_id for b in new.brokers] == [0]
    # v2 has no ClusterName: the user handler claims only v3, the built-in one answers v2.
    assert old.cluster_name is None and old.cluster_id == new.cluster_id


def test_builtin_apis_are_served_unchanged_through_the_package(kip: GeneratedPackage) -> None:
    with BackgroundCluster(registry=registry(kip.module)) as c:

        async def body(client: KafkaClient) -> Any:
            return await client.request(MetadataRequest(topics=None))

        metadata = run_client(c.bootstrap, kip.module, body)
        builtin = run_client(c.bootstrap, None, body)
        assert c.cluster is not None
        versions = c.cluster.served_apis(0).served_versions()
    assert type(metadata).__module__ == f"{kip.name}.metadata"
    assert type(builtin).__module__ == "kafkagen.generated.metadata"
    assert metadata.to_json(12) == builtin.to_json(12)
    assert [b.port for b in metadata.brokers] == [int(c.bootstrap.rsplit(":", 1)[1])]
    # No handler claims DescribeCluster v3: the package has it, but it is not advertised.
    assert versions[60] == (0, 2) and versions[3] == (0, 13)


def test_the_builtin_handler_may_serve_a_compatible_new_version(kip: GeneratedPackage) -> None:
    reg = registry(kip.module)
    reg.serve_builtin(60, through=3)
    with BackgroundCluster(registry=reg) as c:
        response = describe_cluster(c.bootstrap, kip.module, 3)
    assert response.error_code == 0 and response.cluster_name is None
    assert [b.broker_id for b in response.brokers] == [0]


def test_a_raising_handler_answers_unknown_server_error_and_the_next_request_is_served(
    kip: GeneratedPackage, caplog: pytest.LogCaptureFixture
) -> None:
    reg = registry(kip.module)
    calls = []

    @reg.handler(60, versions=3)
    def fails(ctx: Any, request: Any) -> None:
        calls.append(ctx.api_version)
        raise RuntimeError("the KIP handler has a bug")

    with BackgroundCluster(registry=reg) as c:

        async def body(client: KafkaClient) -> Any:
            failed = await client.request(DescribeClusterRequest(), 3)
            served = await client.request(DescribeClusterRequest(), 2)
            return failed, served

        with caplog.at_level(logging.ERROR, logger="kafkagen.broker.server"):
            failed, served = run_client(c.bootstrap, kip.module, body)
    assert calls == [3]
    assert failed.error_code == -1 and failed.cluster_id == ""
    assert served.error_code == 0 and served.cluster_id
    logged = [r for r in caplog.records if r.exc_info is not None]
    assert len(logged) == 1 and "the KIP handler has a bug" in str(logged[0].exc_info[1])


def test_two_clusters_in_one_process_serve_their_own_packages(
    kip: GeneratedPackage, handlers_file: Path
) -> None:
    with (
        BackgroundCluster(registry=registry(kip.module, handlers_file)) as mine,
        BackgroundCluster() as builtin,
    ):

        async def body(client: KafkaClient) -> Any:
            return client.versions.get(60), await client.request(DescribeClusterRequest())

        mine_served, mine_answer = run_client(mine.bootstrap, kip.module, body)
        builtin_served, builtin_answer = run_client(builtin.bootstrap, kip.module, body)
    assert (mine_served.max, builtin_served.max) == (3, 2)
    assert mine_answer.cluster_name == NAME
    # The kip client speaks v2 to the built-in broker: no ClusterName at that version.
    assert builtin_answer.cluster_name is None and builtin_answer.error_code == 0


def test_registrations_that_cannot_be_served_are_refused(kip: GeneratedPackage) -> None:
    reg = registry(kip.module)
    reg.handler(60, versions=4)(lambda ctx, request: None)
    with pytest.raises(RegistryError, match="API 60: the package has no v4"):
        reg.compose()
    reg = registry(kip.module)
    reg.handler(60, versions=5)(lambda ctx, request: None)
    with pytest.raises(RegistryError, match="the package has no v5"):
        reg.compose()
    with pytest.raises(RegistryError, match="API 9999 has no built-in handler"):
        registry(kip.module).serve_builtin(9999, 1)


def serve(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``kafkagen serve`` that must fail at start (bounded wait)."""
    command = [sys.executable, "-m", "kafkagen.cli.serve", "--port", "0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_bad_package_is_one_line_and_exit_2(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "__init__.py").write_text("")
    line = one_line(serve("--package", str(plain)))
    assert line == f"kafkagen serve: {plain}: not a kafkagen-generated package " + (
        "(no GENERATED_BY_KAFKAGEN file)"
    )
    line = one_line(serve("--package", "no_such_package_here"))
    assert "no_such_package_here: no such package" in line
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "GENERATED_BY_KAFKAGEN").write_text("")
    (broken / "__init__.py").write_text("raise ImportError('half written')\n")
    line = one_line(serve("--package", str(broken)))
    assert "fails to import: ImportError: half written" in line and str(broken) in line


def test_a_bad_handler_module_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "broken_handlers.py").write_text("import no_such_module_at_all\n")
    line = one_line(serve("--handlers", "broken_handlers", cwd=tmp_path))
    assert line == (
        "kafkagen serve: broken_handlers: cannot be imported: ModuleNotFoundError: "
        "No module named 'no_such_module_at_all'"
    )
    (tmp_path / "no_register.py").write_text("X = 1\n")
    line = one_line(serve("--handlers", str(tmp_path / "no_register.py")))
    assert line.endswith("no_register.py: has no register(registry) function")
    claims = tmp_path / "claims.py"
    claims.write_text(textwrap.dedent("""
            def register(registry):
                registry.handler(60, versions=3)(lambda ctx, request: None)
            """))
    # The built-in package has no DescribeCluster v3.
    line = one_line(serve("--handlers", str(claims)))
    assert line == f"kafkagen serve: {claims}: API 60: the package has no v3"


def test_specs_are_generated_to_a_temporary_package_removed_at_exit(
    tmp_path: Path, handlers_file: Path
) -> None:
    specs = write_kip_specs(tmp_path / "specs", along=False)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    options = ["--specs", str(specs), "--handlers", str(handlers_file)]
    with BrokerProcess(options=options, env={"TMPDIR": str(scratch)}, startup=60) as broker:
        made = list(scratch.glob("kafkagen-pkg-*"))
        assert len(made) == 1 and (made[0] / "package" / "GENERATED_BY_KAFKAGEN").is_file()
        package = from_specs([specs])
        try:

            answer = describe_cluster(broker.bootstrap, package.module)
        finally:
            package.close()
        assert broker.stop() == 0, broker.stderr_text()
    assert answer.cluster_name == NAME
    assert list(scratch.iterdir()) == []


def test_the_pytest_plugin_serves_a_package_with_handlers(
    kip: GeneratedPackage, handlers_file: Path
) -> None:
    from kafkagen.pytest_plugin import ClusterSettings, KafkaCluster

    settings = ClusterSettings.of(package=str(kip.folder), handlers=[str(handlers_file)])
    assert str(settings) == f"brokers=1,package={kip.folder},handlers={handlers_file}"
    cluster = KafkaCluster(settings)
    try:
        answer = describe_cluster(cluster.bootstrap_servers, cluster.package)
    finally:
        cluster.stop()
    assert answer.cluster_name == NAME
    with pytest.raises(pytest.UsageError, match="not a kafkagen-generated package"):
        KafkaCluster(ClusterSettings.of(package=str(handlers_file.parent)))


def test_the_admin_helpers_and_builders_send_with_the_package(kip: GeneratedPackage) -> None:
    from kafkagen.runtime.client.admin import list_topics_all

    with BackgroundCluster(registry=registry(kip.module)) as c:
        assert c.cluster is not None
        c.run(_create_topic(c, "kip-topic"))
        seen: list[tuple[str, int]] = []

        async def body(client: KafkaClient) -> Any:
            client.on_request = lambda request, v: seen.append((type(request).__module__, v))
            topics = await list_topics_all(client)
            coordinators = await client.find_coordinators(["some-group"])
            return topics, coordinators

        topics, coordinators = run_client(c.bootstrap, kip.module, body)
    assert [t.name for t in topics.topics] == ["kip-topic"]
    # Metadata went out as the package's class; FindCoordinator, which it lacks, built-in.
    assert (f"{kip.name}.metadata", 13) in seen
    assert any(m == "kafkagen.generated.find_coordinator" for m, _ in seen)
    assert list(coordinators.values())[0].node_id == 0


async def _create_topic(c: BackgroundCluster, name: str) -> None:
    assert c.cluster is not None
    c.cluster.metadata.create_topic(name, 1, 1)


# --------------------------------------------------------------------------- the worked change

PAGE = REPO / "docs" / "serve-your-change.md"
FILE_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def page_files() -> dict[str, str]:
    """The files docs/serve-your-change.md shows, by name."""
    return dict(FILE_BLOCK.findall(PAGE.read_text(encoding="utf-8")))


def page_command(start: str) -> list[str]:
    """The page's command line that starts with ``start``."""
    lines = [ln for ln in PAGE.read_text(encoding="utf-8").splitlines() if ln.startswith(start)]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def test_the_page_shows_message_specs_with_only_the_change(tmp_path: Path) -> None:
    files = page_files()
    assert sorted(files) == sorted(
        ["kip_specs/" + n for n in KIP_FILES]
        + ["cluster_name.py", "read_cluster_name.py", "old_client.py"]
    )
    expected = write_kip_specs(tmp_path / "specs", along=False)
    for name in KIP_FILES:
        shown = json.loads(files[f"kip_specs/{name}"])
        assert shown == json.loads((expected / name).read_text()), name


@pytest.mark.slow
def test_the_worked_change_end_to_end(tmp_path: Path) -> None:
    for name, text in page_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    bin_dir = Path(sys.executable).parent
    generate = page_command("kafkagen generate")
    subprocess.run(
        [str(bin_dir / generate[0]), *generate[1:]], cwd=tmp_path, check=True, timeout=120
    )
    serve_line = page_command("kafkagen serve")
    at = serve_line.index("--port")
    options = serve_line[2:at] + serve_line[at + 2 :]
    with BrokerProcess(options=options, cwd=tmp_path) as broker:
        env = {**os.environ, "KAFKA_BOOTSTRAP": broker.bootstrap}
        outputs = {}
        for script in ("read_cluster_name.py", "old_client.py"):
            result = subprocess.run(
                [sys.executable, script],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=90,
            )
            assert result.returncode == 0, result.stderr + broker.stderr_text()
            outputs[script] = result.stdout.strip()
        assert broker.alive(), broker.stderr_text()
    text = PAGE.read_text(encoding="utf-8")
    for output in outputs.values():
        assert f"prints `{output}`" in text, output
    assert outputs["read_cluster_name.py"] == "DescribeCluster v0-3 cluster name: kip-demo"
    assert outputs["old_client.py"] == "10 records read: record 0 ... record 9"
