"""The sweep's Spark sessions: started quietly, waited on, stopped with the run's exit code, and
Ctrl-C taken so that no call into the JVM is cut in half (:class:`_Interrupts`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import Terminated, WorkloadError
from .sweep_plan import _MASTER_FIX

log = logging.getLogger(__name__)

#: The log configuration a sweep's driver JVM starts with unless the user has one: Spark's
#: errors only, so its start-up WARNs do not bury the progress bar (``--spark-logs``: Spark's own).
QUIET_SPARK_LOG = Path(__file__).parent / "data" / "spark" / "log4j2-quiet.properties"
#: log4j2 reads this environment variable as ``-Dlog4j2.configurationFile``; through the
#: environment the user's ``spark.driver.extraJavaOptions`` (and spark-defaults') stay untouched.
_LOG4J_ENV = "LOG4J_CONFIGURATION_FILE"


class _Interrupts:
    """Ctrl-C during a sweep, taken so that no call into the JVM is cut in half; SIGTERM and
    SIGHUP (a scheduler stopping the sweep, a closed terminal) alike, raising
    :class:`~sparkpredict.errors.Terminated`: their default ended the process at once, leaving a
    half-generated data set and the warm-up's scratch store behind.

    PySpark's own SIGINT handler (every SparkContext installs it) cancels the jobs through the
    py4j connection on which the main thread is waiting for the job: "reentrant call", a broken
    connection, py4j's logged tracebacks, and then the context is stopped under running tasks
    (Spark's ERRORs). Here, while a run's application starts, runs or stops (:meth:`spark_calls`),
    a Ctrl-C only sets :attr:`requested` and cancels the application's jobs from another thread,
    on that thread's own connection; the main thread sees its job fail, or reaches a
    :meth:`check`, and raises KeyboardInterrupt itself, between two JVM calls. Elsewhere (data
    generation, the store) it raises at once, as a second Ctrl-C always does. Outside the main
    thread Python delivers no signals, so nothing is installed there.
    """

    #: The signals taken; SIGHUP is not on every platform.
    SIGNALS = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
                    if s is not None)

    #: py4j's log lines, each with a traceback, for a JVM call cut by a second Ctrl-C: its own
    #: loggers', and two it sends to the root logger.
    _PY4J_LOGGERS = ("", "py4j.clientserver", "py4j.java_gateway")
    _PY4J_ROOT_NOISE = ("KeyboardInterrupt while sending command.", "Exception while sending command.")

    def __init__(self) -> None:
        self.requested = False
        #: the first signal taken: SIGINT raises KeyboardInterrupt, another :class:`Terminated`
        self.signum: int | None = None
        self._in_spark = False
        self._sc = None
        self._done = threading.Event()
        self._canceller: threading.Thread | None = None
        self._main = threading.current_thread() is threading.main_thread()
        self._installed = False
        self._taken: list[int] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Interrupts]:
        """This handler instead of the process's (PySpark's) for the block; restored after."""
        if not self._main:
            yield self
            return
        # A signal ignored stays so (a sweep under nohup must outlive its terminal); SIGINT is
        # taken whatever, as PySpark's own handler takes it anyway.
        previous = {s: signal.getsignal(s) for s in self.SIGNALS}
        self._taken = [s for s, h in previous.items() if s == signal.SIGINT or h != signal.SIG_IGN]
        for s in self._taken:
            signal.signal(s, self._on_signal)
        self._installed = True
        for name in self._PY4J_LOGGERS:
            logging.getLogger(name).addFilter(self._quiet)
        try:
            yield self
        finally:
            self.release()
            self._installed = False
            for s in self._taken:
                handler = previous[s]
                # None: a handler not set from Python; the default is the nearest there is
                fallback = signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL
                signal.signal(s, handler if handler is not None else fallback)
            for name in self._PY4J_LOGGERS:
                logging.getLogger(name).removeFilter(self._quiet)

    def _quiet(self, record: logging.LogRecord) -> bool:
        """After a Ctrl-C, py4j's reports of the calls it cut are expected, not news."""
        return not (self.requested and (record.name.startswith("py4j") or record.msg in self._PY4J_ROOT_NOISE))

    @contextlib.contextmanager
    def spark_calls(self) -> Iterator[None]:
        """The block that starts, runs and stops one application: a first Ctrl-C waits for it."""
        self._in_spark = True
        try:
            yield
        finally:
            self._in_spark = False
            self.release()

    def watch(self, sc) -> None:
        """``sc`` has started (and replaced this handler with PySpark's): Ctrl-C cancels its jobs."""
        self._sc = sc
        if self._installed:
            for s in self._taken:
                signal.signal(s, self._on_signal)

    def release(self) -> None:
        """The application is about to stop: no more cancelling (its context is going away)."""
        self._sc = None
        self._done.set()
        if self._canceller is not None:
            self._canceller.join(10)
            self._canceller = None

    def interruption(self) -> KeyboardInterrupt:
        """What to raise for the signal taken: KeyboardInterrupt for Ctrl-C, :class:`Terminated`
        (its signal number, which the exit status is made of) for the others."""
        if self.signum is None or self.signum == signal.SIGINT:
            return KeyboardInterrupt()
        return Terminated(self.signum)

    @property
    def exit_code(self) -> int:
        """The shell's exit status for the signal taken: 130 for Ctrl-C, 128 + its number."""
        return 128 + (self.signum or signal.SIGINT)

    def check(self) -> None:
        if self.requested:
            raise self.interruption()

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.signum is None:
            self.signum = signum
        # Never while PySpark launches the driver JVM: cut there, it leaves a JVM behind that
        # never learns its Python is gone (and holds the terminal's stderr); the launch takes
        # seconds, and the check after it stops the sweep.
        if (self.requested or not self._in_spark) and not (self._in_spark and not _jvm_started()):
            self.requested = True
            raise self.interruption()
        self.requested = True
        if self._sc is not None:
            self._done.clear()
            self._canceller = threading.Thread(target=self._cancel, args=(self._sc,),
                                               name="sparkpredict-sweep-cancel", daemon=True)
            self._canceller.start()

    def _cancel(self, sc) -> None:
        # Over and over: a workload runs several jobs, and the next one may start before the
        # main thread has seen the first fail.
        while True:
            try:
                sc.cancelAllJobs()
            except Exception:  # the context stopped under us: nothing left to cancel  # noqa: BLE001
                return
            if self._done.wait(0.2):
                return


