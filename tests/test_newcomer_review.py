"""What a newcomer with a nightly PySpark job of their own met, following the README: the
script calls ``sparkpredict.attach(SparkSession.builder)`` as "Using it" shows, and is run by
``sparkpredict submit --store S --job J --input-size SIZE`` (or ``--executors auto``)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from sparkpredict import store as store_mod

ATTACHED_BARE = """
import sparkpredict
from pyspark.sql import SparkSession
spark = sparkpredict.attach(SparkSession.builder.appName("nightly sales rollup")
                            .config("spark.ui.enabled", "false")).getOrCreate()
assert spark.range(100).count() == 100
spark.stop()
"""


@pytest.mark.spark
def test_attach_under_submit_keeps_the_store_job_and_size_submit_was_given(listener_jar, tmp_path,
                                                                           env_of_spark_defaults):
    """attach() without store/job/input_bytes in a script that spark-submit runs set the default
    store, the app name and no declared size over what `sparkpredict submit` was given: the run
    went into ~/.sparkpredict/store as job 'nightly sales rollup' with its measured input, and
    submit said "no run was recorded in S" (and `--executors auto` advised a job the run then
    never joined)."""
    home = tmp_path / "home"
    home.mkdir()
    env = dict(env_of_spark_defaults, PYSPARK_PYTHON=sys.executable, HOME=str(home))
    env.pop("SPARKPREDICT_STORE", None)
    script = tmp_path / "nightly.py"
    script.write_text(ATTACHED_BARE)
    st = tmp_path / "history"
    r = subprocess.run([sys.executable, "-m", "sparkpredict", "submit", "--store", str(st),
                        "--job", "nightly-sales", "--input-size", "5MB", "--no-compact", "--",
                        "--master", "local[1]", str(script)],
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "recorded local-" in r.stderr and "no run was recorded" not in r.stderr, r.stderr[-3000:]
    runs = store_mod.open(st).runs()
    assert list(runs["job"]) == ["nightly-sales"] and list(runs["status"]) == ["succeeded"]
    assert list(runs["input_bytes"]) == [5_000_000]
    assert list(runs["input_bytes_source"]) == ["declared"]
    assert not (home / ".sparkpredict" / "store").exists()
