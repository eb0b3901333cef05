"""The top-level API: every public name resolves, shows in dir() (a notebook's tab completion),
and importing the package loads none of the heavy libraries."""
import subprocess
import sys

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
