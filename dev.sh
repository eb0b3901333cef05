#!/usr/bin/env bash
# One entry point for a fresh machine (Python 3.10+ and Java 17 present):
#   ./dev.sh demo   set everything up, then run `sparkpredict demo`
#   ./dev.sh test   set everything up, then run the test suite
#   ./dev.sh setup  set up only
#   PYTHON=python3.12 ./dev.sh ...   with that Python (default python3); a .venv of another
#                                    Python is remade
# Set-up is idempotent: a virtual environment in .venv with the package installed editable,
# and the listener jar built against that environment's pyspark.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}

# "3.11.7 /usr": the version, and the installation a venv of it points back to
WHICH='import sys; print("%d.%d.%d" % sys.version_info[:3], sys.base_prefix)'

setup() {
  local want_py have_py
  if [ ! -x .venv/bin/python ] || [ -n "${PYTHON:-}" ]; then
    want_py=$("$PY" -c "$WHICH") || {
      echo "error: $PY does not run (PYTHON names the Python 3.10+ to set up .venv with)" >&2
      echo "fix: PYTHON=/path/to/python3.11 ./dev.sh ${cmd}" >&2; exit 2; }
    case "$want_py" in
      3.[0-9].*|[0-2].*)
        # pip would refuse only after .venv was made with it, and that .venv stayed the next try's
        echo "error: sparkpredict needs Python 3.10+, and $PY is ${want_py%% *}" >&2
        echo "fix: PYTHON=/path/to/python3.11 ./dev.sh ${cmd} (any Python 3.10+)" >&2; exit 2 ;;
    esac
  fi
  if [ -x .venv/bin/python ] && [ -n "${PYTHON:-}" ]; then
    # PYTHON names the venv's Python: one of another Python (an earlier try's) was kept before,
    # and PYTHON silently changed nothing
    have_py=$(.venv/bin/python -c "$WHICH" 2>/dev/null || echo "unknown")
    if [ "$have_py" != "$want_py" ]; then
      echo "remaking .venv with Python ${want_py%% *} ($PY); it had ${have_py%% *}" >&2
      rm -rf .venv
    fi
  fi
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  # The stamp skips pip when nothing that pip reads has changed since the last install.
  local stamp=.venv/.sparkpredict-installed want
  want=$(cat setup.cfg setup.py pyproject.toml | sha1sum | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    # setuptools' note on every editable install, that a folder named like the package may
    # shadow it, is about a folder other than the package's own: none here. pip shows it even
    # with -q, a 10-line block as a newcomer's first output.
    PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation" \
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
