"""A Python script run by plain ``spark-submit`` with the listener's settings (a cluster's
``listener conf`` lines), neither ``sparkpredict.attach`` nor ``sparkpredict submit``: one that
raises after its last job, its session left running, was recorded succeeded.

spark-submit runs the script as a child process; its non-zero status ends spark-submit's JVM
through ``System.exit``, and the session the script left running then stops from Spark's shutdown
hook as for a good end. The listener reads that exit from the JVM's main thread (SubmitExit).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkpredict import store as store_mod
from sparkpredict.capture.listener import listener_conf
from sparkpredict.capture.submit_args import pyspark_home

pytestmark = pytest.mark.spark

SCRIPT = """\
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
assert spark.sparkContext.parallelize(range(10), 2).count() == 10
if sys.argv[1] == "raise":
    raise ValueError("the output failed its check")  # the session is left running
"""


def _spark_submit(store: Path, job: str, how: str, tmp_path: Path) -> tuple[int, str]:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    conf = listener_conf(store=str(store), job=job)
    args = [str(pyspark_home() / "bin" / "spark-submit"), "--master", "local[1]", "--driver-memory", "512m",
            "--conf", "spark.ui.enabled=false"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    proc = subprocess.run([*args, str(script), how], capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("how, code, status, message", [
    ("raise", 1, "failed", ("the driver exited with a non-zero status (spark-submit's Python or R application "
                            "failed: see its output)")),
    ("end", 0, "succeeded", None)])
def test_a_python_script_under_plain_spark_submit_is_recorded_by_how_it_ended(tmp_path, how, code, status,
                                                                                message):
    store = tmp_path / "store"
    rc, out = _spark_submit(store, f"plain-{how}", how, tmp_path)
    assert rc == code, out[-4000:]
    if how == "raise":
        assert "ValueError: the output failed its check" in out
    run = store_mod.open(store).runs().sort_values("updated_ms").iloc[-1]
    assert (run.job, run.status, run.num_jobs) == (f"plain-{how}", status, 1), run.error_message
    assert (run.error_message if isinstance(run.error_message, str) else None) == message
    assert run.wall_ms > 0
