#!/usr/bin/env bash
# One entry point for a fresh machine (Python 3.10+ and Java 17 present):
#   ./dev.sh demo   set everything up, then run `sparkpredict demo`
#   ./dev.sh test   set everything up, then run the test suite
#   ./dev.sh setup  set up only
# Set-up is idempotent: a virtual environment in .venv with the package installed editable,
# and the listener jar built against that environment's pyspark.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

setup() {
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  # The stamp skips pip when nothing that pip reads has changed since the last install.
  local stamp=.venv/.sparkpredict-installed want
  want=$(cat setup.cfg setup.py pyproject.toml | sha1sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test]'
    echo "$want" > "$stamp"
  fi
  export PYSPARK_PYTHON="$PWD/.venv/bin/python"
  # labelled, on stderr: a bare path as the demo's first line of output read as a stray
  local jar
  jar=$(.venv/bin/sparkpredict listener build)
  echo "listener jar: $jar" >&2
}

cmd=${1:-setup}
shift || true
case "$cmd" in
  setup) setup ;;
  demo)  setup; exec .venv/bin/sparkpredict demo "$@" ;;
  test)  setup; exec .venv/bin/python -m pytest -q "$@" ;;
  *) echo "usage: ./dev.sh {setup|demo|test} [args...]" >&2; exit 2 ;;
esac
