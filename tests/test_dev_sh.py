"""README's first command, `./dev.sh demo`, on a machine whose Python is not the one wanted: the
Pythons here are stand-ins (shell scripts answering what dev.sh asks), so no pip or JVM runs."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _python(path: Path, version: str, pip_refuses: bool) -> Path:
    """A Python `version` whose `-m venv DIR` makes DIR a venv of itself (and a sparkpredict
    command), and whose pip installs, or refuses as pip does a package needing Python 3.10+."""
    pip = (f'echo "ERROR: Package \'sparkpredict\' requires a different Python: {version} not in '
           '\'>=3.10\'" >&2; exit 1' if pip_refuses else "exit 0")
    return _script(path, f"""
case "$1 $2" in
  "-c "*) echo "{version} /opt/python-{version}" ;;
  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" &&
             printf '#!/bin/sh\\necho /cache/listener.jar\\n' > "$3/bin/sparkpredict" &&
             chmod +x "$3/bin/sparkpredict" ;;
  "-m pip") {pip} ;;
  *) exit 3 ;;
esac
""")


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("dev.sh", "setup.cfg", "setup.py", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    return root


def _dev(root: Path, python: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHON=str(python))
    return subprocess.run([str(root / "dev.sh"), *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_a_python_older_than_3_10_is_refused_before_a_venv_is_made_of_it(tmp_path):
    """dev.sh made .venv with a Python 3.9 and pip then refused the package: the retry with
    PYTHON=python3.11 used that .venv again and failed alike, naming 3.9 and no fix."""
    root = _checkout(tmp_path)
    r = _dev(root, _python(tmp_path / "py39" / "python3", "3.9.18", pip_refuses=True), "demo")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "needs Python 3.10+" in r.stderr and "3.9.18" in r.stderr
    assert "fix: PYTHON=" in r.stderr and "./dev.sh demo" in r.stderr
    assert not (root / ".venv").exists()


def test_python_given_remakes_a_venv_of_another_python_and_keeps_one_of_its_own(tmp_path):
    root = _checkout(tmp_path)
    # an earlier try's .venv, of a Python pip refuses the package on
    _python(root / ".venv" / "bin" / "python", "3.9.18", pip_refuses=True)
    py311 = _python(tmp_path / "py311" / "python3", "3.11.7", pip_refuses=False)
    r = _dev(root, py311, "setup")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "remaking .venv with Python 3.11.7" in r.stderr and "it had 3.9.18" in r.stderr
    venv_python = subprocess.run([str(root / ".venv" / "bin" / "python"), "-c", "x"],
                                 capture_output=True, text=True, check=True).stdout
    assert venv_python.startswith("3.11.7 ")
    # the same Python again: the set-up venv stays (its install stamp with it)
    stamp = root / ".venv" / ".sparkpredict-installed"
    assert stamp.is_file()
    r = _dev(root, py311, "setup")
    assert r.returncode == 0 and "remaking" not in r.stderr, r.stderr
    assert stamp.is_file()
