"""A Python driver that attach()ed and then raised is recorded as failed, not succeeded, by exit.

A Python driver's end reads exit code 0 to the JVM that Python launched: the context stops from
Spark's shutdown hook as the JVM follows Python out. A script that raised after its last job
(its output half written) was recorded as a succeeded run, of a runtime shorter than a whole
run's, and the models trained on it. attach() chains sys.excepthook to tell the listener.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sparkpredict import store as store_mod

pytestmark = pytest.mark.spark

_DRIVER = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    import sparkpredict

    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = sparkpredict.attach(builder, job="raises", store=sys.argv[1]).getOrCreate()
    assert spark.range(10).count() == 10
    if sys.argv[2] == "value":
        raise ValueError("the output path exists " + "x" * 600)
    raise KeyboardInterrupt
""")


def _recorded_run(store, proc):
    """The run, as it is when Python has exited: attach() stops the context at exit, so it is
    in the store already (the JVM would otherwise record it on its own way down, seconds later)."""
    runs = store_mod.open(store).runs() if (store / "runs").is_dir() else []
    assert len(runs) == 1, proc.stdout.read()[-3000:] if proc.stdout else ""
    return runs.iloc[0]


def test_an_uncaught_exception_fails_the_run_and_a_repl_does_not(listener_jar, tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cases = {"value": [], "interrupt": [], "repl": ["-i"]}
    procs = {}
    for name, flags in cases.items():
        how = "value" if name != "interrupt" else "interrupt"
        procs[name] = subprocess.Popen([sys.executable, *flags, str(script), str(tmp_path / name), how], env=env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
    for proc in procs.values():
        proc.wait(timeout=300)
    assert procs["value"].returncode == 1 and procs["interrupt"].returncode != 0
    failed = _recorded_run(tmp_path / "value", procs["value"])
    assert (failed.status, failed.num_jobs) == ("failed", 1)
    # the exception's text, cut to a length the run's row keeps
    assert failed.error_message.startswith("the driver raised ValueError: the output path exists xxx")
    assert failed.error_message.endswith("...") and len(failed.error_message) < 540
    interrupted = _recorded_run(tmp_path / "interrupt", procs["interrupt"])
    assert (interrupted.status, interrupted.error_message) == ("killed", "the driver raised KeyboardInterrupt")
    # python -i: the interpreter goes on after an exception (a REPL's every mistake would
    # otherwise fail the run); its end on EOF is the application's ordinary end
    repl = _recorded_run(tmp_path / "repl", procs["repl"])
    assert (repl.status, repl.error_message, repl.num_jobs) == ("succeeded", None, 1)
