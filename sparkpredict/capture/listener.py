"""Build the JVM listener jar and attach it to Spark applications.

The listener (Java source in ``listeners/``) is compiled with ``javac`` against the jars of
the installed pyspark, so it always matches the Spark it runs in. The jar is cached under
:func:`sparkpredict.config.cache_dir`, keyed by the source hash and the Spark version, and is
built on first use.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import (
    CACHE_ENV,
    HOST_PLUGIN_CLASS,
    KEY_INPUT_BYTES,
    KEY_JOB,
    KEY_STORE,
    KEY_TASKS,
    LISTENER_CLASS,
    cache_dir,
    cache_error,
    check_job_name,
    embedded_store,
    folder_problem,
    make_cache_dir,
    resolve_store,
)
from ..errors import InputError, ListenerError, StoreError
from ..units import declared_size, is_bool

log = logging.getLogger(__name__)

_REPO_SRC = Path(__file__).resolve().parents[2] / "listeners" / "src" / "main" / "java"
#: Where an installed (non-editable) package ships the Java source as package data.
_PKG_SRC = Path(__file__).resolve().parent / "listener_java"
SRC_ENV = "SPARKPREDICT_LISTENER_SRC"
#: The cluster template (spark-defaults lines, commented): a checkout's, and the installed copy.
_REPO_CONF = Path(__file__).resolve().parents[2] / "conf" / "spark-defaults.conf.sparkpredict"
_PKG_CONF = Path(__file__).resolve().parents[1] / "conf" / "spark-defaults.conf.sparkpredict"


def conf_template() -> str:
    """The commented cluster template, ``conf/spark-defaults.conf.sparkpredict`` (installed in
    the package as ``sparkpredict/conf/``): how to record every application of a cluster."""
    for p in (_PKG_CONF, _REPO_CONF):
        if p.is_file():
            return p.read_text(encoding="utf-8")
    raise ListenerError(f"the cluster template is missing (looked in {_PKG_CONF}, {_REPO_CONF})",
                        "reinstall sparkpredict")


def java_source_dir() -> Path:
    """The folder holding ``io/sparkpredict/*.java`` (env override, repo checkout, package data)."""
    candidates = [Path(os.environ[SRC_ENV])] if os.environ.get(SRC_ENV) else []
    # the installed copy first: beside an installed package, parents[2] is another project's folder
    candidates += [_PKG_SRC, _REPO_SRC]
    for c in candidates:
        if (c / "io" / "sparkpredict" / "SparkPredictListener.java").is_file():
            return c
    raise ListenerError(f"the listener's Java source is missing (looked in {', '.join(map(str, candidates))})",
                        "reinstall sparkpredict, or set SPARKPREDICT_LISTENER_SRC to listeners/src/main/java")


def pyspark_home() -> Path:
    """The installed pyspark's folder (holds ``jars/`` and ``bin/spark-submit``)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ListenerError("pyspark is not installed", "pip install 'pyspark>=4,<5'")
    home = Path(spec.origin).parent
    spark_home = os.environ.get("SPARK_HOME")
    if not home.is_dir() and spark_home and (Path(spark_home) / "jars").is_dir():
        # spark-submit puts $SPARK_HOME/python/lib/pyspark.zip first on PYTHONPATH: pyspark is
        # read from that zip, and the jars and bin/ are the Spark home's
        return Path(spark_home)
    return home


def spark_version() -> str:
    """Version of the installed pyspark (read without importing pyspark where it can be)."""
    ns: dict[str, Any] = {}
    try:
        text = (pyspark_home() / "version.py").read_text()
    except OSError:  # pyspark from a zip (spark-submit's): no file to read, so import it
        from pyspark.version import __version__

        return str(__version__)
    exec(text, ns)  # noqa: S102 - a one-line version file
    return str(ns["__version__"])


def _find_javac() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    found = shutil.which("javac")
    if found:
        return found
    raise ListenerError(
        "no Java compiler (javac) found: the sparkpredict listener is compiled on first use",
        "install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless) and put its bin/ on PATH "
        "or set JAVA_HOME")


def _source_hash(src: Path) -> tuple[str, list[Path]]:
    files = sorted(src.rglob("*.java"))
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(src).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    h.update(__version__.encode())
    return h.hexdigest()[:16], files


def build_listener(force: bool = False) -> Path:
    """Compile the listener against the installed pyspark and return the cached jar's path.

    Parameters
    ----------
    force : bool
        Rebuild even when a jar for this source and Spark version is cached.

    Returns
    -------
    pathlib.Path
        ``<cache_dir>/listener/sparkpredict-listener-<spark>-<hash>.jar``.

    Raises
    ------
    ListenerError
        No JDK, no pyspark, or the compiler failed (its output is in the message).
    InputError
        The cache folder (:func:`sparkpredict.config.cache_dir`) cannot be written.
    """
    src = java_source_dir()
    digest, files = _source_hash(src)
    spark = spark_version()
    out_dir = cache_dir() / "listener"
    jar = out_dir / f"sparkpredict-listener-{__version__}-spark{spark}-{digest}.jar"
    if jar.is_file() and not force:
        return jar
    make_cache_dir(out_dir)  # before javac runs: an unwritable cache would fail only at the jar
    javac = _find_javac()
    jars = pyspark_home() / "jars"
    if not jars.is_dir():
        raise ListenerError(f"pyspark at {jars.parent} has no jars/ folder", "reinstall pyspark from PyPI")
    with tempfile.TemporaryDirectory(prefix="sparkpredict-listener-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        cmd = [javac, "-nowarn", "-XDignore.symbol.file", "-encoding", "UTF-8", "-d", str(classes),
               "-cp", str(jars / "*"), *map(str, files)]
        log.info("building the sparkpredict listener for Spark %s: %s", spark, " ".join(cmd[:2]))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        except OSError as exc:
            raise ListenerError(f"cannot run {javac}: {exc}", "install a JDK 17+ and put javac on PATH") from exc
        if proc.returncode != 0:
            raise ListenerError(f"javac failed building the listener:\n{proc.stderr[-4000:]}",
                                "use a JDK 17+; if the source was edited, fix the reported error")
        props = (f"sparkpredict_version={__version__}\nspark_version={spark}\nsource_hash={digest}\n")
        (classes / "io" / "sparkpredict" / "build.properties").write_text(props)
        manifest = ("Manifest-Version: 1.0\n"
                    "Implementation-Title: sparkpredict-listener\n"
                    f"Implementation-Version: {__version__}\n"
                    f"Spark-Version: {spark}\n"
                    f"Source-Hash: {digest}\n\n")
        tmp_jar = out_dir / f".{jar.name}.{os.getpid()}.tmp"
        try:
            with zipfile.ZipFile(tmp_jar, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("META-INF/MANIFEST.MF", manifest)
                for f in sorted(classes.rglob("*")):
                    if f.is_file():
                        z.write(f, f.relative_to(classes).as_posix())
            os.replace(tmp_jar, jar)  # atomic: concurrent builders never see half a jar
        except OSError as exc:  # a full disk, a quota: the cache's, not the compiler's
            with contextlib.suppress(OSError):
                tmp_jar.unlink(missing_ok=True)
            raise cache_error(out_dir, exc.strerror or str(exc)) from None
    log.info("built %s", jar)
    return jar


def _store_uri(store: str) -> str:
    """Local paths become file: URIs so the JVM never resolves them against fs.defaultFS.

    Not ``Path.as_uri()``: it percent-encodes ("my runs" -> "my%20runs"), and Hadoop's Path
    keeps the escapes, so the listener would write into a folder Python never reads."""
    return store if "://" in store else "file://" + Path(store).absolute().as_posix()


def check_store(store: str) -> None:
    """Refuse, before Spark starts, a local store (resolved, :func:`resolve_store`) the listener
    could record nothing into: it would log its errors and the run would go unrecorded.

    The same refusals as a sweep's store (:meth:`sparkpredict.store.io.Store.init`): a file, a
    folder holding other things, a folder that cannot be made or written. Nothing is created:
    the listener makes the store with its first rows. A URI is left to the listener, whose file
    system (HDFS, S3) Python may not reach.

    Raises
    ------
    StoreError
        What is wrong with the path, and what to give instead.
    """
    if "://" in store:
        return
    from ..store.schema import MARKER_FILE, TABLES, holds_other_files

    p = Path(store)
    marked = (p / MARKER_FILE).is_file()
    if not marked:
        from ..store.io import enclosing_local_store, inside_store_error

        # first: a store's own table folder (store/runs) holds its Parquet files, which are
        # no other files of the user's
        outer = enclosing_local_store(store)
        if outer is not None:  # the listener would make a store there, as Store.init refuses to
            raise inside_store_error(store, outer)
    if p.is_dir():
        if marked:
            from ..store import io as store_io

            store_io.open(store)  # a damaged marker, a newer schema: refused as reading would
        else:
            try:
                # hidden names are other writers' temporary files, as the store itself reads them
                foreign = sorted(e.name for e in p.iterdir() if e.name not in TABLES and not e.name.startswith("."))
            except OSError as exc:
                raise StoreError(f"cannot read the store folder {store!r}: {exc.strerror or exc}",
                                 "choose a readable folder, or fix its permissions") from None
            if foreign:
                from ..store.io import store_below_hint

                raise StoreError(f"folder {store!r} is not a sparkpredict store: {holds_other_files(foreign)}",
                                 "give the store's folder (--store, spark.sparkpredict.store; store= from Python), "
                                 "or an empty or new folder for a new store" + store_below_hint(store))
    problem = folder_problem(p)
    if problem == "it is a file":
        raise StoreError(f"store path {store!r} is a file", "give a folder path for the store")
    if problem:
        in_the_way = problem.endswith(("is a file", "is not a folder"))
        raise StoreError(f"cannot write to store {store!r}: {problem}",
                         "give a store path under a folder, not under a file" if in_the_way
                         else "choose a writable folder, or fix its permissions")


def jvm_path_encoding(env: Any = None) -> str | None:
    """The charset a JVM started with the environment ``env`` (default this process's) names
    files in: its ``sun.jnu.encoding``, which follows the locale (LC_ALL, else LC_CTYPE, else
    LANG); None where the locale names no charset that can be told from its name."""
    import codecs

    if sys.platform == "darwin":  # the JDK names files in UTF-8 there whatever the locale
        return "utf-8"
    e = os.environ if env is None else env
    name = next((e[k] for k in ("LC_ALL", "LC_CTYPE", "LANG") if e.get(k)), "")
    if name in ("", "C", "POSIX"):
        return "ascii"
    if "." not in name:
        return None
    try:
        return codecs.lookup(name.split(".", 1)[1].split("@", 1)[0]).name
    except LookupError:
        return None


def check_store_nameable(store: str, jvm_encoding: str | None) -> None:
    """Refuse a local store whose path the JVM, naming files in ``jvm_encoding``, would write
    as another folder than this Python reads.

    Under LC_ALL=C (a cron job's or a container's locale) the JVM names files in ASCII while
    Python (in its UTF-8 mode) names them in UTF-8: the listener recorded the runs of a store
    ``/data/ünï`` into a folder ``/data/?n?``, and every reader found no store.

    Raises
    ------
    StoreError
        The path holds characters that the JVM's charset would write otherwise.
    """
    if "://" in store or _jvm_names_alike(store, jvm_encoding):
        return
    raise StoreError(
        f"the store path {store!r} holds characters that the Spark JVM, naming files in "
        f"{jvm_encoding} under this locale, would write as another folder than Python "
        f"({sys.getfilesystemencoding()}) reads",
        "run under a UTF-8 locale (export LC_ALL=C.UTF-8), or give a store path of ASCII letters")


def check_jar_nameable(jvm_encoding: str | None) -> None:
    """Refuse a listener jar cache (:func:`sparkpredict.config.cache_dir`, under ``$HOME`` by
    default) whose path the JVM, naming files in ``jvm_encoding``, cannot open: under LC_ALL=C
    with a home ``/home/jürgen`` Spark looked for ``/home/j?rgen/.../listener.jar``, skipped it
    and failed to start with ClassNotFoundException for the listener's plugin, a Py4J traceback.

    Raises
    ------
    ListenerError
        The cache's path holds characters that the JVM's charset would read otherwise.
    """
    cache = str(cache_dir())
    if _jvm_names_alike(cache, jvm_encoding):
        return
    raise ListenerError(
        f"the listener jar's folder {cache!r} holds characters that the Spark JVM, naming files in "
        f"{jvm_encoding} under this locale, cannot open: Spark would start without the listener's "
        "jar and fail",
        f"run under a UTF-8 locale (export LC_ALL=C.UTF-8), or set ${CACHE_ENV} to a folder of ASCII letters "
        f"(e.g. export {CACHE_ENV}=/tmp/sparkpredict-cache)")


def _jvm_names_alike(path: str, jvm_encoding: str | None) -> bool:
    """Whether a JVM naming files in ``jvm_encoding`` names ``path`` as this Python does
    (True where that cannot be told: no charset, or one Python does not know)."""
    if jvm_encoding is None:
        return True
    try:
        return path.encode(jvm_encoding) == os.fsencode(path)
    except UnicodeError:
        return False
    except LookupError:
        return True


#: The listener's tuning settings: (what each takes, its default), as ListenerSettings reads them.
_KNOBS = {
    "tasks": ("true or false", "true"),
    "flushEveryStages": ("a whole number, 0 or more", "0"),
    "flushEveryTasks": ("a whole number, 0 or more", "50000"),
    "flushIntervalMs": ("milliseconds, or a duration such as 500ms, 5s or 2min", "5000"),
    "stopTimeoutMs": ("milliseconds, or a duration such as 500ms, 5s or 2min", "60000"),
    "hostSampleIntervalMs": ("milliseconds, or a duration such as 500ms, 5s or 2min", "1000"),
}
# Spark's own duration strings (JavaUtils.timeStringAsMs): a bare number is milliseconds
_DURATION = re.compile(r"[0-9]+(us|ms|s|m|min|h|d)?", re.IGNORECASE)


def check_listener_settings(conf: dict[str, str], where: str) -> None:
    """Refuse a listener tuning setting of ``conf`` that the listener could not read (it would
    log the error in the driver's log and use the default): said before the run instead.
    ``where``: how the user gave the settings, for the fix.

    Raises
    ------
    InputError
        ``spark.sparkpredict.flushIntervalMs=soon``, ``tasks=yes``, ``flushEveryTasks=-1``,
        ``inputBytes=lots``, ...
    """
    for name, (takes, default) in _KNOBS.items():
        value = conf.get(f"spark.sparkpredict.{name}")
        v = "" if value is None else value.strip()
        if not v:
            continue
        if name == "tasks":
            ok = v.lower() in ("true", "false")
        elif name.endswith("Ms"):
            ok = _DURATION.fullmatch(v) is not None
        else:
            ok = v.isdigit()
        if not ok:
            raise InputError(f"spark.sparkpredict.{name}={value} is not {takes}",
                             f"fix it in {where}, or leave it out (default {default})")
    # the declared size too: the listener logged `inputBytes=lots` (or 0) and recorded the
    # measured input, so the run the advice learns from was not of the size its submitter gave
    value = conf.get(KEY_INPUT_BYTES)
    if value is not None and value.strip() and declared_size(value.strip()) is None:
        raise InputError(f"{KEY_INPUT_BYTES}={value} is not a size above zero",
                         f"fix it in {where}: a size such as 300GB, 1.5TiB or 120g (120 GiB), or bytes; or "
                         "leave it out (default: the input the run measures)")


def listener_conf(store: str | None = None, job: str | None = None, tasks: bool = True,
                  input_bytes: int | str | None = None, jar: str | None = None) -> dict[str, str]:
    """Spark settings that load and configure the listener (builds the jar if needed).

    Parameters
    ----------
    store : str, optional
        Store path or URI; default the embedded local store (:func:`sparkpredict.config.default_store`).
    job : str, optional
        Job key grouping runs of the same job; default the application name.
    tasks : bool
        Record one row per task (stage rows are recorded either way).
    input_bytes : int or str, optional
        Declared input size of the run, instead of the measured one (the bytes its stages read):
        bytes, or a size such as ``"300GB"`` or ``"1.5TiB"`` (:func:`sparkpredict.units.parse_bytes`).
    jar : str, optional
        Where every driver reads the listener jar (``hdfs:///apps/sparkpredict/listener.jar``,
        a path present on every node): a cluster's copy of the jar built here. Default: the jar
        built here (built if needed).

    Raises
    ------
    InputError
        ``input_bytes`` is not a size, or not above zero.
    StoreError
        ``store`` is a local file: the listener, which never throws into Spark, could only log
        that it recorded nothing.
    """
    declared = None if input_bytes is None else _input_bytes(input_bytes)  # before the jar's build
    if not is_bool(tasks):  # numpy's bools pass; 1, "false" and arrays do not
        # tasks="false" is a true string: it recorded every task
        raise InputError(f"tasks must be True or False, got {tasks!r}",
                         "pass tasks=False to record no task rows (stage rows are recorded either way)")
    check_job_name(job, "give the name to record the runs under, e.g. nightly-etl (leave it out "
                        "for each application's name)")
    path = resolve_store(store)
    if "://" not in path and Path(path).is_file():
        raise StoreError(f"store path {path!r} is a file", "give a folder path for the store")
    if jar is not None and not str(jar).strip():
        raise InputError("the listener jar's location is empty", "give where every driver reads the jar, "
                         "e.g. hdfs:///apps/sparkpredict/sparkpredict-listener.jar")
    if jar is not None and "," in str(jar):
        # spark.jars is a comma-separated list: Spark would load two jars, neither of them this one
        raise InputError(f"the listener jar's location {str(jar).strip()!r} holds a comma, which spark.jars "
                         "reads as a list of two jars",
                         "copy the jar to a path without a comma and give that")
    conf = {
        "spark.jars": str(jar).strip() if jar is not None else str(build_listener()),
        "spark.extraListeners": LISTENER_CLASS,
        "spark.plugins": HOST_PLUGIN_CLASS,
        KEY_STORE: _store_uri(path),
        KEY_TASKS: "true" if tasks else "false",
    }
    if job:
        conf[KEY_JOB] = job
    if declared is not None:
        conf[KEY_INPUT_BYTES] = str(declared)
    return conf


def _input_bytes(value: object) -> int:
    """``input_bytes=`` as whole bytes: a number of bytes or a size such as ``300GB`` or
    ``1.5TiB``, read as ``--input-size`` reads it (:func:`sparkpredict.units.parse_bytes`). Whole
    bytes, so that the listener's reading of ``spark.sparkpredict.inputBytes`` cannot differ."""
    from ..units import parse_user_bytes

    try:
        return parse_user_bytes(value if isinstance(value, (int, float)) else str(value))
    except InputError as exc:
        raise InputError(f"input_bytes={value!r}: {exc.message}",
                         "give input_bytes= the run's input size above zero, in bytes or with a "
                         "unit, e.g. input_bytes='300GB'") from None


def _jvm_has_listener(jvm: Any) -> bool:
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader.loadClass(LISTENER_CLASS)
        return True
    except Exception:  # py4j raises Py4JJavaError / Py4JError for a missing class  # noqa: BLE001
        return False


#: Comma-separated settings where the listener's entries join the user's instead of replacing them.
MERGED_KEYS = ("spark.jars", "spark.extraListeners", "spark.plugins")


def _submit_args() -> list[str]:
    """``$PYSPARK_SUBMIT_ARGS``, the spark-submit options PySpark launches its JVM with."""
    import shlex

    try:
        return shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    except ValueError:  # PySpark itself will fail on it, with its own message
        return []


def _launch_settings() -> dict[str, str]:
    """The settings the spark-submit that PySpark launches reads beside the builder's: the
    properties files (``spark-defaults.conf`` in $SPARK_CONF_DIR or the Spark home's conf/, or
    a ``--properties-file``) under the ``--conf`` of ``$PYSPARK_SUBMIT_ARGS``, and its
    ``--jars``, which spark-submit takes over any ``spark.jars``."""
    from .submit_args import _opt_value, _spark_conf, _split

    opts, _ = _split(_submit_args())  # what follows pyspark-shell is no option of spark-submit
    settings = _spark_conf(opts)
    jars = _opt_value(opts, "--jars")
    if jars is not None:
        settings["spark.jars"] = jars
    return settings


def _jars_into_submit_args(jars: str) -> None:
    """Make every list of jars in ``$PYSPARK_SUBMIT_ARGS`` (``--jars``, ``--conf spark.jars``)
    hold ``jars`` too.

    spark-submit puts the jars on the driver's classpath before the builder's settings reach
    Spark, and takes them from its ``--jars``, else from the last ``--conf spark.jars``.
    PySpark hands it the builder's settings as ``--conf`` *before* $PYSPARK_SUBMIT_ARGS, so a
    ``--jars`` there (a notebook's usual way to add jars), or a ``--conf spark.jars``, would
    leave the listener's jar off the classpath, and Spark would fail to load its class."""
    import shlex

    from .submit import _merge_list, _set_option
    from .submit_args import _opt_value, _split, _user_conf

    args = _submit_args()
    opts, app = _split(args)
    new = list(opts)
    given = _opt_value(opts, "--jars")
    if given is not None:  # its own jars first, as spark-submit would have taken them
        new = _set_option(new, "--jars", merged_list(given, jars))
    conf = _user_conf(opts)
    if "spark.jars" in conf:  # each --conf spark.jars becomes the last one's jars and ours
        new = _merge_list(new, conf, conf, "spark.jars", jars)
    if new != opts:
        os.environ["PYSPARK_SUBMIT_ARGS"] = shlex.join([*new, *app])


def merged_list(theirs: str | None, ours: str) -> str:
    """A comma-separated Spark list (jars, listener or plugin classes): the user's entries, then
    ours that are not among them."""
    items = [x.strip() for x in (theirs or "").split(",") if x.strip()]
    have = {_local_jar(x) for x in items}
    return ",".join(items + [x for x in ours.split(",") if _local_jar(x) not in have])


def _local_jar(entry: str) -> str:
    """A list entry as compared: a jar's ``file:///p`` (how a started JVM holds spark.jars) is ``/p``."""
    return re.sub(r"^file:(//(localhost)?)?(?=/)", "", entry)


#: Where a driver puts the listener jar for its executors besides spark.jars (see :func:`merged_classpath`).
EXECUTOR_CLASSPATH = "spark.executor.extraClassPath"


def merged_classpath(theirs: str | None, ours: str) -> str:
    """A Java class path (``spark.executor.extraClassPath``): the user's entries, then ours.

    The listener's jar goes there as well as into ``spark.jars``: an application that sets
    ``spark.jars`` itself (in its builder, after ``attach`` or under ``submit``) replaces the
    list executors fetch, and an executor then cannot load the plugin ``spark.plugins`` names:
    it fails to start, again and again. The class path holds wherever the jar's path exists on
    the executors' hosts (local-cluster, a shared mount); a missing entry is ignored."""
    items = [x for x in (theirs or "").split(os.pathsep) if x]
    return os.pathsep.join(items + [x for x in ours.split(os.pathsep) if x and x not in items])


def _refuse_connect(settings: dict[str, str]) -> None:
    """A builder for Spark Connect (``.remote(URL)``, ``$SPARK_REMOTE``, ``spark.api.mode=connect``)
    runs no driver in this process: settings for the listener go to a server that has started
    (accepted with a UserWarning, and nothing recorded). A local one (``remote("local[2]")``)
    starts its server here, and records, but sets its own ``spark.plugins``."""
    remote = (settings.get("spark.remote") or os.environ.get("SPARK_REMOTE") or "").strip()
    if not remote and settings.get("spark.api.mode", "").strip().lower() == "connect":
        remote = settings.get("spark.master", "local")
    if not remote:
        return
    if remote.startswith("sc://"):
        raise ListenerError(
            f"the builder connects to the Spark Connect server {remote}, whose driver runs there: a "
            "client cannot add the sparkpredict listener to it, and nothing would be recorded",
            "start the Connect server with the settings `sparkpredict listener conf` prints (in its "
            "spark-defaults.conf, or start-connect-server.sh --conf ...), then leave attach() out; "
            "or use a classic session (SparkSession.builder without .remote())")
    log.warning("a local Spark Connect session (%s): its runs are recorded, but its server replaces "
                "spark.plugins, so no host samples (which the slowdown monitor reads) are; a classic "
                "session (without .remote()) records them", remote)


def attach(builder: Any, store: str | None = None, job: str | None = None, tasks: bool = True,
           input_bytes: int | str | None = None, compact: bool = True) -> Any:
    """Configure a ``SparkSession.builder`` to record the application; returns the builder.

    Must run before the first SparkSession of the Python process: Spark reads ``spark.jars``
    only when its JVM starts.

    Without ``store``, the store is the ``spark.sparkpredict.store`` that the builder or
    ``spark-defaults.conf`` sets (a cluster set up with ``conf/spark-defaults.conf.sparkpredict``),
    else the default one. In a script that spark-submit runs (``sparkpredict submit``), the store,
    job and input size left out are those spark-submit was given.

    The listener's jar, listener and plugin are added to the ``spark.jars``,
    ``spark.extraListeners`` and ``spark.plugins`` the application would have had without it:
    those set on ``builder`` so far, else those of ``spark-defaults.conf`` (and of
    ``$PYSPARK_SUBMIT_ARGS``), as spark-submit would take them. A list set on the builder
    after ``attach`` replaces the merged one, as any later ``config`` does. A ``--jars`` in
    ``$PYSPARK_SUBMIT_ARGS`` would outrank the merged ``spark.jars``, so ``attach`` sets it to the
    merged list in this process's environment.

    With ``compact`` (the default), a local store that received
    :data:`sparkpredict.store.compact.AUTO_BATCHES` small batches since its last compaction is
    compacted first, as ``sparkpredict submit`` does after its run: the listener writes one
    batch per run, and a store nothing compacts grows slow to read. That takes about a second,
    once per 256 runs, before the session starts; otherwise a few milliseconds. It never waits
    for another writer and never fails the attach (a failure is logged as a warning).

    Examples
    --------
    >>> from pyspark.sql import SparkSession
    >>> import sparkpredict
    >>> spark = sparkpredict.attach(SparkSession.builder.appName("etl"), job="nightly-etl").getOrCreate()

    Raises
    ------
    ListenerError
        A JVM already runs in this process without the listener on its classpath.
    StoreError
        The store is one the listener could record nothing into (:func:`check_store`).
    InputError
        ``builder`` is no ``SparkSession.builder`` (it has no ``config``), or ``compact`` is not
        True or False.
    """
    from pyspark import SparkContext

    if not is_bool(compact):
        raise InputError(f"compact must be True or False, got {compact!r}",
                         "pass compact=False to leave the store's small batches for `sparkpredict store compact`")

    # What the builder holds (pyspark 4 keeps it in _options) outranks the files, as the
    # builder's --conf outranks spark-defaults.conf in the spark-submit PySpark launches.
    theirs = _launch_settings()
    options = getattr(builder, "_options", None)
    options = {k: str(v) for k, v in (options if isinstance(options, dict) else {}).items()}
    theirs.update(options)
    _refuse_connect(theirs)
    check_listener_settings(theirs, "the builder's .config() or spark-defaults.conf")
    # Under spark-submit (`sparkpredict submit --store S --job J --input-size SIZE`, or a
    # cluster's listener settings) its JVM started first, with what it was given as system
    # properties: those are what an argument left out defaults to, after the builder's own.
    submitted = _submitted_settings(options)
    if store is None:  # a cluster's spark-defaults.conf names the store its runs go to
        # none: the listener's own default (theirs already holds what the files say)
        store = (options.get(KEY_STORE, "").strip() or submitted.get(KEY_STORE)
                 or theirs.get(KEY_STORE, "").strip() or embedded_store())
    # the driver is this process: a store it cannot write is said now, not in the driver's log
    resolved = resolve_store(store)
    check_store(resolved)
    encoding = _started_jvm_encoding() or jvm_path_encoding()
    check_store_nameable(resolved, encoding)
    check_jar_nameable(encoding)  # before listener_conf builds the jar there
    if input_bytes is not None:
        _input_bytes(input_bytes)  # the arguments first, as listener_conf checks them, then the builder
    # attach(None) was an AttributeError at the end; the class SparkSession.Builder has a config
    # function too, which then ran with the key as its self
    if isinstance(builder, type) or not callable(getattr(builder, "config", None)):
        raise InputError(f"attach() takes a SparkSession builder, got {builder!r}",
                         "pass SparkSession.builder (before getOrCreate()), e.g. "
                         "sparkpredict.attach(SparkSession.builder, job='nightly-etl').getOrCreate()")
    conf = listener_conf(store=store, job=job, tasks=tasks, input_bytes=input_bytes)
    under_submit = bool(os.environ.get("PYSPARK_GATEWAY_PORT")) and getattr(SparkContext, "_gateway", None) is None
    if under_submit:
        # a script that spark-submit runs: its JVM started before this Python did, with the
        # jars and listeners spark-submit was given; ask that JVM (no new one starts)
        SparkContext._ensure_initialized()
    jvm = getattr(SparkContext, "_jvm", None)
    if jvm is not None or getattr(SparkContext, "_gateway", None) is not None:
        if jvm is None or not _jvm_has_listener(jvm):
            if os.environ.get("PYSPARK_GATEWAY_PORT"):
                raise ListenerError(
                    "this script runs under spark-submit, whose JVM started before the script without "
                    "the sparkpredict listener, and Spark reads spark.jars only when its JVM starts",
                    "submit it with `sparkpredict submit -- <your spark-submit arguments>`, or give "
                    "spark-submit the settings `sparkpredict listener conf` prints (as --conf, or in "
                    "spark-defaults.conf)")
            raise ListenerError(
                "a Spark JVM is already running in this Python process, and Spark reads spark.jars "
                "only when its JVM starts, so the sparkpredict listener can no longer be added",
                "call sparkpredict.attach(SparkSession.builder, ...) before the first SparkSession is "
                "created, or restart Python (in notebooks: restart the kernel)")
        # The JVM's system properties hold the lists the running JVM was started with (the
        # first session's, spark-submit's): the next SparkConf reads them, so they are the
        # user's lists to join, unless the builder sets its own.
        for k in (*MERGED_KEYS, EXECUTOR_CLASSPATH):
            started = jvm.java.lang.System.getProperty(k)
            if k in options or not started:
                continue
            # the JVM's lists hold the files' (read when it started) and ours (an earlier
            # attach); only the user's entries beyond them are added
            sep = os.pathsep if k == EXECUTOR_CLASSPATH else ","
            mine = {_local_jar(x) for x in conf["spark.jars" if k == EXECUTOR_CLASSPATH else k].split(",")}
            extra = [x for x in str(started).split(sep) if x.strip() and _local_jar(x.strip()) not in mine]
            if extra:
                join = merged_classpath if k == EXECUTOR_CLASSPATH else merged_list
                theirs[k] = join(theirs.get(k), sep.join(extra))
        active = SparkContext._active_spark_context
        if active is not None:
            log.warning("a SparkContext is running; the listener records the next application only "
                        "(stop the running session first)")
        # The first session's settings became the JVM's system properties, which every later
        # SparkConf of the process reads: unless set again here, this session would be recorded
        # under that session's job and declared input size. Empty reads as not given. Under
        # spark-submit those properties are spark-submit's, what the run was submitted with
        # (`sparkpredict submit --job J --input-size SIZE`): they stay, unless given here.
        for key in (KEY_JOB, KEY_INPUT_BYTES):
            if key not in options:
                conf.setdefault(key, submitted.get(key, ""))
    conf[EXECUTOR_CLASSPATH] = merged_classpath(theirs.get(EXECUTOR_CLASSPATH), conf["spark.jars"])
    for k in MERGED_KEYS:
        conf[k] = merged_list(theirs.get(k), conf[k])
    _jars_into_submit_args(conf["spark.jars"])
    for k, v in conf.items():
        builder = builder.config(k, v)
    if compact:
        _compact_before_run(resolve_store(store))
    _record_at_exit()
    _record_raised_at_stop(SparkContext)
    return builder


def _started_jvm_encoding() -> str | None:
    """The running Spark JVM's file-name charset (it names the store's files), if one runs."""
    from pyspark import SparkContext

    jvm = getattr(SparkContext, "_jvm", None)
    if jvm is None:
        return None
    try:
        return str(jvm.java.lang.System.getProperty("sun.jnu.encoding"))
    except Exception:  # noqa: BLE001 - a gateway gone: the environment's locale then
        return None


def _submitted_settings(options: dict[str, str]) -> dict[str, str]:
    """The store, job and declared input size that the spark-submit running this script was
    given (its JVM's system properties), when it runs one: ``PYSPARK_GATEWAY_PORT`` is set only
    in a Python that a JVM started. ``{}`` otherwise, or where the builder sets them itself.

    Before, ``attach()`` in a script that ``sparkpredict submit --store S --job J --input-size
    SIZE`` ran set the default store, the app name and no size over them: the run went to
    another store, under another job, its size measured, and submit said no run was recorded."""
    keys = [k for k in (KEY_STORE, KEY_JOB, KEY_INPUT_BYTES) if k not in options]
    if not os.environ.get("PYSPARK_GATEWAY_PORT") or not keys:
        return {}
    from pyspark import SparkContext

    SparkContext._ensure_initialized()
    jvm = getattr(SparkContext, "_jvm", None)
    if jvm is None:
        return {}
    out = {}
    for k in keys:
        v = jvm.java.lang.System.getProperty(k)
        if v is not None and str(v).strip():
            out[k] = str(v).strip()
    return out


#: The longest exception text the run's error_message keeps.
RAISED_CHARS = 500


def _record_at_exit() -> None:
    """At the exit of this Python process (registered once per process): tell the listener of
    an exception the driver's code left uncaught, then stop a context still running.

    A Python driver's end otherwise reads exit code 0 to the JVM: the context stops from
    Spark's shutdown hook as the JVM follows Python out. A script that raised after its last
    job, its output half written, was recorded as a succeeded run of a shorter runtime, and
    trained the models as one; the run is now failed (KeyboardInterrupt: killed) with the
    exception's text. The exception is the one Python itself reports as uncaught
    (``sys.last_exc``/``sys.last_value``, set only for the top level), not what a handler
    passed to ``sys.excepthook`` (a thread's error forwarded by a logging setup, which the
    script survived). An interactive interpreter sets it for every statement that raises and
    goes on, so there nothing is told.

    The stop, as pyspark's own shell does at exit: the JVM would stop the context on its way
    down, after Python exited, so ``python job.py && sparkpredict suggest ...`` could ask before
    the run was in the store. atexit runs the handlers registered after this one first, and
    those registered before it (before ``attach``) after it, when the session has stopped.

    Only in this process: a child of ``os.fork()`` inherits the handler and the parent's py4j
    connection, and stopped the parent's context as it exited."""
    import atexit

    global _EXIT_PID
    if _EXIT_PID is not None:
        return
    _EXIT_PID = os.getpid()
    atexit.register(_stop_at_exit)


#: The process that registered :func:`_stop_at_exit`; None until ``attach`` did.
_EXIT_PID: int | None = None


def _stop_at_exit() -> None:
    import sys

    if os.getpid() != _EXIT_PID:
        return  # a forked child: the context is its parent's
    pyspark = sys.modules.get("pyspark")
    try:
        sc = pyspark.SparkContext._active_spark_context if pyspark is not None else None
        if sc is None:
            return
        raised = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if raised is not None and not hasattr(sys, "ps1") and not sys.flags.interactive:
            _tell_listener_raised(sc, raised)
        sc.stop()  # returns once the listener stored the run (or its stopTimeoutMs passed)
    except Exception as exc:  # a JVM already gone: it stopped the context itself  # noqa: BLE001
        log.debug("stopping the context at exit: %s", exc)


def _record_raised_at_stop(context_class: Any) -> None:
    """Make ``SparkContext.stop`` tell the listener of an exception on its way out (once per
    process).

    A script that stops its session itself as an exception leaves (``try: ... finally:
    spark.stop()``, ``with SparkSession...``, an ``except`` that stops and re-raises or calls
    ``sys.exit(1)``) ended its application before the exception reached the top, where the
    exit handler looks: the run was recorded ``succeeded``, of a shorter runtime, and trained
    the models as a whole run. The exception is still in flight when ``stop`` runs
    (``sys.exc_info()`` holds it in a ``finally``, an ``__exit__`` and an ``except``), so
    :func:`_in_flight` reads it there. SparkSession.stop and its ``__exit__`` end in this
    function too.

    An exception already in flight as the context started is not its application's failure (a
    retry started inside the ``except`` of the attempt that failed), so ``__init__`` keeps it
    to compare. Never raises into the caller, and the stop always runs."""
    import functools
    import sys

    original = context_class.stop
    if getattr(original, "_sparkpredict_raised", False):
        return
    original_init = context_class.__init__

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self._sparkpredict_before = sys.exc_info()[1]
        original_init(self, *args, **kwargs)

    @functools.wraps(original)
    def stop(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            value = _in_flight()
            if (value is not None and value is not getattr(self, "_sparkpredict_before", None)
                    and getattr(self, "_jsc", None) is not None):
                _tell_listener_raised(self, value)
        except Exception as exc:  # never in the way of the stop  # noqa: BLE001
            log.debug("telling the listener of an exception at stop: %s", exc)
        # the exception kept from the start holds its frames: not beyond the application
        self._sparkpredict_before = None
        return original(self, *args, **kwargs)

    stop._sparkpredict_raised = True  # type: ignore[attr-defined]
    context_class.stop = stop
    context_class.__init__ = __init__


def _exit_status(code: object) -> int | None:
    """The process exit status of ``sys.exit(code)`` where it is a number (``True`` is 1, a
    numpy integer its value), else None (a message: Python prints it and exits 1)."""
    import operator

    if code is None:
        return 0
    try:
        # the status the process exits with: POSIX keeps the low 8 bits (sys.exit(256) is 0)
        return operator.index(code) & 0xFF  # type: ignore[arg-type]
    except TypeError:
        return None


def _in_flight() -> BaseException | None:
    """The exception being raised or handled where this is called that ends the driver's
    work: not ``sys.exit(0)``/``sys.exit()``, which end it well, nor a generator's close."""
    import sys

    value = sys.exc_info()[1]
    if value is None or isinstance(value, GeneratorExit):
        return None
    if isinstance(value, SystemExit) and _exit_status(value.code) == 0:
        return None
    return value


def _tell_listener_raised(sc: Any, value: BaseException) -> bool:
    """Tell the listener of the application of ``sc`` that the driver raised ``value``; whether
    it could. Never raises: the context's stop comes next."""
    kind = type(value)
    try:
        if sc._jvm is None:
            return False
        # a cancelled asyncio task (the driver's own shutdown of the work) is stopped, not broken
        cancelled = kind.__name__ == "CancelledError" and kind.__module__.startswith(("asyncio", "concurrent"))
        status = "killed" if issubclass(kind, KeyboardInterrupt) or cancelled else "failed"
        if isinstance(value, SystemExit):
            code = _exit_status(value.code)
            text = f"the driver exited with status {code}" if code is not None else f"the driver exited: {value.code}"
        else:
            text = "the driver raised " + (f"{kind.__name__}: {value}" if str(value) else kind.__name__)
        if len(text) > RAISED_CHARS:
            text = text[:RAISED_CHARS - 3] + "..."
        sc._jvm.io.sparkpredict.SparkPredictListener.driverRaised(status, text)
        return True
    except Exception:  # no listener class, a gateway gone: nothing to tell  # noqa: BLE001
        return False


def _compact_before_run(store: str) -> None:
    """Compact a local store that exists when due (:func:`sparkpredict.store.compact.auto_compact`).

    The listener itself never compacts (it must not slow Spark's shutdown or make it fail), so
    a store fed by applications that ``attach`` would otherwise be compacted only by
    ``submit``, ``ingest``, ``sweep``, ``retrain`` or by hand. A remote store is left alone:
    Python may not reach the file system the JVM writes to, and it has no writer lock."""
    from ..store.schema import MARKER_FILE

    if "://" in store or not (Path(store) / MARKER_FILE).is_file():
        return  # no store yet: the listener makes it with its first rows
    from ..store.compact import auto_compact

    auto_compact(store)


def listener_error(spark: Any) -> str | None:
    """The last error the listener of this process's current application logged, or None when
    all went well so far. After several, the text also counts them and quotes the first (a
    store that failed and then recovered: the first error says why rows are missing; the last
    may be the count of task rows dropped meanwhile, known only as the run ends). The listener hears of a job's end on Spark's asynchronous listener bus
    and writes its rows on a thread of its own, merging writes closer together than
    ``spark.sparkpredict.flushIntervalMs`` (5 s), or than a tenth of the application's age
    where longer (up to 10 minutes), so an error from writing a job's rows can arrive a few
    seconds after the action returns, minutes in an application running for hours.

    An application the listener is not attached to records nothing: that is said too (a
    message starting "the sparkpredict listener is not attached"), never None. Once the
    session stopped, the answer is the JVM's last listener's (errors of the final flush)."""
    how = ("nothing is recorded; start the session with sparkpredict.attach(SparkSession.builder, ...) "
           "before the first SparkSession of the process (or sparkpredict submit)")
    try:
        # a notebook's `sc` is as good as the session: both reach the driver's JVM
        sc = spark if hasattr(spark, "_jsc") and not hasattr(spark, "sparkContext") else spark.sparkContext
        jsc = sc._jsc  # None once the session stopped: its last error is still the JVM's to tell
        listeners = None if jsc is None else str(jsc.sc().conf().get("spark.extraListeners", ""))
    except Exception as exc:  # Spark Connect: no driver JVM in this process to ask  # noqa: BLE001
        if "JVM_ATTRIBUTE_NOT_SUPPORTED" in str(exc) or "connect" in type(spark).__module__:
            return ("a Spark Connect session: its driver runs in the Connect server, which this process "
                    "cannot ask; its runs are recorded only if the server started with the settings "
                    "`sparkpredict listener conf` prints (see `sparkpredict store summary`)")
        return f"cannot ask the sparkpredict listener: {type(exc).__name__}: {exc}"
    if listeners is not None and LISTENER_CLASS not in [x.strip() for x in listeners.split(",")]:
        return (f"the sparkpredict listener is not attached to this application (spark.extraListeners "
                f"lacks {LISTENER_CLASS}): {how}")
    try:
        return sc._jvm.io.sparkpredict.SparkPredictListener.lastError()
    except Exception:  # py4j finds no such class: the JVM started without the jar  # noqa: BLE001
        return (f"the sparkpredict listener is not attached: {LISTENER_CLASS} is not on the driver's "
                f"classpath (Spark reads spark.jars only when its JVM starts): {how}")


__all__ = [
    "attach",
    "build_listener",
    "check_store",
    "java_source_dir",
    "listener_conf",
    "listener_error",
    "pyspark_home",
    "spark_version",
]
