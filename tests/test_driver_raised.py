"""A Python driver that attach()ed and then raised is recorded as failed, not succeeded, by exit.

A Python driver's end reads exit code 0 to the JVM that Python launched: the context stops from
Spark's shutdown hook as the JVM follows Python out. A script that raised after its last job
(its output half written) was recorded as a succeeded run, of a runtime shorter than a whole
run's, and the models trained on it. attach() registers an exit handler that tells the
listener of the exception Python reports as uncaught, and stops the context.
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
    import os, sys, threading
    from pyspark.sql import SparkSession
    import sparkpredict

    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = sparkpredict.attach(builder, job="raises", store=sys.argv[1]).getOrCreate()
    assert spark.range(10).count() == 10
    how = sys.argv[2]
    if how == "value":
        raise ValueError("the output path exists " + "x" * 600)
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "survives":
        # a forked child's exit must not stop the parent's context (it shares its py4j
        # connection), and a thread's error that a logging setup hands to sys.excepthook is
        # no uncaught exception of the script's
        child = os.fork()
        if child == 0:
            sys.exit(0)
        os.waitpid(child, 0)
        threading.excepthook = lambda a: sys.excepthook(a.exc_type, a.exc_value, a.exc_traceback)
        worker = threading.Thread(target=lambda: int("not a number"))
        worker.start()
        worker.join()
        assert spark.range(5).count() == 5
    if how == "repl":
        raise ValueError("a mistake typed at the prompt")
    if how == "finally":
        try:
            raise ValueError("half the output written")
        finally:
            spark.stop()
    if how == "with":
        with spark:
            sys.exit(3)
    if how == "exit0":
        with spark:
            sys.exit(0)
    if how == "retry":
        # the retry starts inside the except of the attempt that failed: its own stop sees that
        # exception in flight, which is not its failure
        def attempt(n):
            s = sparkpredict.attach(builder, job=f"attempt{n}", store=sys.argv[1]).getOrCreate()
            try:
                s.range(10).count()
                if n == 1:
                    raise ConnectionError("the source was not ready")
            finally:
                s.stop()
        spark.stop()
        try:
            attempt(1)
        except ConnectionError:
            attempt(2)
""")


def _run(tmp_path, name, how, *flags, runs=1):
    """The process's exit code and its run, as they are when Python has exited: attach() stops
    the context at exit, so the run is in the store already (the JVM would otherwise record it
    on its own way down, seconds later)."""
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    store = tmp_path / name
    proc = subprocess.run([sys.executable, *flags, str(script), str(store), how], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    table = store_mod.open(store).runs() if (store / "runs").is_dir() else []
    assert len(table) == runs, proc.stderr[-3000:]
    return proc.returncode, table.iloc[0] if runs == 1 else table.set_index("job")


def test_an_uncaught_exception_fails_the_run(listener_jar, tmp_path):
    rc, run = _run(tmp_path, "value", "value")
    assert rc == 1 and (run.status, run.num_jobs) == ("failed", 1)
    # the exception's text, cut to a length the run's row keeps
    assert run.error_message.startswith("the driver raised ValueError: the output path exists xxx")
    assert run.error_message.endswith("...") and len(run.error_message) < 540
    rc, run = _run(tmp_path, "interrupt", "interrupt")
    assert rc != 0 and (run.status, run.error_message) == ("killed", "the driver raised KeyboardInterrupt")


def test_an_exception_on_its_way_out_as_the_script_stops_the_session_fails_the_run(listener_jar, tmp_path):
    # the session ended before the exception reached the top, where the exit handler looks
    rc, run = _run(tmp_path, "finally", "finally")
    assert rc == 1 and (run.status, run.error_message) == ("failed", "the driver raised ValueError: half the output written")
    rc, run = _run(tmp_path, "with", "with")
    assert rc == 3 and (run.status, run.error_message) == ("failed", "the driver exited with status 3")
    # sys.exit(0) on its way out ends the work well
    rc, run = _run(tmp_path, "exit0", "exit0")
    assert rc == 0 and (run.status, run.error_message) == ("succeeded", None)
    rc, runs = _run(tmp_path, "retry", "retry", runs=3)
    assert rc == 0 and runs.loc["attempt1", "status"] == "failed"
    assert runs.loc["attempt1", "error_message"] == "the driver raised ConnectionError: the source was not ready"
    assert (runs.loc["attempt2", "status"], runs.loc["attempt2", "error_message"]) == ("succeeded", None)


def test_the_stop_runs_whatever_is_in_flight_and_exit_statuses_read_as_python_exits():
    """No JVM: a stand-in class whose stop() records that it ran, wrapped as attach() wraps
    SparkContext. An exit code that cannot be compared (an array) must not keep the stop from
    running, and sys.exit(True) is status 1, as the process exits."""
    import numpy as np

    from sparkpredict.capture import listener

    class Context:
        def __init__(self):
            self._jsc = object()
            self._jvm = None  # nothing to tell: _tell_listener_raised returns False
            self.stopped = 0

        def stop(self):
            self.stopped += 1
            return "stopped"

    listener._record_raised_at_stop(Context)
    listener._record_raised_at_stop(Context)  # once per process: no second wrapper
    assert Context.stop.__wrapped__.__name__ == "stop" and not hasattr(Context.stop.__wrapped__, "__wrapped__")
    c = Context()
    with pytest.raises(SystemExit):
        try:
            sys.exit(np.array([1, 2]))
        finally:
            assert c.stop() == "stopped"
    assert c.stopped == 1
    assert [listener._exit_status(v) for v in (None, 0, True, False, np.int64(3), 256, -1, "a message")] == \
        [0, 0, 1, 0, 3, 0, 255, None]


def test_what_the_script_survives_or_a_repl_goes_on_from_is_no_failure(listener_jar, tmp_path):
    rc, run = _run(tmp_path, "survives", "survives")
    assert rc == 0 and (run.status, run.error_message, run.num_jobs) == ("succeeded", None, 2)
    # python -i: the interpreter goes on after an exception (a REPL's every mistake would
    # otherwise fail the run); its end on EOF is the application's ordinary end
    rc, run = _run(tmp_path, "repl", "repl", "-i")
    assert rc == 0 and (run.status, run.error_message, run.num_jobs) == ("succeeded", None, 1)