def _wait_for_tasks_to_end(spark, timeout_s: float) -> None:
    """A cancelled job ends before its tasks have; stopping the context under them makes Spark
    log ERRORs (tasks rejected by a terminated pool), so give them a moment."""
    try:
        tracker = spark.sparkContext._jsc.sc().statusTracker()
        deadline = time.monotonic() + timeout_s
        while sum(e.numRunningTasks() for e in tracker.getExecutorInfos()) and time.monotonic() < deadline:
            time.sleep(0.1)
    except Exception as exc:  # only a courtesy before the stop  # noqa: BLE001
        log.debug("waiting for cancelled tasks failed: %s", exc)


@contextlib.contextmanager
def _spark_quiet_while_stopping(spark) -> Iterator[None]:
    """Spark's own loggers off while an interrupted run stops: a killed task's status update can
    still race the stop and log an ERROR (RejectedExecutionException) the user's Ctrl-C caused;
    sparkpredict's logger (io.sparkpredict) keeps its level. Restored afterwards."""
    try:
        jvm = spark.sparkContext._jvm
        level = jvm.org.apache.logging.log4j.Level
        conf = jvm.org.apache.logging.log4j.core.config.Configurator
        before = jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark").getLevel()
        conf.setLevel("org.apache.spark", level.OFF)
    except Exception as exc:  # only a courtesy: the stop goes on either way  # noqa: BLE001
        log.debug("could not quiet Spark's loggers: %s", exc)
        yield
        return
    try:
        yield
    finally:
        try:
            conf.setLevel("org.apache.spark", before)
        except Exception as exc:  # the JVM went away with the stop  # noqa: BLE001
            log.debug("could not restore Spark's log level: %s", exc)


def _wait_for_executors(spark, n: int, timeout_s: float, check: Callable[[], None] = lambda: None) -> None:
    """Block until ``n`` executors registered, so every run starts its work at full width;
    ``check`` raises to stop waiting (Ctrl-C)."""
    sc = spark.sparkContext
    deadline = time.monotonic() + timeout_s
    while True:
        check()
        # getExecutorMemoryStatus counts the driver's block manager too.
        alive = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
        if alive >= n:
            return
        if time.monotonic() > deadline:
            raise WorkloadError(f"only {alive} of {n} executors started within {timeout_s:.0f} s",
                                "the machine is overloaded: use fewer executors or retry later")
        time.sleep(0.2)


