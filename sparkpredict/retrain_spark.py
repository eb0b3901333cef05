"""The Spark path of :mod:`sparkpredict.retrain`: read the committed store with Spark, fit every
stale job on the executors, bring the artifacts' JSON back to the driver.

Each job's runs (latest row per run) are shipped to a Python worker, which fingerprints the job,
judges it as the local loop does (:func:`sparkpredict.retrain_plan._judge`: stale, current, or still
failing on the runs its fit failed on) and, when stale, calls the same
:func:`sparkpredict.fitting.fit_group_safe` as the local loop;
with stage rows in the store, the runs are cogrouped with the job's committed stage and task
rows, so the stage-level models are fitted there too. The driver then commits through
:func:`sparkpredict.retrain._commit`, exactly as the local path does.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from . import registry as R
from . import registry_commit as RC
from .errors import InputError, StoreError
from .retrain import (
    RetrainResult,
    _commit,
    check_kind,
    check_master,
    result_if_current,
)
from .retrain_plan import Failures, _prev_state, check_jobs
from .store import io as store_io
from .store import schema as S

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pandas as pd

#: Output schema of the fit step: one row per (job, model kind), with the fingerprint of the
#: job's runs (and their number), which the driver records for a fit that failed.
_UDF_SCHEMA = ("job string, kind string, status string, doc string, error string, "
               "trained_on string, trained_on_rows long")
_UDF_COLUMNS = ["job", "kind", "status", "doc", "error", "trained_on", "trained_on_rows"]


class NoSparkFileSystem(StoreError):
    """Spark's Hadoop layer has no FileSystem for the store's scheme (``s3://`` without hadoop-aws
    or EMRFS): the Spark path cannot read the store, the local one can."""

    def __init__(self, path: str) -> None:
        scheme = path.split("://", 1)[0]
        super().__init__(
            f"Spark cannot read store {path!r}: its Hadoop has no FileSystem for scheme {scheme!r}",
            "retrain on this machine with --local, or give Spark one: hadoop-aws on its classpath "
            "(--packages org.apache.hadoop:hadoop-aws:<its Hadoop version>) and --conf "
            f"spark.hadoop.fs.{scheme}.impl=org.apache.hadoop.fs.s3a.S3AFileSystem for s3:// (EMR has one)")


#: The characters Hadoop's path globbing reads as a pattern (``FileSystem.globStatus``), which
#: Spark applies to every path it is given to read.
_GLOB_CHARS = frozenset("\\[]{}*?")


def spark_path(st: store_io.Store) -> str:
    """The store's path as Spark's Hadoop layer reads it (local folders as file://), its glob
    characters escaped: a store at ``/data/br[1]`` is read there, never a pattern that finds no
    folder (Spark's PATH_NOT_FOUND) or another store's (``br1``)."""
    path = st.path if "://" in st.path else "file://" + st.path
    return "".join("\\" + c if c in _GLOB_CHARS else c for c in path)


def _spark_schema(table: str, fields: Iterable[pa.Field] | None = None):
    """``table``'s schema (or just ``fields``) as Spark's read schema."""
    from pyspark.sql import types as T

    m = {pa.string(): T.StringType(), pa.int64(): T.LongType(), pa.int32(): T.IntegerType(),
         pa.float64(): T.DoubleType(), pa.bool_(): T.BooleanType()}
    return T.StructType([T.StructField(f.name, m[f.type], True) for f in (S.TABLES[table] if fields is None else fields)])


def _planted_columns(table: str) -> list[pa.Field]:
    """The columns ``table`` lacks of the other tables whose files have a run id and ``table``'s
    keys (:data:`~sparkpredict.store.io._KEYS`): such a file copied into ``table``'s folder passes
    the check of its keys, and Spark, reading ``table``'s columns, sees none of its own. The
    others' files lack a key, which that check finds."""
    need = {"run_id", *store_io._KEYS[table]}
    out: dict[str, pa.Field] = {}
    for other, schema in S.TABLES.items():
        if other != table and need.issubset(schema.names):
            out.update((f.name, f) for f in schema if f.name not in S.TABLES[table].names and f.name not in out)
    return list(out.values())


def _visible_batches(spark: Any, st: store_io.Store, used: set[str] | None = None):
    """A one-column (``_batch``) DataFrame of the batches a reader reads (:meth:`Store.visible_marks`):
    committed, and not replaced by a compaction. Their ids are added to ``used``."""
    from pyspark.sql import types as T

    marks = st._listing(S.COMMIT_TABLE)
    visible = st.visible_marks(marks)
    # as Store.read: a compacted batch's file gone is an error, not runs without those rows
    st.check_lost(marks, visible=visible)
    # as Store.read: of a run ingest stored twice (stopped between its two steps), the latest
    # copy; both, the stage models were fitted on its stages and tasks twice
    ids = sorted(set(visible) - st._stale_ingest_copies(visible))
    if used is not None:
        used.update(ids)
    return spark.createDataFrame([(b,) for b in ids], T.StructType([T.StructField("_batch", T.StringType())]))


def _batch(col):
    from pyspark.sql import functions as F

    return F.regexp_extract(col, r"^part-(.*)\.parquet$", 1)


def _parts(spark: Any, st: store_io.Store, table: str, visible: Any, fields: Iterable[pa.Field] | None = None,
           row_index: bool = False):
    """The rows of ``table``'s part files of the ``visible`` batches (``fields``, default every
    column; a column a file lacks reads as null) with their file's name (``_file``), and with
    ``row_index`` their place in it (``_row``)."""
    from pyspark.sql import functions as F

    rows = (spark.read.schema(_spark_schema(table, fields)).option("pathGlobFilter", "part-*.parquet")
            .option("ignoreMissingFiles", "true")
            .parquet(f"{spark_path(st)}/{table}").withColumn("_file", F.col("_metadata.file_name")))
    if row_index:
        rows = rows.withColumn("_row", F.col("_metadata.row_index"))
    return (rows.withColumn("_batch", _batch(F.col("_file"))).join(F.broadcast(visible), "_batch", "left_semi")
            .drop("_batch"))


def _refuse_damaged(spark: Any, st: store_io.Store, table: str, visible: Any) -> None:
    """Refuse ``table``'s files of the ``visible`` batches that :meth:`Store.read` refuses, with
    its error: a foreign file (no run_id), another table's file copied there, rows without their
    key (:data:`~sparkpredict.store.io._KEYS`). Spark reads every file with the table's columns, so
    a missing column reads as nulls and one the table lacks is never seen: the fit read these files
    as rows of the table, or dropped them, silently.

    One Spark job, not a second read of the table: the names of the files with a row whose key or
    run id is null, or (of the tables another table's file with their keys could be copied into:
    runs, stages) with a value in a column of such a table. Of ``tasks`` Parquet skips each row
    group whose statistics count no null, so a sound file costs its footer; of ``runs`` and
    ``stages`` (the other tables' columns are in no sound file, which stops that skipping) it
    costs their key columns too. A global aggregate, so that the job's last stage is one task,
    however many shuffle partitions the session has. The driver then makes the local read's
    checks of each file found, in its order: the footer's (no column read), then the rows
    without a key, counted in Spark. Columns no table has (another tool's file with the table's
    keys) stay unseen: only every file's footer shows them."""
    from functools import reduce

    from pyspark.sql import functions as F

    keys = list(dict.fromkeys(["run_id", *store_io._KEYS[table]]))
    planted = _planted_columns(table)
    damage = reduce(lambda a, b: a | b, [F.col(k).isNull() for k in keys] + [F.col(f.name).isNotNull() for f in planted])
    found = (_parts(spark, st, table, visible, [S.TABLES[table].field(k) for k in keys] + planted)
             .where(damage))
    for name in sorted(found.agg(F.collect_set("_file")).first()[0]):
        batch = store_io._batch_of(name)
        assert batch is not None  # the read's glob: part-*.parquet
        path = f"{st._dir(table)}/{name}"
        # a file without a key may be foreign or another table's, which its footer names; one
        # gone since Spark read it went with its batch, for which the caller reads again
        if st._read_each(table, [(batch, path)], [], None) == [None]:
            continue
        nulls = (found.where(F.col("_file") == name)
                 .agg(*[F.sum(F.col(k).isNull().cast("long")).alias(k) for k in keys]).first())
        for key in store_io._KEYS[table]:
            if nulls[key]:
                raise st.without_key(path, table, batch, key, nulls[key])


def read_runs_spark(spark: Any, st: store_io.Store, used: set[str] | None = None):
    """The committed runs of the store as a Spark DataFrame, latest row per run_id.

    Every visible ``runs/part-*.parquet`` (one a compaction replaced is not) is a commit mark,
    so all of them are read; ties on ``updated_ms`` go to the later batch (file name), as in
    :meth:`Store.read`. A damaged file is refused as :meth:`Store.read` refuses it
    (:func:`_refuse_damaged`), before the DataFrame is returned.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    visible = _visible_batches(spark, st, used)
    _refuse_damaged(spark, st, "runs", visible)
    df = _parts(spark, st, "runs", visible, row_index=True)
    # a compacted runs file holds a run's rows in their batches' order: the row breaks a tie there
    w = Window.partitionBy("run_id").orderBy(F.col("updated_ms").desc_nulls_last(), F.col("_file").desc(),
                                             F.col("_row").desc())
    # Deduplicate first, then drop job-less runs: the same order as Store.read + the local path.
    return (df.where(F.col("run_id").isNotNull())
            .withColumn("_rn", F.row_number().over(w)).where("_rn = 1").drop("_rn", "_file", "_row")
            .where(F.col("job").isNotNull()))


def read_committed_spark(spark: Any, st: store_io.Store, table: str, used: set[str] | None = None):
    """Rows of ``stages``/``tasks``/``executors`` whose batch a reader reads: it has a runs
    file (the commit protocol), and no compaction replaced it. A damaged file is refused as
    :meth:`Store.read` refuses it (:func:`_refuse_damaged`), before the DataFrame is returned."""
    # the visible batches are listed before Spark lists the parts: a batch committed by then
    # has its parts written, and a replaced one's files stay a while after its compaction
    visible = _visible_batches(spark, st, used)
    _refuse_damaged(spark, st, table, visible)
    return _parts(spark, st, table, visible).drop("_file")


def retrain_spark(store: Any = None, *, spark: Any = None, master: str | None = None, force: bool = False,
                  random_state: int = 0, jobs: Iterable[str] | None = None, kind: str = "auto",
                  partitions: int | None = None, method: str = "map", stage_models: bool = True,
                  on_artifact: Callable[[int], None] | None = None, spark_logs: bool = False) -> RetrainResult:
    """Refit stale jobs inside Spark (see :func:`retrain`).

    One Spark job: read the committed runs, keep each run's latest row, group by job; each
    group is fingerprinted on the executor and fitted only when stale (the previous registry's
    state travels with the function). ``spark``: an active SparkSession to use (left running);
    otherwise one is started on ``master`` (default ``local[*]``) and stopped at the end.
    ``partitions``: fit tasks (default 4 x default parallelism). ``method``: ``"map"``
    (default; ``repartition(job)`` + ``mapInPandas``, one Python call per partition) or
    ``"apply"`` (``groupBy(job).applyInPandas``, one call per job: same results, 1.2x the
    time on 1,000 jobs, see docs/retrain.md). ``stage_models``: also fit each
    job's stage model; when the store holds stage rows, each job's runs are cogrouped with its
    stage and task rows (``groupBy(job).cogroup(...).applyInPandas``).

    Without ``spark``, the store is first planned with pyarrow (:func:`result_if_current`): when
    no job is stale, no session is started and the result says so (0 refit, every job unchanged
    or still failing on the runs its fit failed on, ``spark_started`` False).
    The session it starts logs Spark's errors only, unless ``spark_logs`` or a log4j
    configuration of the user's own.
    """
    check_kind(kind)
    if method not in ("map", "apply"):
        raise InputError(f"unknown Spark method {method!r}", "use 'map' or 'apply'")
    if spark is None and master is not None:
        check_master(master)
    t0 = time.perf_counter()
    st = store_io.open(store)
    RC.check_writable(st)  # before the Spark job, not at the commit after it
    if jobs is not None:  # refused before a session starts
        jobs = check_jobs(jobs, st.read("runs", columns=["job"])["job"], f"store {st.path!r}")
    own = spark is None
    if own:
        # no master: none was used (jobs/retrain.py, whose master is spark-submit's, says the same)
        current = result_if_current(st, force=force, kind=kind, stage_models=stage_models, jobs=jobs)
        if current is not None:
            return current
        spark = _start_session(master or "local[*]", quiet=not spark_logs)
    result = RetrainResult(retrain_id=R.new_retrain_id(), fit_path="spark", n_jobs=0,
                           master=spark.sparkContext.master, spark_started=True)
    saved = {k: spark.conf.get(k, None) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    # A few tasks per core for every shuffle: the runs table is small, and Spark's default of
    # 200 partitions costs more in task overhead than the work. Adaptive execution would
    # coalesce the fit step's tiny partitions into one task and serialise the fits.
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions or spark.sparkContext.defaultParallelism * 4))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        prev, failures = R.read_registry_state(st)
        rows: list = []
        if st.fs.get_file_info(f"{st.root.rstrip('/')}/runs").type == pafs.FileType.Directory:
            udf = _make_udf(random_state, kind, force, _prev_state(prev, failures, R.present_artifacts(st)), stage_models)
            for _ in range(store_io._READ_TRIES):
                used: set[str] = set()
                rows = _fit_rows(spark, st, udf, jobs, method, stage_models, used)
                # Spark skips a file gone since it listed it: a batch it read that went meanwhile
                # (a compaction's leftovers removed, an ingest's copy dropped) may have lost rows
                gone = used - set(st.visible_marks())
                if not gone:
                    break
                log.info("store %s: %d batch(es) went while Spark read it; reading it again", st.path, len(gone))
            else:
                raise StoreError(f"store {st.path!r} kept changing while Spark read it: batches went "
                                 "before their files could be read",
                                 "retrain again once the compaction, ingest or clean running on it is done")
        _commit_rows(st, prev, failures, rows, result, on_artifact, kind)
    finally:
        for k, v in saved.items():
            if v is not None:
                spark.conf.set(k, v)
            else:  # setting Spark's default by value would still leave the session changed
                spark.conf.unset(k)
        if own:
            spark.stop()
    result.seconds = time.perf_counter() - t0
    return result


def _fit_rows(spark: Any, st: store_io.Store, udf: Any, jobs: list[str] | None, method: str,
              stage_models: bool, used: set[str]) -> list:
    """The fit step's rows, collected: one Spark job over the store's visible batches (their
    ids added to ``used``)."""
    from pyspark.sql import functions as F

    try:
        latest = read_runs_spark(spark, st, used)
    except Exception as exc:  # py4j's Py4JJavaError, without importing py4j
        if "UnsupportedFileSystemException" not in str(exc):
            raise
        raise NoSparkFileSystem(st.path) from None
    if jobs is not None:
        latest = latest.where(F.col("job").isin(sorted(set(jobs))))
    detail = _detail_rows(spark, st, latest, used) if stage_models else None
    if detail is not None:
        fitted = (latest.groupBy("job").cogroup(detail.groupBy("job"))
                  .applyInPandas(_cogroup_udf(udf), _UDF_SCHEMA))
    elif method == "apply":
        fitted = latest.groupBy("job").applyInPandas(udf, _UDF_SCHEMA)
    else:
        # Same function per job, but one Python call per partition instead of per job:
        # hash-partition by job, sort, and cut the Arrow batches at job boundaries.
        n = int(spark.conf.get("spark.sql.shuffle.partitions"))
        fitted = (latest.repartition(n, "job").sortWithinPartitions("job")
                  .mapInPandas(_per_partition(udf), _UDF_SCHEMA))
    return _collected(fitted)


def _collected(fitted: Any) -> list:
    """``fitted``'s rows; executors whose Python cannot run the fit at all are one error naming
    the Python to set. Any other failure is raised as it came, the worker's traceback with it."""
    try:
        return fitted.collect()
    except Exception as exc:  # pyspark's PythonException, py4j's Py4JJavaError: not imported here
        worker = _worker_failure(exc)
        if worker is None:
            raise
        raise InputError(
            f"the executors' Python could not run sparkpredict's fit: {worker}",
            "set spark.pyspark.python (or PYSPARK_PYTHON) to a Python that has sparkpredict and its "
            "dependencies (pyarrow, pandas, scikit-learn), on every executor, or retrain with --local; "
            "the registry was not changed") from None


def _worker_failure(exc: Exception) -> str | None:
    """How an executor's Python failed to run the fit at all: the exception its worker raised
    starting or importing (``ModuleNotFoundError: No module named 'pyarrow'``, PySpark's Python
    version mismatch), a Python that could not be started, or a worker that crashed; None for
    any other failure.

    Each job's fit catches its own errors (:func:`~sparkpredict.fitting.fit_group_safe`), so
    what else reaches the driver from a worker is no fault of its Python: the fit's MemoryError
    or OSError (which it lets through, as the local path does), or a bug of ours outside it.
    Blaming spark.pyspark.python for those sent the user to change a Python that was fine."""
    text = str(exc)
    if type(exc).__name__ == "PythonException" or _PY_TRACEBACK in text:
        raised = _raised(text)
        kind = raised.split(":", 1)[0].rsplit(".", 1)[-1]
        if kind in ("ModuleNotFoundError", "ImportError") or _VERSION_MISMATCH in raised:
            return raised
        return None
    started = _NOT_STARTED.search(text)
    if started is not None:
        return started.group(0)
    if "Python worker exited unexpectedly" in text:
        return "its Python worker exited unexpectedly (crashed)"
    return None


_PY_TRACEBACK = "Traceback (most recent call last):"
#: PySpark's worker checks its Python against the driver's before it imports anything (its
#: PYTHON_VERSION_MISMATCH; the same words since Spark 2)
_VERSION_MISMATCH = "Python in worker has different version"
#: the executor's JVM could not start the Python it was given (a path that is no Python there)
_NOT_STARTED = re.compile(r'Cannot run program "[^"\n]*"[^\n]*')


def _raised(text: str) -> str:
    """The first line of the exception a Python traceback in ``text`` ends on (the last
    traceback: the one raised while handling the others); ``text``'s last line when it holds
    no traceback. Not the text's last line: a message of several lines (PySpark's version
    mismatch) ends on its advice, and a Java trace may follow the Python one."""
    lines = text.splitlines()
    # Spark 3's RDD path puts it after the Java exception's name on one line
    start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].rstrip().endswith(_PY_TRACEBACK)), None)
    if start is not None:
        # the frames and their source lines are indented; the exception's line is not
        for line in lines[start + 1:]:
            if line.strip() and not line[:1].isspace():
                return line.strip()
    rest = [ln.strip() for ln in lines if ln.strip()]
    return rest[-1] if rest else ""


