"""Run the real ``spark-submit`` with the sparkpredict listener attached.

No shell is involved: arguments go to the process as a list. The user's settings are read as
spark-submit reads them (``--conf``, then the properties files; :mod:`.submit_args`) and win
over ours; the jars, ``spark.extraListeners`` and ``spark.plugins`` are merged, not replaced.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..config import KEY_INPUT_BYTES, KEY_JOB, KEY_STORE, KEY_TASKS
from ..errors import InputError, ListenerError, StoreError, Terminated
from .listener import (
    EXECUTOR_CLASSPATH,
    check_jar_nameable,
    check_listener_settings,
    check_store_nameable,
    jvm_path_encoding,
    listener_conf,
    merged_classpath,
    merged_list,
)
from .submit_args import (
    KEY_DYNAMIC_MAX,
    _opt_value,
    _spark_conf,
    _split,
    _user_conf,
    check_deploy_mode,
    check_master,
    check_memory,
    driver_is_local,
    dynamic_allocation_master,
    local_executor_limit,
    local_master_for,
    runs_local,
    spark_submit_path,
    submit_store,
)

log = logging.getLogger(__name__)

#: A per-submit tag: the listener copies every spark.* property into properties_json, so the
#: runs this submit recorded are found exactly, even with other applications writing at once.
KEY_SUBMIT_ID = "spark.sparkpredict.submitId"


@dataclass
class SubmitResult:
    """What a submit did: spark-submit's exit code (128 + N when a signal N killed it, as a
    shell says it), the store, and the runs it recorded."""

    returncode: int
    store: str
    run_ids: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    #: the store's small batches merged after the run (:func:`~sparkpredict.store.compact.auto_compact`), else None
    compaction: Any = None
    #: each recorded run's final (status, error_message), after submit's correction of the
    #: status by spark-submit's exit code
    outcomes: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    #: the signal that killed spark-submit, else None: ``returncode`` 137 is SIGKILL only here,
    #: as an application's own exit status (System.exit(137), sys.exit(-1): 255) reads alike
    killed_by: int | None = None


#: Comma-separated settings where ours are added to the user's, not dropped for them.
MERGED_LISTS = ("spark.extraListeners", "spark.plugins")


def _merge_list(opts: list[str], cli: dict[str, str], user: dict[str, str], key: str, ours: str,
                merge: Callable[[str | None, str], str] = merged_list) -> list[str]:
    """``opts`` with ``key`` holding the user's classes plus ours (``merge``: a comma-separated
    list's, or another's). ``user`` is every setting spark-submit sees, ``cli`` the ``--conf``
    ones: a list from a properties file is outranked by an added ``--conf`` holding it merged,
    a ``--conf`` one is replaced where it stands."""
    merged = f"{key}={merge(user.get(key), ours)}"
    out = list(opts)
    for i, a in enumerate(out):
        if a in ("--conf", "-c") and i + 1 < len(out) and out[i + 1].startswith(key + "="):
            out[i + 1] = merged
        elif a.startswith(f"--conf={key}="):
            out[i] = f"--conf={merged}"
    if key not in cli:
        out += ["--conf", merged]
    return out


def _with_jars(opts: list[str], user: dict[str, str], jar: str) -> list[str]:
    """``opts`` with one ``--jars`` holding the user's jars and the listener's.

    spark-submit takes ``--jars`` when given and drops ``spark.jars`` then, wherever that was set
    (``--conf``, a properties file); so the user's jars are the list it would have used, and the
    listener's join them in the ``--jars`` that replaces it."""
    theirs = _opt_value(opts, "--jars")
    if theirs is None:
        theirs = user.get("spark.jars", "")
    return _set_option(opts, "--jars", merged_list(theirs, jar))


def _set_option(opts: list[str], name: str, value: str) -> list[str]:
    """``opts`` with ``name value``: every occurrence replaced (spark-submit takes the last),
    or the option added."""
    out = list(opts)
    found = False
    for i, a in enumerate(out):
        if a == name and i + 1 < len(out):
            out[i + 1] = value
            found = True
        elif a.startswith(name + "="):
            out[i] = f"{name}={value}"
            found = True
    return out if found else [*out, name, value]


