"""A spark-submit command line read as spark-submit reads it, before anything runs.

Where ``spark-submit`` is; which arguments are its options and which the application's; the
settings the run will have (``--conf`` over the properties files, ``spark-defaults.conf``
included); its master, and whether Spark would accept it; and the store its listener records
into. :mod:`sparkpredict.capture.submit` builds and runs the command from these; the advice
before a submit and the listener's own attach read them too.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from ..config import (
    KEY_STORE,
    LOCAL_CLUSTER_MASTER,
    LOCAL_MASTER,
    embedded_store,
    empty_local_master,
    resolve_store,
)
from ..errors import InputError, ListenerError
from .listener import pyspark_home
from .properties import read_properties

# spark-submit options that take a value (everything else before the app resource is a flag).
_VALUE_OPTS = {
    "--master", "--deploy-mode", "--class", "--name", "--jars", "--packages", "--exclude-packages",
    "--repositories", "--py-files", "--files", "--archives", "--conf", "-c", "--properties-file",
    "--driver-memory", "--driver-java-options", "--driver-library-path", "--driver-class-path",
    "--executor-memory", "--proxy-user", "--driver-cores", "--total-executor-cores",
    "--executor-cores", "--queue", "--num-executors", "--principal", "--keytab",
    "--extra-properties-file", "--remote", "--driver-default-class-path", "--kill", "--status",
}


# spark-submit's options that take no value
_FLAG_OPTS = {"--verbose", "-v", "--supervise", "--load-spark-defaults", "--version"}


def spark_submit_option(word: str) -> bool:
    """``word`` (before any ``=``) is one of spark-submit's options."""
    return word.split("=", 1)[0] in _VALUE_OPTS | _FLAG_OPTS


#: Primary resources that name no file: spark-submit's own (SparkSubmit.isShell, isInternal).
SPARK_RESOURCES = frozenset({"spark-shell", "pyspark-shell", "sparkr-shell", "connect-shell", "spark-internal"})

#: The master spark-submit runs on when none is set anywhere.
DEFAULT_MASTER = "local[*]"


class MasterChange(NamedTuple):
    """A local master rewritten to run the executor count asked for."""

    master: str   # the master spark-submit would have used
    source: str   # where it came from: "--master", "spark.master", "spark-defaults.conf", ...
    new: str      # the master the run gets


def spark_submit_path() -> Path:
    """``$SPARK_HOME/bin/spark-submit`` when SPARK_HOME is set, else the installed pyspark's."""
    home = os.environ.get("SPARK_HOME")
    candidates = [Path(home) / "bin" / "spark-submit"] if home else []
    candidates.append(pyspark_home() / "bin" / "spark-submit")
    for c in candidates:
        if c.is_file():
            return c
    raise ListenerError(f"no spark-submit found (looked at {', '.join(map(str, candidates))})",
                        "set SPARK_HOME to a Spark distribution, or reinstall pyspark")


def _split(args: list[str]) -> tuple[list[str], list[str]]:
    """(spark-submit options, application resource + its arguments)."""
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-"):
            return args[:i], args[i:]
        if a in _VALUE_OPTS:
            i += 2
        else:
            i += 1  # a flag, or --opt=value
    return args, []


