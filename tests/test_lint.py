"""The conventions the code is held to (CONVENTIONS.md): ruff runs clean on the whole tree, mypy
on the package. Both are pinned in setup.cfg's test extra; mypy only on Python 3.11+, where the
pinned pandas stubs install (see setup.cfg)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)


def test_ruff_is_clean_on_the_package_tests_benchmarks_and_jobs():
    r = _run("ruff", "check", "--no-cache", "sparkpredict", "tests", "benchmarks", "jobs")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="mypy and the pinned pandas stubs (which need "
                    "Python 3.11+) are the test extra's on Python 3.11+ only; the type check runs there")
def test_mypy_is_clean_on_the_package():
    r = _run("mypy", "sparkpredict")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "Success: no issues found" in r.stdout