def _set_master(opts: list[str], master: str) -> list[str]:
    """``opts`` with ``--master master`` (replacing the user's, or added: it outranks a
    ``spark.master`` set in --conf or spark-defaults.conf)."""
    return _set_option(opts, "--master", master)


def build_command(spark_submit_args: list[str], *, store: str | None = None, job: str | None = None,
                  executors: int | None = None, extra_conf: dict[str, str] | None = None,
                  submit_id: str | None = None) -> list[str]:
    """The spark-submit command line with the listener added (user values win).

    The user's settings are those spark-submit would run with: ``--conf``, then the properties
    files (``--properties-file``, ``spark-defaults.conf``; :mod:`.submit_args`). Jars,
    listeners and plugins are merged with ours. Where sparkpredict only has a default (the store
    when ``store`` is None, ``spark.sparkpredict.tasks``), a user's value from anywhere wins;
    what the caller asked for (``store``, ``job``, ``executors``, ``extra_conf``) outranks the
    properties files but not the user's own ``--conf``.
    """
    opts, app = _split(list(spark_submit_args))
    if not app:
        raise ListenerError("no application given to spark-submit",
                            "put the job after --, e.g. sparkpredict submit -- job.py ARGS")
    check_master(opts)
    check_deploy_mode(opts)
    check_memory(opts)
    cli = _user_conf(opts)
    user = _spark_conf(opts)
    check_listener_settings(user, "your --conf or properties file")
    ours = listener_conf(store=submit_store(opts, store), job=job)
    jar = ours.pop("spark.jars")
    ours.update(extra_conf or {})
    if submit_id:
        ours[KEY_SUBMIT_ID] = submit_id
    new_opts = _with_jars(opts, user, jar)
    # the executors' class path too: a script's own spark.jars would drop the jar (merged_classpath)
    new_opts = _merge_list(new_opts, cli, user, EXECUTOR_CLASSPATH, jar, merged_classpath)
    for key in MERGED_LISTS:
        if key in ours:
            new_opts = _merge_list(new_opts, cli, user, key, ours.pop(key))
    defaults = {KEY_TASKS} | ({KEY_STORE} if store is None else set())
    for k, v in ours.items():
        theirs = (user if k in defaults else cli).get(k)
        if theirs:  # an empty value: unset, for Spark's conf.get and the listener alike
            if theirs != v:
                log.info("keeping the user's %s=%s (sparkpredict would set %s)", k, theirs, v)
            continue
        new_opts += ["--conf", f"{k}={v}"]
    # an empty --conf spark.executor.instances= is unset, as submit's conflict check reads it
    # (the count was dropped while stderr said it applied)
    if executors is not None and _opt_value(opts, "--num-executors") is None \
            and not (cli.get("spark.executor.instances") or "").strip():
        # As a conf key rather than --num-executors: spark-submit drops that flag on local and
        # local-cluster masters, and the key means the same on YARN, Kubernetes and standalone.
        new_opts += ["--conf", f"spark.executor.instances={int(executors)}"]
        local = local_master_for(opts, int(executors))
        cores = _opt_value(opts, "--executor-cores")
        if local is not None:
            # a sweep refuses such a master: 12 one-core executor JVMs on 2 cores ran, and were
            # recorded as a 12-executor run
            most = local_executor_limit(opts)
            if int(executors) > most:
                raise InputError(f"--executors {int(executors)} would run {local.new} on this "
                                 f"{os.cpu_count() or 1}-core machine, and be recorded as {int(executors)} "
                                 "executors that shared its cores",
                                 f"use at most {most} executors with a local master, or submit to a cluster "
                                 "(--master)")
            new_opts = _set_master(new_opts, local.new)
        if cores and "spark.executor.cores" not in user and runs_local(opts):
            # spark-submit drops --executor-cores on local[N]: without the key the run's
            # local[E x C] read back as E x C one-core executors, not the E of C cores it was.
            # Not on local-cluster[N,C,M], whose workers have C cores: more per executor would
            # leave its executors unlaunched
            new_opts += ["--conf", f"spark.executor.cores={cores}"]
    bound = _whole((extra_conf or {}).get(KEY_DYNAMIC_MAX))
    if executors is None and bound is not None and not (cli.get(KEY_DYNAMIC_MAX) or "").strip():
        # dynamic allocation's upper bound (submit --executors auto) on a local-cluster master,
        # whose workers cap the executors: local-cluster[1,1,1024] had run 1 under maxExecutors=3
        local = dynamic_allocation_master(opts, bound)
        if local is not None:
            most = local_executor_limit(opts)
            if bound > most:
                raise InputError(f"{KEY_DYNAMIC_MAX}={bound} would run {local.new} on this "
                                 f"{os.cpu_count() or 1}-core machine, whose executors would share its cores",
                                 f"use at most {most} executors with a local-cluster master, or submit to a "
                                 "cluster (--master)")
            new_opts = _set_master(new_opts, local.new)
    return [str(spark_submit_path()), *new_opts, *app]