def _user_conf(opts: list[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    i = 0
    while i < len(opts):
        a = opts[i]
        val = None
        if a in ("--conf", "-c") and i + 1 < len(opts):
            val = opts[i + 1]
            i += 1
        elif a.startswith("--conf="):
            val = a[len("--conf="):]
        if val is not None and "=" in val:
            k, v = val.split("=", 1)
            conf[k] = v
        i += 1
    return conf


def _opt_values(opts: list[str], name: str) -> list[str]:
    out = []
    for i, a in enumerate(opts):
        if a == name and i + 1 < len(opts):
            out.append(opts[i + 1])
        elif a.startswith(name + "="):
            out.append(a[len(name) + 1:])
    return out


def _opt_value(opts: list[str], name: str) -> str | None:
    """The option's value as spark-submit takes it: the last one given."""
    values = _opt_values(opts, name)
    return values[-1] if values else None


def _properties_files(opts: list[str]) -> list[str]:
    """The properties files spark-submit reads, the one that outranks the others first.

    ``--conf`` outranks them all; then each ``--extra-properties-file`` (a later one first),
    ``--properties-file``, and ``spark-defaults.conf`` in $SPARK_CONF_DIR or the Spark home's
    conf/, which Spark 4 skips when ``--properties-file`` is given without
    ``--load-spark-defaults``."""
    files = _opt_values(opts, "--extra-properties-file")[::-1]
    main = _opt_value(opts, "--properties-file")
    if main is not None:
        files.append(main)
    if main is None or "--load-spark-defaults" in opts:
        conf_dir = spark_conf_dir()
        if conf_dir is None:
            return files
        files.append(os.path.join(conf_dir, "spark-defaults.conf"))
    return files


def spark_conf_dir() -> str | None:
    """The folder spark-submit reads ``spark-env.sh`` and ``spark-defaults.conf`` from:
    ``$SPARK_CONF_DIR``, else the ``conf/`` of the Spark home it runs from (``$SPARK_HOME``, else
    the installed pyspark's folder: :func:`spark_submit_path`); None without a spark-submit."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir:  # an empty one is unset to spark-submit's shell script too
        return conf_dir
    try:
        return str(spark_submit_path().parent.parent / "conf")
    except ListenerError:
        return None


def _file_setting(opts: list[str], key: str) -> tuple[str, str] | None:
    """(value, file path) of ``key`` in the properties files spark-submit reads, else None."""
    for path in _properties_files(opts):
        value = read_properties(path).get(key)
        if value is not None:
            return value, path
    return None


def _spark_conf(opts: list[str]) -> dict[str, str]:
    """The Spark settings spark-submit will run with: the properties files under ``--conf``."""
    conf: dict[str, str] = {}
    for path in reversed(_properties_files(opts)):
        conf.update(read_properties(path))
    conf.update(_user_conf(opts))
    return conf


def cluster_store_setting() -> tuple[str, str] | None:
    """(``spark.sparkpredict.store``, the file) as an application with no setting of its own
    gets it from ``spark-defaults.conf`` ($SPARK_CONF_DIR, else the Spark home's conf/), else
    None: the store that readers given no ``--store`` read (:func:`sparkpredict.config.default_store`)."""
    found = _file_setting([], KEY_STORE)
    return found if found and found[0] else None  # the listener reads an empty value as none


def dynamic_allocation_enabled(spark_submit_args: list[str]) -> bool:
    """Whether the run will have dynamic allocation on (the user's arguments or properties files)."""
    opts, _ = _split(spark_submit_args)
    return _spark_conf(opts).get("spark.dynamicAllocation.enabled", "").strip().lower() == "true"


def submit_store(spark_submit_args: list[str], store: str | None = None) -> str:
    """The store (resolved, :func:`sparkpredict.config.resolve_store`) that the listener of a
    submit with these arguments records into, and that submit reads afterwards.

    ``store`` (``--store``) first, else ``spark.sparkpredict.store`` as spark-submit sees it
    (``--conf``, then the properties files: a cluster's ``spark-defaults.conf``), else the
    default store.

    Raises
    ------
    InputError
        ``store`` and the user's ``--conf spark.sparkpredict.store`` name different stores:
        which one the user meant is a guess either way.
    """
    opts, _ = _split(list(spark_submit_args))
    theirs = _user_conf(opts).get(KEY_STORE)
    if store is not None:
        resolved = resolve_store(store)
        other = resolve_store(theirs) if theirs else resolved
        # two spellings of one folder (a link on the way): the same store, written through either
        if other != resolved and ("://" in other or os.path.realpath(other) != os.path.realpath(resolved)):
            raise InputError(f"--store {store} and --conf {KEY_STORE}={theirs} name different stores",
                             f"give the store once: drop --conf {KEY_STORE}, or --store")
        return resolved
    if not theirs:  # the listener reads an empty value as none
        found = _file_setting(opts, KEY_STORE)
        theirs = found[0] if found else None
    # none in the files spark-submit reads: the listener's own default (not the cluster's
    # spark-defaults.conf that default_store reads, which a --properties-file leaves unread)
    return resolve_store(theirs or embedded_store())


def given_settings(spark_submit_args: list[str]) -> dict[str, tuple[str, str]]:
    """The settings the user's own spark-submit options give: ``{key: (value, as written)}``,
    each ``--conf`` (the last of a key) and ``--num-executors`` as ``spark.executor.instances``
    (spark-submit takes the option over the key). These outrank what submit adds
    (:func:`sparkpredict.capture.submit.build_command`); the properties files do not."""
    opts, _ = _split(list(spark_submit_args))
    given = {k: (v, f"--conf {k}={v}") for k, v in _user_conf(opts).items()}
    n = _opt_value(opts, "--num-executors")
    if n is not None:
        given["spark.executor.instances"] = (n, f"--num-executors {n}")
    return given


def deploy_mode(spark_submit_args: list[str]) -> tuple[str, str]:
    """(the deploy mode spark-submit will use, where it comes from), in spark-submit's order:
    ``--deploy-mode``, ``--conf spark.submit.deployMode``, the properties files
    (:func:`_properties_files`; the source is the file's name), ``$DEPLOY_MODE``, else ``client``."""
    return _submit_setting(spark_submit_args, "--deploy-mode", "spark.submit.deployMode", "DEPLOY_MODE", "client")


def driver_is_local(spark_submit_args: list[str]) -> bool:
    """Whether the run's driver, the listener's process, runs on this machine: not with
    ``--deploy-mode cluster`` (or ``spark.submit.deployMode=cluster``, ``$DEPLOY_MODE``:
    :func:`deploy_mode`), where a local store path names a folder on a cluster node."""
    return deploy_mode(spark_submit_args)[0].lower() != "cluster"


def check_deploy_mode(spark_submit_args: list[str]) -> None:
    """Raise InputError for the cluster deploy mode on a local or local-cluster master, which
    spark-submit refuses only after its JVM started ("Cluster deploy mode is not compatible with
    master \"local\""): the refusal then read as an application that failed before its
    session, after ``--executors auto`` had fitted its advice for nothing."""
    if driver_is_local(spark_submit_args) or not runs_on_this_machine(spark_submit_args):
        return
    master, source = effective_master(spark_submit_args)
    mode, mode_source = deploy_mode(spark_submit_args)
    given, drop = {"--deploy-mode": (f"--deploy-mode {mode}", f"drop --deploy-mode {mode}"),
                   "--conf spark.submit.deployMode": (f"--conf spark.submit.deployMode={mode}",
                                                      "drop --conf spark.submit.deployMode"),
                   "$DEPLOY_MODE": (f"$DEPLOY_MODE={mode}", "unset DEPLOY_MODE")}.get(
        mode_source, (f"spark.submit.deployMode={mode} ({mode_source})",
                      f"give --deploy-mode client (or drop spark.submit.deployMode from {mode_source})"))
    raise InputError(f"{given} is not compatible with the master {master!r} ({source}): a local "
                     "master runs its driver here, in the client deploy mode",
                     f"{drop} to run it here, or submit to a cluster's master (yarn, "
                     "spark://HOST:PORT, k8s://https://HOST:PORT)")


def effective_master(spark_submit_args: list[str]) -> tuple[str, str]:
    """(the master spark-submit will run on, where it comes from), in spark-submit's order:
    ``--master``, ``--conf spark.master``, the properties files (:func:`_properties_files`; the
    source is the file's name), $MASTER, else ``local[*]``."""
    return _submit_setting(spark_submit_args, "--master", "spark.master", "MASTER", DEFAULT_MASTER)


def _submit_setting(spark_submit_args: list[str], option: str, key: str, env: str,
                    default: str) -> tuple[str, str]:
    """(a setting's value, where it comes from) in the order spark-submit reads it: its
    ``option``, ``--conf key``, the properties files, ``$env``, else ``default``."""
    opts, _ = _split(list(spark_submit_args))
    value = _opt_value(opts, option)
    if value:
        return value.strip(), option
    value = _user_conf(opts).get(key)
    if value:
        return value.strip(), f"--conf {key}"
    found = _file_setting(opts, key)
    if found and found[0]:
        return found[0].strip(), os.path.basename(found[1])
    value = os.environ.get(env)
    if value:
        return value.strip(), f"${env}"
    return default, "spark-submit's default"


def _cores_given(opts: list[str], conf: dict[str, str] | None = None) -> str | None:
    """Cores per executor as the user's options give them: ``--executor-cores``, else
    ``spark.executor.cores`` (``--conf`` or a properties file; ``conf``: :func:`_spark_conf`'s,
    when the caller read it already)."""
    return _opt_value(opts, "--executor-cores") or (
        _spark_conf(opts) if conf is None else conf).get("spark.executor.cores")


def runs_local(spark_submit_args: list[str]) -> bool:
    """Whether the run's master (:func:`effective_master`) is ``local``/``local[N]``/``local[*]``:
    one driver JVM whose task threads are its executors (no dynamic allocation, and spark-submit
    drops ``--executor-cores``); not ``local-cluster``, which starts real executors."""
    return LOCAL_MASTER.fullmatch(effective_master(spark_submit_args)[0]) is not None


def runs_on_this_machine(spark_submit_args: list[str]) -> bool:
    """Whether the run's master is local or local-cluster: its executors share this machine's cores."""
    master = effective_master(spark_submit_args)[0]
    return bool(LOCAL_MASTER.fullmatch(master) or LOCAL_CLUSTER_MASTER.fullmatch(master))


def local_master_for(spark_submit_args: list[str], executors: int) -> MasterChange | None:
    """The local master that runs ``executors`` where the run's master (:func:`effective_master`)
    is a local one that would run another count, else None.

    ``local[N]`` runs one executor with N task threads and ignores spark.executor.instances;
    ``local-cluster[N,C,M]`` starts N executors whatever it says. A sweep records E executors as
    ``local[E x cores]`` or ``local-cluster[E,C,M]``; a count given to submit must become the
    master's too, or the run is recorded as E executors that ran on N. Without any master set,
    spark-submit runs ``local[*]``: that is rewritten too.
    """
    opts, _ = _split(list(spark_submit_args))
    master, source = effective_master(opts)
    cores = _cores_given(opts) or "1"
    try:
        slots = int(executors) * max(1, int(cores))
    except ValueError:  # spark-submit will say what is wrong with it
        return None
    m = LOCAL_MASTER.fullmatch(master)
    if m:
        new = f"local[{slots}" + (f",{m.group(2)}]" if m.group(2) else "]")
    else:
        m = LOCAL_CLUSTER_MASTER.fullmatch(master)
        new = f"local-cluster[{int(executors)},{m.group(2)},{m.group(3)}]" if m else master
    return None if new == master else MasterChange(master, source, new)


#: Dynamic allocation's upper bound, which ``submit --executors auto`` sets under it.
KEY_DYNAMIC_MAX = "spark.dynamicAllocation.maxExecutors"


#: The counts beside minExecutors that dynamic allocation starts from: Spark starts it at the
#: largest of the three (``Utils.getDynamicAllocationInitialExecutors``).
DYNAMIC_START_KEYS = ("spark.dynamicAllocation.initialExecutors", "spark.executor.instances")


def dynamic_allocation_starts(spark_submit_args: list[str]) -> list[tuple[str, int, str, bool]]:
    """``(key, count, where, own)`` of each of :data:`DYNAMIC_START_KEYS` the run will have: from
    the user's own arguments (``own``; ``where`` as written, ``--num-executors 50``), else from the
    properties files (``where``: ``key=value in FILE``). An empty or unreadable value is left out
    (empty is unset; Spark refuses a count that is no number by itself)."""
    opts, _ = _split(list(spark_submit_args))
    given = given_settings(spark_submit_args)
    out = []
    for key in DYNAMIC_START_KEYS:
        if key in given:  # the user's own, even empty, outranks the files
            value, where, own = given[key][0], given[key][1], True
        else:
            found = _file_setting(opts, key)
            if found is None:
                continue
            value, where, own = found[0], f"{key}={found[0].strip()} in {found[1]}", False
        try:
            n = int(value.strip())
        except ValueError:
            continue
        out.append((key, n, where, own))
    return out


def dynamic_allocation_master(spark_submit_args: list[str], max_executors: int) -> MasterChange | None:
    """The ``local-cluster`` master on which dynamic allocation can reach ``max_executors``,
    where the run's master is a local-cluster of another worker count and dynamic allocation is
    on; else None. Its N workers of C cores each start one executor of those cores, so
    dynamic allocation had at most N executors whatever maxExecutors said: submit gives it as
    many workers as the bound, as :func:`local_master_for` does for a fixed count."""
    opts, _ = _split(list(spark_submit_args))
    if not dynamic_allocation_enabled(opts) or not LOCAL_CLUSTER_MASTER.fullmatch(effective_master(opts)[0]):
        return None
    return local_master_for(opts, max_executors)


def local_executor_limit(spark_submit_args: list[str]) -> int:
    """The most executors a local or local-cluster master may run here, of the cores each gets
    (local-cluster[N,C,M]'s C, else --executor-cores or spark.executor.cores, else 1): a sweep's
    limit (:func:`sparkpredict.sweep_plan.most_local_executors`), and at least one."""
    from ..sweep_plan import most_local_executors

    opts, _ = _split(list(spark_submit_args))
    m = LOCAL_CLUSTER_MASTER.fullmatch(effective_master(opts)[0])
    given = m.group(2) if m else _cores_given(opts)
    return max(1, most_local_executors(int(given) if given and str(given).strip().isdigit() else 1))


def executor_shape(spark_submit_args: list[str]) -> tuple[int | None, int | None]:
    """(cores per executor, memory per executor in MiB) the user's spark-submit arguments ask
    for, None where they do not say (or say it in a form spark-submit will refuse itself): the
    advice of ``--executors auto`` is for executors of this shape. On a local master the
    memory is the driver's, which its task threads share (as the runs record it)."""
    from ..units import spark_size

    opts, _ = _split(list(spark_submit_args))
    conf = _spark_conf(opts)
    local = runs_local(opts)
    cores_text = _cores_given(opts, conf)
    mem_text = (_opt_value(opts, "--driver-memory") or conf.get("spark.driver.memory")) if local else \
        (_opt_value(opts, "--executor-memory") or conf.get("spark.executor.memory"))
    try:
        cores = int(cores_text) if cores_text else None
    except ValueError:
        cores = None
    size = spark_size(mem_text, "m") if mem_text else None
    mem = None if size is None else size // 2**20
    return (cores if cores and cores > 0 else None), (mem if mem and mem > 0 else None)


def check_application(spark_submit_args: list[str]) -> None:
    """Raise InputError for an application file that is not there, on a driver that runs here:
    spark-submit found out only after its JVM started, and the error read as a run that
    recorded nothing. A URI (``hdfs://``, ``local:``) or a cluster-mode driver's path is not
    looked at: it is read elsewhere. Nor are spark-submit's own resources (``spark-internal``,
    ``pyspark-shell``); any other name is a file, a jar whatever it ends with (``build/app``, not
    there, was "Failed to load class" after the JVM's start, exit 101)."""
    _, app = _split(spark_submit_args)
    if not app or not driver_is_local(spark_submit_args):
        return
    resource = app[0]
    if ":" in resource.split("/", 1)[0] or resource in SPARK_RESOURCES:
        return
    if not Path(resource).expanduser().is_file():
        raise InputError(f"the application {resource!r} is not a file here",
                         "give the path of your script or jar after -- (relative to the current "
                         f"folder, {os.getcwd()})")


def check_memory(spark_submit_args: list[str]) -> None:
    """Raise InputError for a driver or executor memory with a fraction (``--executor-memory
    1.5g``, or ``spark.executor.memory`` in ``--conf`` or a properties file), which spark-submit
    refuses only after its JVM started ("Executor memory must be a positive number"): with
    ``--executors auto`` after an advice fitted for executors of that size."""
    from ..units import spark_size, spark_size_has_fraction

    opts, _ = _split(list(spark_submit_args))
    conf = _spark_conf(opts)
    for option, key in (("--driver-memory", "spark.driver.memory"), ("--executor-memory", "spark.executor.memory")):
        given = _opt_value(opts, option)
        value, where = (given, f"{option} {given}") if given is not None else (conf.get(key), f"{key}={conf.get(key)}")
        if not spark_size_has_fraction(value):
            continue
        size = spark_size(value, "m") or 0
        whole = f"{size // 2**20}m" if size >= 2**20 else f"{max(1, size // 2**10)}k"
        example = f"{option} {whole}" if given is not None else f"{key}={whole}"
        raise InputError(f"{where} has a fraction, which Spark does not take (spark-submit would stop with "
                         f"\"{'Driver' if 'driver' in key else 'Executor'} memory must be a positive number\")",
                         f"give it as a whole number of a smaller unit, e.g. {example}")


def check_master(spark_submit_args: list[str]) -> None:
    """Raise InputError for a master (:func:`effective_master`) that Spark would refuse.

    spark-submit accepts ``yarn`` and masters starting with ``spark``, ``k8s`` or ``local``;
    a malformed local master (``local[x]``) passes it and fails later, inside the driver. Both
    would end in a JVM stack trace, after the JVM start."""
    master, source = effective_master(spark_submit_args)
    empty = empty_local_master(master)
    if empty:
        raise InputError(f"the master {master!r} ({source}) {empty[0]}", empty[1])
    if master == "yarn" or master.startswith(("spark", "k8s")) or LOCAL_MASTER.fullmatch(master) \
            or LOCAL_CLUSTER_MASTER.fullmatch(master):
        return
    raise InputError(f"the master {master!r} ({source}) is not one Spark accepts",
                     "use yarn, spark://HOST:PORT, k8s://https://HOST:PORT, local, local[N], local[*] "
                     "or local-cluster[EXECUTORS,CORES,MEMORY_MB]")


__all__ = [
    "DEFAULT_MASTER",
    "MasterChange",
    "check_deploy_mode",
    "check_master",
    "check_memory",
    "deploy_mode",
    "driver_is_local",
    "dynamic_allocation_enabled",
    "effective_master",
    "given_settings",
    "local_master_for",
    "spark_submit_path",
    "submit_store",
]