def _commit_rows(st: store_io.Store, prev: pd.DataFrame, failures: Failures, rows: list, result: RetrainResult,
                 on_artifact: Callable[[int], None] | None, kind: str) -> RetrainResult:
    """Commit the fit step's rows (:data:`_UDF_COLUMNS`, as collected) through the local path's
    :func:`~sparkpredict.retrain._commit`: the same registry rows, failure records and result
    (refit, skipped, failed, exit status) as the local loop's."""
    rows = sorted(rows, key=lambda r: (r["job"], r["kind"]))
    result.n_jobs = len({r["job"] for r in rows})
    fps = {r["job"]: (r["trained_on"], int(r["trained_on_rows"])) for r in rows}
    return _commit(st, prev, ((r["job"], r["kind"], r["status"], r["doc"], r["error"]) for r in rows),
                   result, on_artifact, failures=failures, fingerprints=fps, kind=kind)


def _detail_rows(spark: Any, st: store_io.Store, latest: Any, used: set[str] | None = None) -> Any:
    """Committed stage and task rows with their run's job, as one frame (``_table`` says which),
    or None when the store has no stage rows."""
    from pyspark.sql import functions as F

    have = [t for t in ("stages", "tasks")
            if st.fs.get_file_info(f"{st.root.rstrip('/')}/{t}").type == pafs.FileType.Directory]
    if "stages" not in have:
        return None
    # New attributes for the job column: `latest` is cogrouped with this frame, and a column it
    # shares by lineage makes Spark's analyser call the grouping key ambiguous.
    jobs_of = latest.select(F.col("run_id").alias("_run_id"), F.col("job").alias("_job"))
    parts = [read_committed_spark(spark, st, t, used)
             .join(jobs_of, F.col("run_id") == F.col("_run_id")).drop("_run_id")
             .withColumnRenamed("_job", "job").withColumn("_table", F.lit(t))
             for t in have]
    return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1], allowMissingColumns=True)


