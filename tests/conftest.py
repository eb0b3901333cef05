"""Shared fixtures. One JVM per test process: the listener jar must be on the driver's
classpath when the JVM first starts, so every Spark test goes through ``spark_app``.

``spark_app(store, job=..., master="local[2]", conf=None)`` is a context manager that stops
any running SparkSession, starts a new application with the sparkpredict listener recording
into ``store``, yields the session, and stops it on exit (which flushes the run's rows).
Stopping and starting a SparkContext in a live JVM costs ~0.2 s; a local-cluster master adds
executor JVM start-up (15-35 s on 2 cores).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Keep the user's real default store out of the tests.
os.environ.setdefault("SPARKPREDICT_STORE", str(Path(__file__).parent / ".default-store-unused"))
# ... and a cluster's spark-defaults.conf, whose spark.sparkpredict.store outranks it (and whose
# other settings would change what the tests' sessions run with): an empty one of their own
os.environ["SPARK_CONF_DIR"] = tempfile.mkdtemp(prefix="sparkpredict-test-conf-")
atexit.register(shutil.rmtree, os.environ["SPARK_CONF_DIR"], ignore_errors=True)
# ... and its cache: fits and the listener jar of this session only, so that no earlier run's
# cached fit can answer for a store (a pytest tmp path is reused after three sessions).
if "SPARKPREDICT_CACHE" not in os.environ:
    os.environ["SPARKPREDICT_CACHE"] = tempfile.mkdtemp(prefix="sparkpredict-test-cache-")
    atexit.register(shutil.rmtree, os.environ["SPARKPREDICT_CACHE"], ignore_errors=True)

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def runs_so_far():
    """``runs_so_far(store)``: the runs rows a live driver's listener has written to ``store``
    so far, or None before its first batch (for tests that signal a driver mid-run)."""
    from sparkpredict import store as store_mod
    from sparkpredict.errors import StoreError

    def read(store):
        try:
            runs = store_mod.open(store).runs()
        except StoreError:
            return None
        return runs if len(runs) else None

    return read


@pytest.fixture(scope="session")
def first_batch(runs_so_far):
    """``first_batch(proc, store, log)``: wait until the driver ``proc`` (its output in ``log``)
    has committed its first batch to ``store``, failing with the output's end if it exits first
    or takes over ``timeout_s``; then it is mid-run, for a test to signal it."""
    import time

    def wait(proc, store, log, timeout_s: float = 240):
        deadline = time.time() + timeout_s
        while runs_so_far(store) is None:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline, "no batch was committed in time"
            time.sleep(0.5)

    return wait


@pytest.fixture(scope="session")
def env_of_spark_defaults() -> dict[str, str]:
    """This process's environment without a log4j configuration of the user's (the variable, or
    a log4j2.properties under $SPARK_CONF_DIR or $SPARK_HOME/conf), for a child whose Spark log
    lines a test reads: with one, sparkpredict rightly leaves Spark's logging as configured."""
    return {k: v for k, v in os.environ.items()
            if k not in ("LOG4J_CONFIGURATION_FILE", "SPARK_CONF_DIR", "SPARK_HOME")}


@pytest.fixture(scope="session")
def listener_jar() -> Path:
    from sparkpredict.capture.listener import build_listener

    return build_listener()


_BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.sql.adaptive.enabled": "false",
}


@pytest.fixture(scope="session")
def spark_app(listener_jar, tmp_path_factory):
    from pyspark.sql import SparkSession

    from sparkpredict.capture.listener import listener_conf

    @contextlib.contextmanager
    def _app(store, job: str = "test-job", master: str = "local[2]", conf: dict | None = None,
             app_name: str | None = None):
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        builder = SparkSession.builder.master(master).appName(app_name or job)
        settings = dict(_BASE_CONF)
        settings["spark.local.dir"] = str(tmp_path_factory.mktemp("spark-local"))
        settings.update(listener_conf(store=str(store), job=job))
        settings.update(conf or {})
        for k, v in settings.items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        try:
            yield spark
        finally:
            spark.stop()

    # spark-submit turns the first session's settings into JVM system properties, which every
    # later SparkConf of the process inherits. Launch the JVM with the neutral base settings
    # first, so a test's own conf (say spark.default.parallelism) cannot leak into the next.
    from pyspark import SparkContext

    if SparkContext._jvm is None:
        with _app(tmp_path_factory.mktemp("bootstrap-store"), job="bootstrap"):
            pass
    yield _app
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture
def figure_titles(monkeypatch) -> list[str]:
    """Every matplotlib title set while the test runs (the report's figures are PNGs: their
    titles are read here). The real titles are set; the spy only reads them."""
    import matplotlib.axes

    titles: list[str] = []
    real = matplotlib.axes.Axes.set_title

    def spy(self, label, *a, **k):
        titles.append(str(label))
        return real(self, label, *a, **k)

    monkeypatch.setattr(matplotlib.axes.Axes, "set_title", spy)
    return titles
