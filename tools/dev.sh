#!/usr/bin/env bash
# Set-up and the two everyday commands, on a machine with only Python 3.11+ and Java 17:
#   bash tools/dev.sh job [ARGS]    the main job: the Spark compatibility fuzz on local Spark
#   bash tools/dev.sh test [ARGS]   the test suite (pytest ARGS, run from the repository)
# The first run creates .venv and installs kafkagen with its dev extras; later runs
# reinstall whenever what the install is built from changed: pyproject.toml, setup.py or
# the compiled extensions' C sources (a stale compiled accelerator is otherwise refused at import).
# The job runs where you stand: `--out myout` is ./myout there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
stamp="$venv/.kafkagen-installed"
python=${PYTHON:-python3}

setup() {
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    want=$(cd "$root" && cat pyproject.toml setup.py runtime/_native.c runtime/_native.h tools/fuzz/_builders.c | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "installing kafkagen and its dev extras into .venv ..." >&2
        (cd "$root" && "$venv/bin/python" -m pip install --quiet --upgrade pip &&
            "$venv/bin/python" -m pip install --quiet -e ".[dev]")
        echo "$want" > "$stamp"
    fi
    typing_links
}

# The report test renders report.html in headless Chromium (Debian's package). Installed
# with apt where we may (root, as in CI); elsewhere the test skips and says why. In CI a
# missing browser is an error, not a skip.
browser() {
    command -v chromium >/dev/null && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing chromium (for the report test) ..." >&2
        { apt-get update -qq >&2 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                chromium >/dev/null; } || echo "tools/dev.sh: apt-get could not install chromium" >&2
    fi
    if ! command -v chromium >/dev/null; then
        if [ -n "${CI:-}" ]; then
            echo "tools/dev.sh: chromium is missing and could not be installed with apt-get" >&2
            exit 1
        fi
        echo "tools/dev.sh: no chromium (install Debian's 'chromium'); the report test skips" >&2
    fi
}

# mypy cannot follow setuptools' editable import hook, so it would not find kafkagen from
# code outside the repository. Give it the installed layout as a PEP 561 stub package of
# links to the sources (site-packages/kafkagen-stubs), which Python itself never imports.
typing_links() {
    "$venv/bin/python" - "$root" <<'PY'
import shutil, sys, sysconfig, tomllib
from pathlib import Path

root = Path(sys.argv[1])
links = Path(sysconfig.get_paths()["purelib"]) / "kafkagen-stubs"
shutil.rmtree(links, ignore_errors=True)
links.mkdir()
dirs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
for entry in (root / dirs["kafkagen"]).iterdir():
    if entry.name != "__pycache__":
        # a stub package's top level is found only as __init__.pyi
        name = "__init__.pyi" if entry.name == "__init__.py" else entry.name
        (links / name).symlink_to(entry)
for package, folder in dirs.items():
    parts = package.split(".")[1:]
    if len(parts) == 1 and not (links / parts[0]).exists():
        (links / parts[0]).symlink_to(root / folder, target_is_directory=True)
PY
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
    job)
        setup
        exec "$venv/bin/kafkagen" fuzz "$@"
        ;;
    test)
        setup
        browser
        cd "$root"
        set +e
        "$venv/bin/python" -m pytest "$@"
        status=$?
        set -e
        if [ "$status" -eq 5 ]; then
            echo "tools/dev.sh test: pytest collected no tests; that is a failure" >&2
            exit 1
        fi
        exit "$status"
        ;;
    *)
        echo "usage: bash tools/dev.sh job [fuzz options] | test [pytest options]" >&2
        exit 2
        ;;
esac