def _user_log_config(conf: dict[str, str]) -> bool:
    """Has the user chosen a log4j configuration for Spark (which a sweep must not replace)?

    The one in a ``log4j2.properties`` is read from the conf folder spark-submit puts first on the
    driver's classpath: :func:`~sparkpredict.capture.submit_args.spark_conf_dir`
    (``$SPARK_CONF_DIR``, else the Spark home's ``conf/``, a pip pyspark's folder without
    ``$SPARK_HOME``). Only that one folder: with ``$SPARK_CONF_DIR`` set, a file in
    ``$SPARK_HOME/conf`` is not read, and Spark would log at its own defaults."""
    from .capture.submit_args import spark_conf_dir

    if os.environ.get(_LOG4J_ENV) or "log4j" in conf.get("spark.driver.extraJavaOptions", ""):
        return True
    conf_dir = spark_conf_dir()
    return conf_dir is not None and (Path(conf_dir) / "log4j2.properties").is_file()


@contextlib.contextmanager
def quiet_spark_log(conf: dict[str, str], quiet: bool = True) -> Iterator[None]:
    """Within it, a driver JVM this process starts logs Spark's errors only
    (:data:`QUIET_SPARK_LOG`): unless the JVM already runs or the user has a log4j configuration
    of their own. The JVM reads its log configuration once, when it starts; the variable is set
    only for that start, so the rest of the user's process never sees it."""
    # A driver JVM this process started came through the pyspark package: until it is imported,
    # none runs, and asking it would import all of pyspark only to learn that.
    running = "pyspark" in sys.modules and _jvm_started()
    quiet = quiet and not running and not _user_log_config(conf)
    if quiet:
        os.environ[_LOG4J_ENV] = str(QUIET_SPARK_LOG)
    try:
        yield
    finally:
        if quiet:
            os.environ.pop(_LOG4J_ENV, None)


def _start_session(master: str, app_name: str, conf: dict[str, str], quiet: bool = True):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:
        with quiet_spark_log(conf, quiet):
            return builder.getOrCreate()
    except Exception as exc:  # py4j wraps Spark's reason (a bad master URL, no cluster) in its own  # noqa: BLE001
        java = getattr(exc, "java_exception", None)
        reason = str(java.getMessage()) if java is not None else (str(exc).strip().splitlines() or [""])[0]
        raise WorkloadError(f"Spark did not start with master {master!r}: {reason}",
                            _MASTER_FIX + ", and check that the cluster is reachable") from None


def _stop(spark, exit_code: int) -> None:
    """Stop the application; a non-zero exit code makes the listener record it as failed.

    A Python-side failure (an exception in the body, executors that never came, Ctrl-C) leaves
    no failed Spark job behind, and would otherwise be recorded as succeeded.
    """
    if not exit_code:
        spark.stop()
        return
    try:
        spark.sparkContext._jsc.sc().stop(exit_code)
    except Exception as exc:  # the JVM may already be gone; the Python-side stop still runs  # noqa: BLE001
        log.debug("stop(%d) failed: %s", exit_code, exc)
    stop_quietly(spark)


def stop_quietly(spark) -> bool:
    """``spark.stop()`` of an application that failed or was interrupted, whose driver JVM may be
    gone: a SIGTERM sent to the whole process group (systemd, a container's stop) ends the JVM
    too, and PySpark's stop then raised a Py4JError over the sweep's own message. False when the
    stop failed."""
    try:
        spark.stop()
    except Exception as exc:  # nothing left to stop  # noqa: BLE001
        log.debug("stopping the application failed: %s", exc)
        return False
    return True


def _wait_for_jvm_exit(timeout_s: float) -> None:
    """Wait for a driver JVM that is going away on its own (signalled with this process): its
    shutdown hooks still write, the listener's into the store it records to."""
    import subprocess

    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout_s)


def _jvm_started() -> bool:
    from pyspark import SparkContext

    return SparkContext._gateway is not None
