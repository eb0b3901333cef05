"""The top-level API: every public name resolves, shows in dir() (a notebook's tab completion),
and importing the package loads none of the heavy libraries."""
import subprocess
import sys

import pytest

import sparkpredict


def test_every_public_name_resolves_and_shows_in_dir():
    listed = dir(sparkpredict)
    for name in sparkpredict.__all__:
        assert name in listed, name
        assert getattr(sparkpredict, name) is not None, name
    assert {"suggest_executors", "Advice", "JobRuntimeModel", "units", "config"} <= set(listed)


def test_importing_the_package_loads_no_heavy_library():
    code = ("import sys, sparkpredict; dir(sparkpredict); "
            "print([m for m in ('numpy', 'pandas', 'sklearn', 'scipy', 'pyspark', 'pyarrow') if m in sys.modules])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert p.stdout.strip() == "[]", p.stdout + p.stderr


def test_submodules_the_docs_name_resolve_after_a_bare_import_and_dir_shows_no_helpers():
    code = ("import sparkpredict; print(sparkpredict.sweep.plan_sweep.__name__, "
            "sparkpredict.report.build_report.__name__, "
            "[n for n in dir(sparkpredict) if n in ('importlib', 'Any', 'annotations', '_EXPORTS')])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert p.stdout.split() == ["plan_sweep", "build_report", "[]"], p.stdout + p.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sparkpredict.nope  # noqa: B018
