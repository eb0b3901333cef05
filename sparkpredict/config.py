"""Resolves sparkpredict's settings once: explicit argument, then environment, then default."""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Collection
from pathlib import Path

from .errors import InputError, StoreError

#: Environment variable naming the history store when no ``store=`` is given.
STORE_ENV = "SPARKPREDICT_STORE"
#: Where the listener jar is cached (keyed by source hash and Spark version).
CACHE_ENV = "SPARKPREDICT_CACHE"

# Spark configuration keys the listener reads.
KEY_STORE = "spark.sparkpredict.store"
KEY_JOB = "spark.sparkpredict.job"
KEY_TASKS = "spark.sparkpredict.tasks"
KEY_INPUT_BYTES = "spark.sparkpredict.inputBytes"
KEY_FLUSH_STAGES = "spark.sparkpredict.flushEveryStages"
#: ``spark.sparkpredict.param.<name>=<number>``: a job parameter known before the run (iterations,
#: k, a page count) that the runtime models take as a feature next to the input size.
PARAM_PREFIX = "spark.sparkpredict.param."
LISTENER_CLASS = "io.sparkpredict.SparkPredictListener"
#: The Spark plugin that samples host counters (CPU by mode, pressure stalls, disk and network
#: bytes) on the driver's and every executor's host for the slowdown monitor.
HOST_PLUGIN_CLASS = "io.sparkpredict.HostMetricsPlugin"
KEY_HOST_SAMPLE_MS = "spark.sparkpredict.hostSampleIntervalMs"

#: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: (N or "*" or None, F or None).
LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)(?:\s*,\s*(\d+))?\])?")
#: ``local-cluster[N,C,M]``: N executors of C cores and M MiB.
LOCAL_CLUSTER_MASTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")


def master_kind(master: object) -> str | None:
    """"local" (task threads in the driver), "local-cluster" (executor JVMs on this machine), or
    the cluster manager ("yarn", "k8s", "spark" standalone, ...); None: not recorded."""
    m = master.strip() if isinstance(master, str) else ""
    if not m:
        return None
    if LOCAL_MASTER.fullmatch(m):
        return "local"
    if m.startswith("local-cluster"):
        return "local-cluster"
    return m.split(":", 1)[0]

def empty_local_master(master: str) -> tuple[str, str] | None:
    """(what the master asks for, the fix) for a local master of nothing: ``local[0]``, or a
    ``local-cluster`` of no executors, cores or memory; else None. Spark refuses these only
    inside the driver, after the JVM's start, with a stack trace."""
    m = LOCAL_CLUSTER_MASTER.fullmatch(master)
    if m and 0 in map(int, m.groups()):
        return ("asks for workers with no executors, cores or memory",
                "give local-cluster[N,C,MiB] with N, C and MiB at least 1")
    m = LOCAL_MASTER.fullmatch(master)
    if m and m.group(1) is not None and m.group(1) != "*" and int(m.group(1)) == 0:
        return "asks for no task threads", "give local[N] with N at least 1, e.g. local"
    return None


def check_job_name(job: object, fix: str, known: Collection[str] = ()) -> None:
    """Refuse a job name given blank or not as text (None: not given). The listener and submit
    read an empty ``spark.sparkpredict.job`` as unset, the app name, and runs tables refuse a
    blank job: a blank one given is a mistake to say, not a name to drop quietly.

    A name with blanks at its ends or control characters is refused too, unless it is one of
    ``known`` (the jobs a store's runs already have): the listener records an application's name
    as its job unchanged (``appName("nightly etl ")``), and runs moved to that job join them."""
    if job is not None and (not isinstance(job, str) or not job.strip()):
        raise InputError(f"job name {job!r} is " + ("blank" if isinstance(job, str) else "not text"), fix)
    if isinstance(job, str) and job in known:
        return
    if isinstance(job, str) and _has_control_character(job):
        # a newline split the name across lines of every table and report, and of a
        # spark-defaults.conf (`listener conf`), where the second half became a setting of its own
        raise InputError(f"job name {job!r} holds a control character (a newline, a tab)",
                         "give the name on one line, without control characters")
    if isinstance(job, str) and job != job.strip():
        # recorded as typed, it was found by no one typing it: "no job 'padded'; use one of:   padded  "
        raise InputError(f"job name {job!r} begins or ends with spaces",
                         f"give it without them: {job.strip()!r}")


def plain_job_name(name: str) -> bool:
    """Whether ``name`` reads the same printed bare: no blanks at its ends, no control characters."""
    return name == name.strip() and not _has_control_character(name)


def _has_control_character(name: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in name)


