"""The runs table: one row per succeeded run, the input of every whole-job runtime model.

Columns (units in the names)::

    run_id, job, input_bytes, executors, executor_cores, executor_memory_mb, runtime_s
    + numeric extras

In a store, the extras are the job parameters a run declared as Spark properties
``spark.sparkpredict.param.<name>=<number>`` (``sparkpredict submit --param name=value``): each
becomes a column ``<name>``.

``executors`` is ``executors_requested`` (what the user will choose next time), else
``executors_max``; a run on a local master is read from its task threads as submit and sweep
map executors onto them (``local[N]``: N one-core executors unless spark.executor.cores says
otherwise, see :func:`local_thread_executors`); ``runtime_s`` is ``wall_ms / 1000``.

Only what is known *before* a run may predict it. A store's runs also carry post-run
measurements (shuffle bytes, task time, ...). :func:`runs_table` keeps a few of them because
other parts (stage models, monitoring) like to see them, but :func:`feature_columns` never
offers them to a model. A runs file written by a user (CSV/Parquet, :func:`read_runs_file`)
is different: every extra numeric column in it is a feature, except the post-run names below.
"""
from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InputError, StoreError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pandas as pd

#: The columns every runs table has, in this order.
BASE_COLUMNS = ["job", "input_bytes", "executors", "executor_cores", "executor_memory_mb", "runtime_s"]
#: Model inputs that every runs table provides (runtime_s is the target).
BASE_FEATURES = ["input_bytes", "executors", "executor_cores", "executor_memory_mb"]
#: Known only after the run: kept in runs tables for inspection, never used as model inputs.
POST_RUN_COLUMNS = frozenset({
    "runtime_s", "wall_ms", "shuffle_read_bytes", "shuffle_write_bytes", "executor_run_time_ms",
    "num_jobs", "num_stages", "num_tasks", "num_failed_tasks", "executors_max", "executors_mean",
    "task_slots", "start_ms", "end_ms", "updated_ms", "schema_version",
    "memory_spilled_bytes", "disk_spilled_bytes", "peak_execution_memory_bytes",
})
#: Post-run store columns copied into runs_table (for other analyses, not for models).
_STORE_EXTRAS = ["shuffle_read_bytes", "shuffle_write_bytes", "executor_run_time_ms",
                 "num_stages", "num_tasks", "executors_max", "start_ms"]


def feature_columns(runs: pd.DataFrame) -> list[str]:
    """Model inputs of ``runs``: the base features plus numeric extras known before a run."""
    import pandas as pd

    extras = [c for c in runs.columns
              if c not in BASE_COLUMNS and c != "run_id" and c not in POST_RUN_COLUMNS
              and pd.api.types.is_numeric_dtype(runs[c]) and not pd.api.types.is_bool_dtype(runs[c])]
    return BASE_FEATURES + sorted(extras)


