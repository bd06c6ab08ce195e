#!/usr/bin/env bash
# Set-up and the two everyday commands, on a machine with only Python 3.11+ and Java 17:
#   bash tools/dev.sh job [ARGS]    the main job: the Spark compatibility fuzz on local Spark
#   bash tools/dev.sh test [ARGS]   the test suite (pytest ARGS)
# The first run creates .venv and installs kafkagen with its dev extras; later runs
# reinstall only when pyproject.toml changed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
venv="$root/.venv"
stamp="$venv/.kafkagen-installed"
python=${PYTHON:-python3}

setup() {
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "installing kafkagen and its dev extras into .venv ..." >&2
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        "$venv/bin/python" -m pip install --quiet -e ".[dev]"
        echo "$want" > "$stamp"
    fi
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