def _make_udf(random_state: int, kind: str, force: bool, state: dict[tuple[str, str], tuple],
              stage_models: bool = True):
    def fit_pdf(pdf):  # one argument: Spark passes (key, frame) to a function of two
        return fit_job(pdf, None)

    def fit_job(pdf, detail):  # runs on the executors' Python workers
        import pandas as pd

        from sparkpredict import registry as R
        from sparkpredict.fitting import fit_group_safe
        from sparkpredict.retrain_plan import _judge, _not_refit

        job = str(pdf["job"].iloc[0])
        fp = R.runs_fingerprint(pdf)
        kinds, failing = _judge(state, job, fp, force, kind, stage_models)
        out = _not_refit(job, kinds, failing)
        if kinds:
            by = {} if detail is None or detail.empty else dict(tuple(detail.groupby("_table")))
            out += fit_group_safe(pdf, by.get("stages"), by.get("tasks"), runtime_model=R.KIND_RUNTIME in kinds,
                                  stage_models=R.KIND_STAGE in kinds, random_state=random_state, kind=kind)
        return pd.DataFrame([(*o, fp, len(pdf)) for o in out], columns=_UDF_COLUMNS)

    fit_pdf.with_detail = fit_job  # type: ignore[attr-defined]
    return fit_pdf