def shown_job(name: object, most: int | None = None) -> str:
    """A job name as a line of text shows it: quoted (``repr``) unless :func:`plain_job_name`,
    since printed bare a trailing space looked like the name without it and a newline split
    the line; past ``most`` characters (a table's column) cut with "…" (``--json`` keeps names
    whole)."""
    text = str(name)
    if isinstance(name, str) and not plain_job_name(name):
        text = repr(name)
    return text if most is None or len(text) <= most else text[:most - 1] + "…"


def default_store() -> str:
    """The store when none is given, as the listener of an application with no store setting
    of its own records into it: ``spark.sparkpredict.store`` of the cluster's
    ``spark-defaults.conf`` (in $SPARK_CONF_DIR, else the Spark home's ``conf/``), else
    :func:`embedded_store`. Without the first, a cluster set up with
    ``conf/spark-defaults.conf.sparkpredict`` recorded runs that ``suggest`` never read."""
    return default_store_source()[0]


def default_store_source() -> tuple[str, str]:
    """(:func:`default_store`, where it came from, for an error to name)."""
    from .capture.submit_args import cluster_store_setting

    found = cluster_store_setting()
    if found is not None:
        return found[0], f"{KEY_STORE} in {found[1]}"
    if os.environ.get(STORE_ENV):
        return embedded_store(), f"${STORE_ENV}"
    return embedded_store(), "the default store"


def embedded_store() -> str:
    """The listener's own default, where an application with no store setting at all records:
    ``$SPARKPREDICT_STORE`` or ``~/.sparkpredict/store``."""
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return str(Path.home() / ".sparkpredict" / "store")


def resolve_store(store: str | os.PathLike[str] | None) -> str:
    """The store path or URI to use; local paths, ``file:`` URIs included, come back absolute.

    Raises
    ------
    StoreError
        A ``file:`` URI that names another host or a relative path, or an empty path (it read
        as the current folder: a store made there, or its files listed as not a store's).
    """
    if store is not None and not isinstance(store, (str, os.PathLike)):
        # 5 became the folder "5" under the current one, b"/x" the folder "b'/x'"
        raise StoreError(f"the store must be a path or URI, got {type(store).__name__} {store!r}",
                         "give the store's folder as a str or pathlib.Path (--store DIR; store= from Python)")
    if store is None:
        s, where = default_store_source()
        try:
            return resolve_store(s)
        except StoreError as exc:  # a setting of spark-defaults.conf: say which file to fix
            raise StoreError(f"{exc.message} ({where})", exc.fix) from None
    s = str(store)
    if "\0" in s:
        # a binary byte of a damaged spark-defaults.conf (or a str built by hand): pyarrow's
        # "Embedded NUL char in path" came back as a traceback
        raise StoreError(f"the store path {s!r} holds a NUL character",
                         "give the store's folder without it (--store DIR; store= from Python)")
    if not s.strip():
        raise StoreError("the store path is empty", "give the store's folder (--store DIR; store= from Python), "
                         f"or leave it out for the default (${STORE_ENV} or ~/.sparkpredict/store)")
    if s != s.strip():
        # Spark trims a properties file's value, so the listener wrote to the trimmed folder
        # while this read the one with the blank (a leading one: a folder " " under the current)
        raise StoreError(f"the store path {s!r} begins or ends with blanks",
                         f"give it without them: {s.strip()!r}")
    if s[:5].lower() == "file:":
        s = _store_file_uri_path(s)
    elif "://" in s:
        return s
    elif _SCHEME.match(s):
        # hdfs:/p is a Hadoop path of that file system, which the listener writes; Python's file
        # systems take it only with its slashes (as a local path it was a folder "hdfs:")
        scheme, _, rest = s.partition(":")
        raise StoreError(f"the store {s!r} names the file system {scheme}: without '//'",
                         f"write {scheme}:///{rest.lstrip('/')} (with the namenode or bucket between "
                         f"the slashes where it needs one: {scheme}://NAME/{rest.lstrip('/')})")
    if s.startswith("//") and not s.startswith("///"):
        s = "/" + s.lstrip("/")  # POSIX's "//p" is implementation-defined; Hadoop's Path reads /p
    if s == "~" or s.startswith("~/"):
        # as the listener expands it (ListenerSettings.localStore): not ~user
        s = os.path.expanduser(s)
    # lexical, as the listener's (Hadoop's) paths are: resolve() followed links, and
    # "link/../store" then named another folder than the one the listener wrote
    return os.path.abspath(s)


#: A URI's scheme, ``hdfs:`` or ``s3a:`` (two characters or more: not a drive letter).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")

#: The secret of a URI's user information, ``scheme://KEY:SECRET@bucket/...``: how pyarrow takes
#: S3 credentials in a URI (its query takes no keys). The user or key before the colon stays.
#: Found anywhere in a text: a note can quote the store (`retrain --store s3://KEY:SECRET@...`).
_SECRET_IN_URI = re.compile(r"([a-zA-Z][\w+.-]*://[^/@:?#\s]*:)[^/@?#\s]*@")


