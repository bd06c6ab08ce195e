"""``kafkagen serve``: run a cluster of brokers on 127.0.0.1 until interrupted.

Broker ``i`` listens on ``--port + i`` (``--port 0``: any free ports). The bootstrap
address is printed on one line as soon as every broker listens, so scripts can read it.
Brokers keep everything in memory unless ``--log-dir`` names a directory that keeps logs,
committed offsets, transactions and cluster metadata across restarts.

``--package`` (or ``--specs``) serves with a user's generated package and ``--handlers``
adds handlers of a user's module over the built-in ones (docs/serve-your-change.md).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkagen.runtime.broker.config.definitions import ConfigError
from kafkagen.runtime.broker.config.store import parse_assignments

if TYPE_CHECKING:
    from kafkagen.generator.packages import GeneratedPackage
    from kafkagen.runtime.broker.api import Registry

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--brokers", type=int, default=1, metavar="N", help="brokers in the cluster (default 1)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        metavar="P",
        help="port of broker 0; broker i uses P+i (default 9092; 0 picks free ports)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config, e.g. num.partitions=3 (repeatable)",
    )
    parser.add_argument(
        "--log-dir",
        metavar="DIR",
        help="keep logs, offsets, transactions and topics in DIR across restarts "
        "(same as --config log.dirs=DIR; default: memory only)",
    )
    parser.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME:PASSWORD",
        help="a SASL user: PLAIN password and SCRAM credentials for every enabled SCRAM "
        "mechanism (repeatable)",
    )
    parser.add_argument(
        "--control-port",
        type=int,
        metavar="P",
        help="serve the control API (fault injection, broker controls; JSON over HTTP, "
        "docs/control.md) on 127.0.0.1:P (0 picks a free port; default: off)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--package",
        metavar="NAME_OR_DIR",
        help="decode requests and encode responses with this package kafkagen generate "
        "wrote (an importable name or its folder; default: the built-in)",
    )
    source.add_argument(
        "--specs",
        action="append",
        metavar="DIR",
        help="as --package, with the package generated from these spec folders into a "
        "temporary folder removed at exit (repeatable)",
    )
    parser.add_argument(
        "--handlers",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module (dotted name, or a .py file) whose register(registry) adds or "
        "overrides request handlers (repeatable)",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="broker log level (default warning)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        configs = parse_assignments(args.config)
    except ConfigError as e:
        print(f"kafkagen serve: {e}", file=sys.stderr)
        return 2
    log_dir = getattr(args, "log_dir", None)
    if log_dir is not None:
        if not log_dir:
            print("kafkagen serve: --log-dir needs a directory", file=sys.stderr)
            return 2
        if configs.get("log.dirs", log_dir) != log_dir:
            print(
                f"kafkagen serve: --log-dir {log_dir} and --config log.dirs="
                f"{configs['log.dirs']} disagree",
                file=sys.stderr,
            )
            return 2
        configs["log.dirs"] = log_dir
    users: dict[str, str] = {}
    for entry in getattr(args, "user", None) or ():
        name, sep, password = entry.partition(":")
        if not sep or not name or not password:
            print(f"kafkagen serve: --user {entry!r} is not NAME:PASSWORD", file=sys.stderr)
            return 2
        users[name] = password
    if args.brokers < 1:
        print("kafkagen serve: --brokers must be at least 1", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535 - args.brokers + 1:
        print(f"kafkagen serve: no room for {args.brokers} ports from {args.port}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from kafkagen.generator.packages import PackageError
    from kafkagen.runtime.broker.api import RegistryError

    package = None
    try:
        package, registry = _registry(args)
        return asyncio.run(
            _serve(
                args.brokers,
                args.port,
                configs,
                getattr(args, "control_port", None),
                users,
                registry,
            )
        )
    except (PackageError, RegistryError) as e:
        print(f"kafkagen serve: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    finally:
        if package is not None:
            package.close()


def _registry(args: argparse.Namespace) -> tuple[GeneratedPackage | None, Registry]:
    """The package named by --package or --specs (None: the built-in) and the registry of
    handlers serving with it, the --handlers modules registered."""
    from pathlib import Path

    from kafkagen.generator.packages import from_specs, load
    from kafkagen.runtime.broker.api import Registry
    from kafkagen.runtime.handlers import declare_handlers

    package = None
    if getattr(args, "specs", None):
        package = from_specs([Path(p) for p in args.specs])
    elif getattr(args, "package", None):
        package = load(args.package)
    try:
        registry = Registry(declare_handlers(), package.module if package else None)
        for module in getattr(args, "handlers", None) or ():
            registry.register_module(module)
        registry.compose()
    except BaseException:
        if package is not None:
            package.close()
        raise
    return package, registry


async def _serve(
    brokers: int,
    port: int,
    configs: dict[str, str],
    control_port: int | None = None,
    users: dict[str, str] | None = None,
    registry: Registry | None = None,
) -> int:
    from kafkagen.runtime.broker.cluster import Cluster
    from kafkagen.runtime.broker.control.http_api import ControlServer
    from kafkagen.runtime.broker.storage.log_store import LogDirError

    try:
        cluster = Cluster(brokers, port=port, configs=configs, users=users, registry=registry)
    except (ConfigError, LogDirError) as e:
        print(f"kafkagen serve: {e}", file=sys.stderr)
        return 2
    control = ControlServer(cluster.control, cluster.describe_brokers)
    try:
        await cluster.start()
        if control_port is not None:
            await control.start(control_port)
    except OSError as e:
        await cluster.stop()
        print(f"kafkagen serve: cannot listen: {e}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    kept = f"log dir {cluster.storage.root}, " if cluster.storage is not None else ""
    print(
        f"kafkagen serve: {brokers} broker(s), cluster id {cluster.metadata.cluster_id}, "
        f"{kept}bootstrap servers: {cluster.bootstrap}",
        flush=True,
    )
    if control_port is not None:
        print(f"kafkagen serve: control API: http://127.0.0.1:{control.port}/", flush=True)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await control.stop()
        await cluster.stop()
    print("kafkagen serve: stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafkagen serve",
        description="Run Kafka brokers on 127.0.0.1 that real clients can use "
        "(in memory, or kept in --log-dir).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
