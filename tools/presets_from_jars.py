"""Derive the release presets (``runtime/broker/release_presets.json``) from Kafka's jars.

``python -m kafkagen.presets_from_jars [VERSION ...]`` reads the request specs in each
release's ``kafka-clients`` jar (fetched from Maven Central through `kafkagen.maven`,
cached) and writes the table; ``--check`` only compares; ``--unserved`` prints, per
preset, the versions of its release that kafkagen does not serve (so cannot advertise).
See `kafkagen.runtime.broker.release_presets` for what a preset holds.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafkagen.runtime.broker import release_presets as _presets_module

__all__ = ["RELEASES", "derive", "main", "table", "unserved"]

#: The releases with a preset, named by their minor release: each from 2.4, the first
#: whose jar holds a spec for every API it served (API versions do not change in patches).
RELEASES = (
    *(f"2.{m}.0" for m in range(4, 9)),
    *(f"3.{m}.0" for m in range(0, 10)),
    *(f"4.{m}.0" for m in range(0, 5)),
)
#: The table, beside the module that reads it (in a clone: runtime/broker/).
TABLE = Path(_presets_module.__file__).with_suffix(".json")
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_BROKER_LISTENERS = {"broker", "zkBroker"}


def _versions(text: str, where: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)(?:-(\d+)|(\+))?", text.strip())
    if m is None:
        raise ValueError(f"{where}: validVersions {text!r} is not N or N-M")
    lo = int(m.group(1))
    return lo, int(m.group(2)) if m.group(2) else lo


def derive(jar: Path) -> dict[int, tuple[int, int]]:
    """API key -> (lowest, highest stable) version a release's broker served, from its jar."""
    out: dict[int, tuple[int, int]] = {}
    with zipfile.ZipFile(jar) as z:
        names = [n for n in z.namelist() if re.fullmatch(r"common/message/\w+Request\.json", n)]
        if not names:
            raise ValueError(f"{jar}: holds no common/message/*Request.json spec files")
        for name in names:
            # raw_decode: like Kafka's own parser, stop after the spec's one object (2.8.2's
            # DescribeProducersRequest.json has a stray bracket after it).
            text = _COMMENT.sub("", z.read(name).decode("utf-8")).strip()
            spec, _ = json.JSONDecoder().raw_decode(text)
            if spec.get("type") != "request":
                continue
            listeners = spec.get("listeners")
            if listeners is not None and not _BROKER_LISTENERS & set(listeners):
                continue  # controller-only
            if spec["validVersions"] == "none":
                continue
            lo, hi = _versions(spec["validVersions"], f"{jar.name}:{name}")
            if spec.get("latestVersionUnstable"):
                hi -= 1
            if hi >= lo:
                out[int(spec["apiKey"])] = (lo, hi)
    return out


def table(releases: Sequence[str] = RELEASES) -> dict[str, Any]:
    from kafkagen.maven import jar

    out: dict[str, Any] = {
        "derived_by": "python -m kafkagen.presets_from_jars",
        "releases": {},
    }
    for version in releases:
        minor = ".".join(version.split(".")[:2])
        apis = derive(jar(f"org.apache.kafka:kafka-clients:{version}"))
        out["releases"][minor] = {
            "from": f"org.apache.kafka:kafka-clients:{version}",
            "apis": {str(k): list(v) for k, v in sorted(apis.items())},
        }
    return out


def render(data: dict[str, Any]) -> str:
    lines = ["{", f'  "derived_by": {json.dumps(data["derived_by"])},', '  "releases": {']
    releases = list(data["releases"].items())
    for i, (minor, rel) in enumerate(releases):
        apis = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in rel["apis"].items())
        comma = "," if i < len(releases) - 1 else ""
        lines.append(f'    "{minor}": {{"from": "{rel["from"]}",')
        lines.append(f'      "apis": {{{apis}}}}}{comma}')
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def unserved() -> str:
    """One line per preset: the release's API versions kafkagen's handlers do not serve."""
    from kafkagen.runtime.broker.api import describe_gaps
    from kafkagen.runtime.broker.release_presets import preset_gaps, preset_names
    from kafkagen.runtime.handlers import SERVED

    served = {key: (low, high) for key, (_, low, high, _) in SERVED.items()}
    return "\n".join(
        f"{release}: {describe_gaps(preset_gaps(release, served)) or 'none'}"
        for release in preset_names()
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkagen.presets_from_jars", description=__doc__)
    p.add_argument("versions", nargs="*", default=list(RELEASES), help="kafka-clients versions")
    p.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    p.add_argument(
        "--unserved",
        action="store_true",
        help="print what each preset cannot advertise (reads no jar)",
    )
    args = p.parse_args(argv)
    if args.unserved:
        print(unserved())
        return 0
    text = render(table(args.versions))
    if args.check:
        if TABLE.read_text("utf-8") != text:
            print(
                f"{TABLE.name} is stale: run python -m kafkagen.presets_from_jars", file=sys.stderr
            )
            return 1
        return 0
    TABLE.write_text(text, "utf-8")
    print(f"wrote {TABLE.name}: {len(args.versions)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