def _cogroup_udf(per_job: Callable[..., pd.DataFrame]):
    with_detail = per_job.with_detail  # type: ignore[attr-defined]

    def fit_cogroup(runs, detail):
        if runs.empty:  # stage rows of a job without committed runs: nothing to fit
            import pandas as pd

            return pd.DataFrame(columns=_UDF_COLUMNS)
        return with_detail(runs, detail)

    return fit_cogroup


def _per_partition(per_job: Callable[[pd.DataFrame], pd.DataFrame]):
    """mapInPandas function: apply ``per_job`` to each job of a partition sorted by job."""
    def fit_partition(batches):
        import pandas as pd

        carry = None
        for pdf in batches:
            if carry is not None and len(carry):
                pdf = pd.concat([carry, pdf], ignore_index=True)
            if pdf.empty:
                continue
            # Rows are sorted by job: the last job of this batch may continue in the next one.
            last = pdf["job"].iloc[-1]
            tail = (pdf["job"] == last).to_numpy()
            carry = pdf[tail]
            done = pdf[~tail]
            if len(done):
                yield pd.concat([per_job(g) for _, g in done.groupby("job", sort=True)], ignore_index=True)
        if carry is not None and len(carry):
            yield per_job(carry)

    return fit_partition


def _start_session(master: str, quiet: bool = True) -> Any:
    """A new session on ``master``; Spark's refusal (a master it cannot parse, a cluster it cannot
    reach) becomes one error line instead of a Py4J stack trace.

    ``quiet``: Spark's errors only, as ``sparkpredict sweep`` starts its sessions (its log4j
    configuration, given to the driver JVM through the environment for its start alone, and
    only where the JVM is not running yet and the user has no log4j configuration of their own).
    """
    from pyspark.sql import SparkSession

    from .sweep_session import quiet_spark_log

    os.environ.setdefault("PYSPARK_PYTHON", _python())
    try:
        with quiet_spark_log({}, quiet):
            return (SparkSession.builder.master(master).appName("sparkpredict-retrain")
                    .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    except Exception as exc:  # py4j wraps Spark's reason in its own exception types  # noqa: BLE001
        java = getattr(exc, "java_exception", None)
        reason = str(java.getMessage()) if java is not None else (str(exc).strip().splitlines() or [""])[0]
        raise InputError(f"Spark did not start with master {master!r}: {reason}",
                         "give --master local[N], local-cluster[N,C,MiB], yarn, spark://HOST:PORT or "
                         "k8s://URL and check that the cluster is reachable, or retrain with --local") from None


def _python() -> str:
    return sys.executable


__all__ = ["read_committed_spark", "read_runs_spark", "retrain_spark", "spark_path"]