def _whole(value: Any) -> int | None:
    """A whole number of 1 or more given as text or a number, else None."""
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n >= 1 else None


def check_jvm_names(spark_submit_args: list[str], store: str) -> None:
    """Refuse a store or listener jar path the JVMs spark-submit starts would name otherwise
    than this Python, under their locale (:func:`~.listener.check_store_nameable`): the
    driver's, where it runs here, writes the store; spark-submit's own reads the jar, whatever
    the deploy mode."""
    encoding = jvm_path_encoding()
    if driver_is_local(spark_submit_args):
        check_store_nameable(store, encoding)
    check_jar_nameable(encoding)


def submit(spark_submit_args: list[str], *, store: str | None = None, job: str | None = None,
           executors: int | None = None, extra_conf: dict[str, str] | None = None,
           compact: bool = True) -> SubmitResult:
    """Run spark-submit with the listener; stream its output; return its exit code and runs.

    Parameters
    ----------
    spark_submit_args : list of str
        Everything you would pass to ``spark-submit`` (options, the application, its arguments).
    store, job : str, optional
        History store and job key. Default store: the user's ``spark.sparkpredict.store``
        (``--conf`` or a properties file), else the embedded one (:func:`submit_store`); default
        job: the user's ``spark.sparkpredict.job``, else the application name.
    executors : int, optional
        Sets ``spark.executor.instances`` unless the arguments already fix the executor count;
        on a local master also the master's thread or executor count (:func:`local_master_for`).
    extra_conf : dict, optional
        More ``--conf`` keys; the user's own ``--conf`` values win.
    compact : bool
        Once the run is recorded, merge the store's small batches when enough arrived since
        its last compaction (:func:`~sparkpredict.store.compact.auto_compact`: local stores,
        256 batches; a failure is a warning).

    Returns
    -------
    SubmitResult
        ``returncode`` of spark-submit, the store the run went to and the ``run_ids`` recorded.
        When spark-submit failed but the recorded run says running/succeeded (the driver's code
        raised after its last Spark job), a corrected run row with status ``failed`` is appended.

    Raises
    ------
    InputError
        ``store`` and the arguments' ``--conf spark.sparkpredict.store`` name different stores.
    """
    resolved = submit_store(spark_submit_args, store)
    check_jvm_names(spark_submit_args, resolved)
    submit_id = uuid.uuid4().hex
    cmd = build_command(spark_submit_args, store=store, job=job, executors=executors,
                        extra_conf=extra_conf, submit_id=submit_id)
    log.info("running %s", " ".join(cmd))
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", _python())
    # Its own process group: spark-submit's JVM and the Python driver it starts, which outlived
    # a JVM stopped alone (sleeping, it did not notice its JVM gone) and are stopped together.
    group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    proc = subprocess.Popen(cmd, env=env, **group)  # type: ignore[call-overload]  # output streams to ours
    try:
        with _stopped_by_signals():
            rc = proc.wait()
    except KeyboardInterrupt:  # Ctrl-C, or Terminated (SIGTERM, SIGHUP: a scheduler stopping us)
        _signal_group(proc, signal.SIGTERM)  # lets the listener record the run as killed
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            rc = proc.wait()
        raise
    finally:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
    outcomes: dict[str, tuple[str, str | None]] = {}
    run_ids = _record_outcome(resolved, submit_id, rc, outcomes)
    killed_by = -rc if rc < 0 else None
    if rc < 0:  # killed by a signal (Popen's -N): the shell's code, 128 + N (kill -9: 137, not 247)
        rc = 128 - rc
    compaction = None
    if compact and run_ids:
        from ..store.compact import auto_compact

        compaction = auto_compact(resolved)
    return SubmitResult(returncode=rc, store=resolved, run_ids=run_ids, command=cmd, compaction=compaction,
                        outcomes=outcomes, killed_by=killed_by)


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    """Send ``signum`` to spark-submit's process group (its own: see :func:`submit`)."""
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):  # the group is gone already
        pass


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` while spark-submit runs (their default
    ends this process at once, and the driver, re-parented, ran on and was recorded as
    succeeded). Only the main thread can set handlers: elsewhere nothing changes."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]
    before = {s: signal.signal(s, stop) for s in wanted}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _python() -> str:
    return sys.executable


def _record_outcome(store_path: str, submit_id: str, rc: int,
                    outcomes: dict[str, tuple[str, str | None]] | None = None) -> list[str]:
    """Find this submit's runs; mark them failed when spark-submit failed but they say otherwise.
    ``outcomes``, when given, is filled with each run's final (status, error_message)."""
    from .. import store as store_mod

    try:
        st = store_mod.open(store_path)
        runs = st.runs()
    except StoreError as exc:
        if "://" not in store_path and not os.path.exists(store_path):
            return []  # nothing was recorded, so no store was made: the caller says so
        log.warning("cannot read the store %s after the run: %s", store_path, exc)
        return []
    if runs.empty:
        return []
    mine = runs[runs["properties_json"].fillna("").str.contains(submit_id, regex=False)]
    run_ids = list(mine["run_id"])
    final = mine.set_index("run_id")[["status", "error_message"]].copy()
    if rc != 0:
        # A run still open failed with the script; a succeeded one only if it was the script's
        # last application (its code raised after the last job): one that ended before another
        # session began had finished, and a later failure is not its (it was marked failed too)
        last = mine["start_ms"].fillna(-1).idxmax() if len(mine) else None
        stale = mine[(mine["status"] == "running") | ((mine["status"] == "succeeded") & (mine.index == last))]
        if not stale.empty:
            fixed = stale.copy()
            now = int(time.time() * 1000)
            if rc < 0:
                try:
                    name = signal.Signals(-rc).name
                except ValueError:
                    name = f"signal {-rc}"
                fixed["status"] = "killed"
                why = f"spark-submit was killed by {name}"
            else:
                fixed["status"] = "failed"
                why = f"spark-submit exited with code {rc}"
            fixed["error_message"] = fixed["error_message"].fillna(why)
            fixed["updated_ms"] = [max(now, int(u) + 1) for u in stale["updated_ms"]]
            if fixed["end_ms"].isna().any():
                fixed.loc[fixed["end_ms"].isna(), "end_ms"] = now
            fixed["wall_ms"] = fixed["end_ms"] - fixed["start_ms"]
            st.append({"runs": fixed})
            final.update(fixed.set_index("run_id")[["status", "error_message"]])
            log.info("marked %s %s (%s)", ", ".join(fixed["run_id"]), fixed["status"].iloc[0], why)
    if outcomes is not None:
        for rid, status, message in final.itertuples():
            outcomes[rid] = (str(status), message if isinstance(message, str) else None)
    return run_ids


__all__ = [
    "KEY_INPUT_BYTES",
    "KEY_JOB",
    "KEY_SUBMIT_ID",
    "SubmitResult",
    "build_command",
    "submit",
    "submit_store",
]