def store_for_display(store: str) -> str:
    """``store`` with its URI's secret replaced by ``***``: a report is shared, and a store URI
    such as ``s3://KEY:SECRET@bucket/history`` would carry the secret key into it."""
    return mask_uri_secrets(store)


def mask_uri_secrets(text: str) -> str:
    """``text`` with every URI's secret replaced by ``***``: what a shared page says must not
    carry a key that a message quoted."""
    return _SECRET_IN_URI.sub(r"\1***@", text)


def uri_has_credentials(store: str) -> bool:
    return _SECRET_IN_URI.match(store) is not None


def _file_uri_path(uri: str) -> str:
    """The local path of ``file:/p``, ``file:///p`` or ``file://localhost/p``, percent escapes
    as they are (a store refuses them, :func:`_store_file_uri_path`; the event-log ingest reads
    them as Spark does)."""
    rest = uri[5:]
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            # Hadoop's local file system refuses such a path ("Wrong FS"), so the listener could
            # record nothing there.
            raise StoreError(f"the store {uri!r} names the host {host!r}, and file: URIs are local",
                             f"write file:///{path} for a folder on this machine, or use hdfs://, s3a://, ...")
        rest = "/" + path
    if not rest.startswith("/"):
        raise StoreError(f"the store {uri!r} is a file: URI without an absolute path",
                         "write file:///absolute/path, or give the plain path")
    # "file:////p": extra slashes would make POSIX's implementation-defined "//p"
    return "/" + rest.lstrip("/")


def _store_file_uri_path(uri: str) -> str:
    """A store's ``file:`` URI as its local path (:func:`_file_uri_path`); percent escapes are
    refused unless that folder exists: Hadoop's ``Path`` (the listener's) reads
    ``file:///a%20b`` as the folder ``/a%20b``, where the user meant ``/a b``."""
    from urllib.parse import unquote

    path = _file_uri_path(uri)
    if unquote(path) != path and not os.path.exists(path):
        # file:///my%20runs (Path.as_uri(), a copied URI) meant the folder "my runs", and
        # Spark's spark.eventLog.dir reads it so; the listener and this read "my%20runs": the
        # runs went into a folder of that name beside the one meant. Said, not guessed (a store
        # made there by an earlier version keeps opening).
        raise StoreError(f"the store {uri!r} holds percent escapes, which the listener (Hadoop's Path) "
                         f"keeps as they are: it would be the folder {path!r}, not {unquote(path)!r}",
                         f"give the plain path (--store {shlex.quote(unquote(path))}; store= from Python)")
    return path


def cache_dir() -> Path:
    """``$SPARKPREDICT_CACHE``, else ``~/.cache/sparkpredict``; absolute: the listener jar's
    path in it goes into ``spark.jars`` and the executors' class path, read from other folders."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser().absolute() if env else Path.home() / ".cache" / "sparkpredict"


def folder_problem(path: str | os.PathLike[str]) -> str | None:
    """Why no folder could be made and written at the local ``path``, else None; found without
    leaving anything behind.

    A probe folder is made and removed where ``path`` is, or where its first missing folder
    would go: a permission check alone would pass root everywhere, and some file systems refuse
    even root (``/sys``, a read-only mount)."""
    import tempfile

    p = Path(path).absolute()
    target = p
    while not os.path.exists(target) and target.parent != target:
        target = target.parent
    if not os.path.isdir(target):
        what = "a file" if os.path.isfile(target) else "not a folder"
        return f"it is {what}" if target == p else f"{target} is {what}"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".sparkpredict-probe-", dir=target))
    except OSError as exc:
        return f"{target} is not writable ({exc.strerror or exc})"
    return None


def cache_error(path: str | os.PathLike[str], reason: str, fix: str | None = None) -> InputError:
    """The error of a cache folder that cannot be written (``reason``: :func:`folder_problem`'s,
    or an OSError's); ``fix`` by default points at $SPARKPREDICT_CACHE."""
    return InputError(f"cannot write the cache {str(path)!r}: {reason}",
                      fix or f"set {CACHE_ENV} to a writable folder")


def make_cache_dir(path: str | os.PathLike[str], fix: str | None = None) -> Path:
    """Create the cache folder ``path`` (and its parents); refuse one that cannot be made or
    written (:func:`cache_error`) rather than fail half way through filling it."""
    p = Path(path)
    problem = folder_problem(p)
    if problem:
        raise cache_error(p, problem, fix)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cache_error(p, exc.strerror or str(exc), fix) from None
    return p