def runs_table(source: Any) -> pd.DataFrame:
    """Runs table of a history store: succeeded runs only, one row each (a run left out with
    ``sparkpredict store edit --exclude`` has status ``excluded``, so is not among them).

    Parameters
    ----------
    source : Store, str, os.PathLike or pandas.DataFrame
        A :class:`sparkpredict.store.io.Store`, a store path/URI, or the ``runs`` table read
        from a store (``Store.runs()``).

    Returns
    -------
    pandas.DataFrame
        ``run_id, job, input_bytes, executors, executor_cores, executor_memory_mb, runtime_s``
        (``executors``: requested, else the most seen; on a local master its threads over the
        cores per executor, :func:`local_thread_executors`; under dynamic allocation the
        time-weighted mean) and the post-run columns ``shuffle_read_bytes, shuffle_write_bytes,
        executor_run_time_ms, num_stages, num_tasks, executors_max, start_ms`` (not model
        inputs, see :data:`POST_RUN_COLUMNS`), sorted by job and start time.
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        raw = source
    elif isinstance(source, (str, os.PathLike)):
        from ..store import io as store_io

        raw = store_io.open(str(source)).runs()  # StoreError when no store is there
    elif hasattr(source, "runs"):
        raw = source.runs()
    else:
        raise InputError(f"cannot read runs from {type(source).__name__}",
                         "pass a Store, a store path, or the DataFrame of Store.runs()")
    needed = {"run_id", "job", "status", "wall_ms", "input_bytes"}
    missing = needed - set(raw.columns)
    if missing:
        raise InputError(f"runs rows lack columns {sorted(missing)}",
                         "pass the runs table of a sparkpredict store (Store.runs())")
    ok = raw[raw["status"] == "succeeded"]
    execs, cores = executors_and_cores(ok)
    out = pd.DataFrame({
        "run_id": ok["run_id"].astype(str),
        "job": ok["job"].astype(str),
        "input_bytes": pd.to_numeric(ok["input_bytes"], errors="coerce").astype("float64"),
        "executors": execs,
        "executor_cores": cores,
        "executor_memory_mb": pd.to_numeric(_or_nan(ok, "executor_memory_mb"),
                                            errors="coerce").astype("float64"),
        "runtime_s": pd.to_numeric(ok["wall_ms"], errors="coerce").astype("float64") / 1000.0,
    })
    for c in _STORE_EXTRAS:
        if c in ok:
            out[c] = pd.to_numeric(ok[c], errors="coerce").astype("float64")
    if "properties_json" in ok:
        for name, values in _declared_params(ok["properties_json"]).items():
            out[name] = values
    sort_cols = ["job", "start_ms", "run_id"] if "start_ms" in out else ["job", "run_id"]
    return out.sort_values(sort_cols, kind="mergesort").reset_index(drop=True)


def no_runs_error(store: str, raw_runs: pd.DataFrame | None = None) -> StoreError:
    """The error of a store that holds no succeeded run, for every command that needs some.

    ``raw_runs``, the store's ``runs`` rows (latest per run), when it holds some: the error
    says what they are (failed, excluded, ...) and the fix for them, not only "record some"."""
    if raw_runs is not None and len(raw_runs) and not (raw_runs["status"] == "succeeded").any():
        from ..fitting import no_succeeded_run

        what, fix = no_succeeded_run(raw_runs)
        return StoreError(f"store {store} holds no succeeded runs: {what}", fix)
    return StoreError(f"store {store} holds no succeeded runs",
                      "record some first (`sparkpredict sweep`, `sparkpredict demo` or `sparkpredict "
                      "submit`), or backfill from event logs with `sparkpredict ingest`")


def executors_and_cores(raw: pd.DataFrame, *, dynamic_mean: bool = True) -> tuple[pd.Series, pd.Series]:
    """(executors, cores per executor) of each store ``runs`` row, as the models read them:
    ``executors_requested``, else ``executors_max``, with two corrections below.

    A run on a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``) is read
    from its threads (:func:`local_thread_executors`), whatever was recorded as requested.
    ``dynamic_mean`` (default): a run under dynamic allocation counts the executors it held on
    average; False keeps the count asked for (for comparing setups rather than fitting time).
    A run on Spark's standalone manager (``spark://``, ``local-cluster[N,C,M]``) counts the
    executors it held, ``executors_max`` (:func:`standalone_masters`).

    The one reading of a run's executors: the whole-job models, the advice, ``store summary``
    and the replay and stage models (their reference run, driver-time line and interval
    distance, ``ReplayRuntimeModel._executors``) all take it from here."""
    import numpy as np
    import pandas as pd

    held = pd.to_numeric(_or_nan(raw, "executors_max"), errors="coerce")
    execs = pd.to_numeric(_or_nan(raw, "executors_requested"), errors="coerce").fillna(
        held).to_numpy(dtype="float64").copy()
    cores = pd.to_numeric(_or_nan(raw, "executor_cores"), errors="coerce").to_numpy(dtype="float64").copy()
    fix = np.zeros(len(raw), dtype=bool)
    if "master" in raw:
        most = held.to_numpy(dtype="float64")
        ran = standalone_masters(raw["master"]).to_numpy() & np.isfinite(most) & (most > 0)
        execs[ran] = most[ran]
        threads = _local_threads(raw["master"], _or_nan(raw, "task_slots"))
        instances, per_executor = _local_settings(raw)
        fix, e, c = local_thread_executors(np.isfinite(threads), threads, instances, per_executor)
        execs[fix], cores[fix] = e[fix], c[fix]
    # Under dynamic allocation spark.executor.instances is only the initial count, and the
    # most ever held may have lasted seconds: the run's resources are the time-weighted mean
    # (a YARN log here: initial 2, at most 7, 2.4 on average). A local master has no dynamic
    # allocation, whatever the setting says: its one executor is the driver.
    if dynamic_mean and "properties_json" in raw and "executors_mean" in raw:
        mean = pd.to_numeric(raw["executors_mean"], errors="coerce").to_numpy(dtype="float64")
        dyn = dynamic_allocation(raw["properties_json"], raw.get("master")).to_numpy() & np.isfinite(mean) & (mean > 0) & ~fix
        execs[dyn] = mean[dyn]
    return pd.Series(execs, raw.index), pd.Series(cores, raw.index)


def local_thread_executors(local, task_slots, instances, executor_cores):
    """(which rows to correct, executors, cores per executor) of runs on a local master.

    A local master runs one driver-executor with T task threads (``local[N]``: N; ``local[*]``:
    the machine's cores, resolved at run time and recorded as the run's ``task_slots``). The
    product maps E executors of C cores onto ``local[E x C]`` (``submit --executors E``, with C
    from ``--executor-cores``/``spark.executor.cores``, default 1; ``--executors auto`` the
    same), and a sweep's ``--master local`` runs E executors as ``local[E]``, E one-core
    executors whatever ``--executor-cores`` says. So T threads read back as:

    * ``instances`` E with E x C = T: E executors of C cores (what submit asked for);
    * ``instances`` E = T: T one-core executors (a sweep's ``local[E]``, any C);
    * else T / C executors of C cores where C divides T, otherwise T one-core executors.

    So with C = 1 (the default everywhere) ``local[N]`` is N one-core executors, whether
    spark.executor.instances was set or not (the listener records ``executors_requested = 1``
    on a local master without it). Spark ignores instances on a local master, so any other
    count there (3 on ``local[1]``) changes nothing. ``instances``, ``executor_cores``: the
    run's settings, NaN where unset. Arrays in, arrays out; the runs table reads local runs this
    way, and the stage-level features and the replay timelines through
    :func:`local_run_executors`, given the run's properties as the runs table reads them.
    """
    import numpy as np

    local = np.asarray(local, dtype=bool)
    t = np.asarray(task_slots, dtype="float64")
    e = np.asarray(instances, dtype="float64")
    c = np.asarray(executor_cores, dtype="float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        fix = local & np.isfinite(t) & (t > 0)
        c = np.where(np.isfinite(c) & (c >= 1), np.floor(c), 1.0)
        asked = np.isfinite(e) & (e > 0) & (e * c == t)
        sweep = np.isfinite(e) & (e == t)
        divides = np.fmod(t, c) == 0
        execs = np.where(asked, e, np.where(~sweep & divides, t / c, t))
        cores = np.where(asked, c, np.where(~sweep & divides, c, 1.0))
    return fix, np.where(fix, execs, np.nan), np.where(fix, cores, np.nan)


def local_run_executors(master, requested: float, task_slots: float,
                        properties: str | Mapping[str, Any] | None = None) -> tuple[float, float] | None:
    """(executors, cores per executor) of one run on a local master, read as
    :func:`local_thread_executors` reads them; None for another master or unknown threads.

    ``properties``: the run's ``properties_json`` (text or parsed), where its settings are
    read from. Without it, ``requested`` stands in for spark.executor.instances (1 says
    nothing: the listener records 1 on a local master without it) and the cores per executor
    are the threads over it where it divides them."""
    import numpy as np

    threads = _local_threads([master], [task_slots])
    props = _parse_properties(properties) if properties is not None else None
    if props is not None:
        instances, cores = _setting(props, "spark.executor.instances"), _setting(props, "spark.executor.cores")
    else:
        instances, cores = _inferred_settings(requested, threads[0])
    fix, e, c = local_thread_executors(np.isfinite(threads), threads, [instances], [cores])
    return (float(e[0]), float(c[0])) if fix[0] else None


def _local_threads(masters, task_slots):
    """Task threads of each run on a local master (its recorded ``task_slots``, else the N of
    ``local[N]``; ``local`` is one); NaN for other masters or where unknown."""
    import numpy as np
    import pandas as pd

    from ..config import LOCAL_MASTER

    slots = pd.to_numeric(pd.Series(list(task_slots)), errors="coerce").to_numpy(dtype="float64")
    out = np.full(len(slots), np.nan)
    for i, m in enumerate(masters):
        found = LOCAL_MASTER.fullmatch(str(m).strip()) if isinstance(m, str) else None
        if found is None:
            continue
        n = found.group(1)
        if np.isfinite(slots[i]) and slots[i] > 0:
            out[i] = slots[i]
        elif n is None:
            out[i] = 1.0
        elif n != "*" and int(n) > 0:
            out[i] = float(n)
    return out


def _local_settings(raw: pd.DataFrame):
    """(spark.executor.instances, spark.executor.cores) of each run, NaN where unset; for a
    row without readable ``properties_json``, inferred from its counts (:func:`_inferred_settings`)."""
    import numpy as np
    import pandas as pd

    n = len(raw)
    instances, cores = np.full(n, np.nan), np.full(n, np.nan)
    props = raw["properties_json"].tolist() if "properties_json" in raw else [None] * n
    requested = pd.to_numeric(_or_nan(raw, "executors_requested"), errors="coerce").to_numpy(dtype="float64")
    threads = _local_threads(raw["master"], _or_nan(raw, "task_slots"))
    for i in np.flatnonzero(np.isfinite(threads)):
        d = _parse_properties(props[i])
        if d is not None:
            instances[i], cores[i] = _setting(d, "spark.executor.instances"), _setting(d, "spark.executor.cores")
        else:
            instances[i], cores[i] = _inferred_settings(requested[i], threads[i])
    return instances, cores


def _inferred_settings(requested: float, threads: float) -> tuple[float, float]:
    """(instances, cores) of a local run whose properties are unknown: ``requested`` as the
    instances unless it is the 1 the listener records without any, and the cores per executor
    those instances divide the threads into (submit's ``local[E x C]``)."""
    import math

    try:
        e = float(requested)
    except (TypeError, ValueError):
        return math.nan, math.nan
    if not math.isfinite(e) or e <= 1:
        return math.nan, math.nan
    return e, (threads / e if math.isfinite(threads) and threads % e == 0 else math.nan)


def _parse_properties(value: Any) -> Mapping[str, Any] | None:
    import json

    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        d = json.loads(value)
    except ValueError:
        return None
    return d if isinstance(d, dict) else None


def _setting(props: Mapping[str, Any], key: str) -> float:
    """A whole-number Spark setting, NaN where unset or unreadable (Spark would refuse it)."""
    import math

    try:
        v = float(str(props[key]).strip())
    except (KeyError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def standalone_masters(masters: pd.Series) -> pd.Series:
    """Per run (its ``master``), whether it ran on Spark's standalone manager: ``spark://HOST``
    or ``local-cluster[N,C,M]``. That manager starts executors by its workers' free cores, not by
    spark.executor.instances (which it reads only as dynamic allocation's first count): a run
    that set 1 on local-cluster[3,1,1024] held 3, so the count it ran on is the one it held."""
    import pandas as pd

    from ..config import LOCAL_CLUSTER_MASTER

    def on(m: Any) -> bool:
        m = m.strip() if isinstance(m, str) else ""
        return m.startswith("spark://") or LOCAL_CLUSTER_MASTER.fullmatch(m) is not None

    return pd.Series([on(m) for m in masters], index=masters.index, dtype=bool)


#: The setting that turns dynamic allocation on.
DYNAMIC_ALLOCATION_KEY = "spark.dynamicAllocation.enabled"


def dynamic_allocation_on(value: Any) -> bool:
    """Whether a value of spark.dynamicAllocation.enabled turns it on, as Spark reads it: ``true``
    in any case, blanks around it trimmed (``SparkConf().set(key, True)`` writes ``True``)."""
    return isinstance(value, str) and value.strip().lower() == "true"


def dynamic_allocation(props: pd.Series, masters: pd.Series | None = None) -> pd.Series:
    """Per run (its ``properties_json``), whether it ran with spark.dynamicAllocation.enabled
    (:func:`dynamic_allocation_on`). With ``masters`` (the runs' ``master``), a run on a local
    master is not: Spark has no dynamic allocation there, whatever the setting says (a cluster
    node's spark-defaults.conf enables it for every application, local ones too)."""
    import pandas as pd

    from ..config import LOCAL_MASTER

    def on(text: Any) -> bool:
        if not isinstance(text, str) or DYNAMIC_ALLOCATION_KEY not in text:
            return False
        d = _parse_properties(text)
        return d is not None and dynamic_allocation_on(d.get(DYNAMIC_ALLOCATION_KEY))

    out = pd.Series([on(v) for v in props], index=props.index, dtype=bool)
    if masters is not None:
        local = pd.Series([isinstance(m, str) and LOCAL_MASTER.fullmatch(m.strip()) is not None
                           for m in masters], index=props.index, dtype=bool)
        out &= ~local
    return out


def _or_nan(df: pd.DataFrame, col: str) -> pd.Series:
    import numpy as np
    import pandas as pd

    return df[col] if col in df else pd.Series(np.nan, df.index)


#: a parameter name must be usable as a column and a CLI word
PARAM_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _declared_params(props: pd.Series) -> dict[str, pd.Series]:
    """name -> float values (NaN where a run did not declare it) of ``spark.sparkpredict.param.*``."""
    import re

    import pandas as pd

    from ..config import PARAM_PREFIX

    text = props.fillna("").astype(str)
    has = text.str.contains(PARAM_PREFIX, regex=False)
    found: dict[str, dict[Any, Any]] = {}
    for idx, raw in text[has].items():
        d = _parse_properties(raw)
        if d is None:  # not JSON, or not an object (a list naming a parameter)
            continue
        for k, v in d.items():
            if k.startswith(PARAM_PREFIX):
                found.setdefault(k[len(PARAM_PREFIX):], {})[idx] = v
    out = {}
    reserved = set(BASE_COLUMNS) | set(POST_RUN_COLUMNS) | {"run_id"}
    for name, vals in sorted(found.items()):
        if not re.match(PARAM_NAME_PATTERN, name) or name in reserved:
            log.warning("ignored job parameter %r: a parameter name is a word that is not a "
                        "runs-table column", name)
            continue
        out[name] = pd.to_numeric(pd.Series(vals, dtype=object).reindex(props.index),
                                  errors="coerce").astype("float64")
    return out


def with_integer_columns(df: pd.DataFrame, *, whole_valued: bool = False) -> pd.DataFrame:
    """``df`` as a runs file stores it: each column the store keeps as an integer (``input_bytes``,
    ``executor_cores``, ``num_tasks``, ``start_ms``, ...) as pandas' nullable integer of the
    store's width (``Int64``, ``Int32``), so Parquet writes the store's integer type, with nulls
    where a run lacks the value, and CSV writes ``18367893385``, not ``18367893385.0``.

    ``whole_valued`` (for CSV, which has no column types): also every other float column whose
    values are all whole numbers (``executors`` without dynamic allocation, declared parameters).
    Parquet leaves those float: a typed column must not change type with the runs exported.
    :func:`runs_table` itself keeps floats for the models, and :func:`read_runs_file` reads the
    integers back as floats, so a file fits the same models either way.
    """
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from ..store import schema as S

    store = S.TABLES["runs"]
    out = df.copy()
    for col in out.columns:
        s = out[col]
        if not pd.api.types.is_float_dtype(s):
            continue
        typ = store.field(col).type if col in store.names else None
        integer = typ is not None and pa.types.is_integer(typ)
        if not (integer or whole_valued):
            continue
        v = s.dropna().to_numpy(dtype=np.float64)
        # within +-2**53 every float is exact as an integer, and no count comes near it
        if not (np.isfinite(v).all() and (v == np.round(v)).all() and (np.abs(v) < 2**53).all()):
            continue
        if not (len(v) or integer):  # an empty column is an integer only where the store says so
            continue
        narrow = integer and typ == pa.int32() and (np.abs(v) < 2**31).all()
        out[col] = s.astype("Int32" if narrow else "Int64")
    return out


def read_runs_file(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a runs table from CSV or Parquet and check its columns.

    Required: ``job, input_bytes, executors, executor_cores, executor_memory_mb, runtime_s``;
    any other numeric column is an extra feature (unless its name is in
    :data:`POST_RUN_COLUMNS`). ``run_id`` is optional and made up (``row-<n>``) when absent.

    Raises
    ------
    InputError
        The file is missing or unreadable, or a required column is missing or not numeric.
    """
    import pandas as pd

    p = str(path)
    if not os.path.exists(p):
        raise InputError(f"runs file {p!r} not found", "export one with `sparkpredict runs --store S --out runs.csv`")
    from ..store.schema import MARKER_FILE

    if os.path.isfile(os.path.join(p, MARKER_FILE)):
        # a history store: its runs rows are not a runs table (no runtime_s, one row per write)
        raise InputError(f"{p!r} is a history store, not a runs table",
                         f"export its runs table first: sparkpredict runs --store {shlex.quote(p)} --out runs.csv "
                         "(evaluate and suggest also read a store directly: --store)")
    try:
        if p.endswith((".parquet", ".pq")) or os.path.isdir(p):
            df = pd.read_parquet(p)
        else:
            df = read_csv_keeping_jobs(p)
    except Exception as exc:  # pandas raises many types for malformed files
        # one line: pandas' messages can end in a newline, or hold several
        why = " ".join(str(exc).split())
        raise InputError(f"cannot read runs file {p!r}: {why}", "give a CSV or Parquet runs table") from exc
    check_runs_frame(df, what=f"runs file {p!r}")
    # pandas' nullable integers (a Parquet export, see with_integer_columns) as the floats the
    # models read, NaN for a missing value
    for c in df.columns:
        if (pd.api.types.is_extension_array_dtype(df[c]) and pd.api.types.is_numeric_dtype(df[c])
                and not pd.api.types.is_bool_dtype(df[c])):
            df[c] = df[c].astype("float64")
    df["job"] = df["job"].astype(str)
    # copies dropped before run ids are made up: row-0 and row-1 had made a file pasted twice
    # without run ids two different runs of each row
    df = _without_copies(df, p)
    if "run_id" not in df:
        df.insert(0, "run_id", [f"row-{i}" for i in range(len(df))])
    return df


def _without_copies(df: pd.DataFrame, path: str) -> pd.DataFrame:
    """Drop rows that repeat another whole (a file pasted twice), warned; refuse one run id on
    rows that differ. Copies of a run in both a fold's training and test rows made every
    cross-validated error look better (cv3 2.2 % read 1.8 %)."""
    copies = df.duplicated(keep="first")
    if copies.any():
        log.warning("%d row(s) of %s repeat an earlier row whole: dropped", int(copies.sum()), path)
        df = df[~copies].reset_index(drop=True)
    if "run_id" not in df:
        return df
    twice = df["run_id"][df["run_id"].notna() & df["run_id"].duplicated(keep=False)]
    if len(twice):
        ids = sorted(set(map(str, twice)))
        raise InputError(f"runs file {path!r} holds run id(s) {', '.join(ids[:5])}"
                         f"{' ...' if len(ids) > 5 else ''} on rows that differ",
                         "keep one row per run (a run's latest row, as `sparkpredict runs` exports it), "
                         "or give the rows run ids of their own")
    return df


def read_csv_keeping_jobs(path: str) -> pd.DataFrame:
    """Read a CSV whose job column is text as written: pandas would read jobs named NA, None or
    null as missing values, and the job would then be refused as empty.

    A spreadsheet's export is read too: tab- or semicolon-separated (told by a header line
    without a comma), blanks after the separators, and a job name's blanks around it (warned).
    Each read as "lacks column input_bytes" of a header that visibly held it."""
    import pandas as pd

    with open(path, encoding="utf-8-sig", errors="replace") as f:
        header = f.readline()
    sep = next((c for c in ("\t", ";") if c in header and "," not in header), ",")
    df = pd.read_csv(path, converters={"job": str}, sep=sep, skipinitialspace=True)
    df.columns = [str(c).strip() for c in df.columns]
    if "job" in df and df["job"].dtype == object:
        text = df["job"].map(lambda v: v.strip() if isinstance(v, str) else v)
        padded = sorted({v for v, t in zip(df["job"], text) if isinstance(v, str) and v != t and t})
        if padded:
            log.warning("job name(s) %s of %s read without the blanks around them",
                        ", ".join(map(repr, padded[:5])) + (" ..." if len(padded) > 5 else ""), path)
            df["job"] = text
    return df


def check_job_column(df: pd.DataFrame, what: str) -> None:
    """Refuse rows without a job: pandas reads an empty cell as NaN, which would otherwise become
    a job named 'nan' (and a Parquet null 'None')."""
    import pandas as pd

    # counted from 1 below the header, and said so: a bare "row 2" is line 3 of the CSV in an
    # editor and row 3 in a spreadsheet, both of which show the header as row 1
    empty = [row for row, v in enumerate(df["job"].tolist(), start=1)
             if v is None or (not isinstance(v, str) and pd.isna(v)) or not str(v).strip()]
    if empty:
        rows = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
        raise InputError(f"{what} row{'s' if len(empty) > 1 else ''} {rows} below the header: job is empty",
                         "give every row the job it belongs to, as its runs were recorded "
                         "(the job column of `sparkpredict runs`)")


def check_runs_frame(df: pd.DataFrame, what: str = "runs table") -> None:
    """Raise :class:`InputError` naming the missing or non-numeric required columns."""
    import pandas as pd

    missing = [c for c in BASE_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"{what} lacks column(s) {', '.join(missing)} (has: {', '.join(map(str, df.columns))})",
            f"a runs table needs {', '.join(BASE_COLUMNS)}; export one with `sparkpredict runs`")
    if df.empty:  # before the type check: the columns of an empty CSV read as text
        raise InputError(f"{what} holds no runs (no rows)",
                         "export one from a store with succeeded runs: `sparkpredict runs --store S "
                         "--out runs.csv`")
    check_job_column(df, what)
    bad = [c for c in BASE_COLUMNS[1:] if not pd.api.types.is_numeric_dtype(df[c])]
    if bad:
        # the cells themselves, counted from 1 below the header: in 10,000 rows "column
        # input_bytes is not numeric" could not be found
        cells = []
        for c in bad:
            unread = pd.to_numeric(df[c], errors="coerce").isna() & df[c].notna()
            cells += [f"row {row}: {c} {v!r}" for row, (v, u) in enumerate(zip(df[c].tolist(), unread), start=1)
                      if u and str(v).strip()]
        shown = "; ".join(cells[:5]) + (f" (and {len(cells) - 5} more)" if len(cells) > 5 else "")
        again = " (a second header line: files joined with their headers?)" if any(
            f"{c} {c!r}" in x for x in cells for c in bad) else ""
        raise InputError(f"{what}: column(s) {', '.join(bad)} are not numeric: {shown}{again}",
                         "write plain numbers: bytes, counts, MiB and seconds")
