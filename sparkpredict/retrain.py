"""Retraining every job's models into the store's registry, locally or as a Spark job.

Both paths call :func:`fit_group` — the one fitting function — on the same rows of each job:

* **local** (:func:`retrain_local`): read the store with pyarrow, loop over the jobs.
* **Spark** (:func:`retrain_spark`): read the committed ``runs`` files from any Hadoop path with
  Spark, keep each run's latest row (``updated_ms``, as :meth:`Store.read` does), then
  ``groupBy("job").applyInPandas``: on the executors each job is fingerprinted and, when stale,
  fitted by :func:`fit_group`; its model's JSON comes back to the driver. One Spark job.

Both then go through :func:`_commit`: artifacts are written one by one, and the registry
snapshot is committed with one rename at the very end (see :mod:`sparkpredict.registry`), so a
retrain that dies halfway leaves the previous registry current and loadable.

Incremental: a job is refit only when its fingerprint (sha256 of its ``run_id:updated_ms``
lines) differs from the registry's, when its artifact is of an older format or store schema,
or with ``force``. :func:`retrain` picks the path: Spark when the jobs to refit number at least
:data:`CROSSOVER_JOBS` (measured by ``benchmarks/retrain_scaling.py``) and Spark can start.
"""
from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from . import registry as R
from .errors import InputError, SparkPredictError
from .store import io as store_io
from .store import schema as S

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: Jobs to refit at or above which Spark (``local[*]``) beats the local loop on a 2-core
#: machine, Spark start-up included, for the default ``auto`` models (and the ML kinds);
#: measured by benchmarks/retrain_scaling.py (see docs/retrain.md).
CROSSOVER_JOBS = 100
#: The same for a single equation (``kind="amdahl"``, ...): each fit is ~50x cheaper, so
#: Spark's start-up takes many more jobs to pay back.
CROSSOVER_JOBS_EQUATION = 1_000_000
CROSSOVER_ENV = "SPARKPREDICT_RETRAIN_CROSSOVER"

#: Output schema of the applyInPandas step: one row per job.
_UDF_SCHEMA = "job string, status string, doc string, error string"

@dataclass
class RetrainResult:
    """What one retrain did. ``snapshot`` is the committed registry file (None: nothing to commit)."""

    retrain_id: str
    fit_path: str                      # "local" or "spark"
    n_jobs: int                        # jobs with runs in the store
    refit: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    snapshot: str | None = None
    seconds: float = 0.0
    master: str | None = None

    @property
    def jobs_per_s(self) -> float:
        return len(self.refit) / self.seconds if self.seconds > 0 else float("nan")


# ---- the one fitting function -------------------------------------------------------------------
def _normalize(raw: "pd.DataFrame") -> "pd.DataFrame":
    """Same rows -> same frame, whichever path read them: runs-schema dtypes, fixed order."""
    cols = [c for c in S.TABLES["runs"].names if c in raw.columns]
    table = S.conform("runs", pa.Table.from_pandas(raw[cols], preserve_index=False))
    df = table.to_pandas()
    return df.sort_values(["start_ms", "run_id"], kind="stable", na_position="first").reset_index(drop=True)


def fit_group(raw_runs: "pd.DataFrame", *, random_state: int = 0, kind: str = "auto") -> dict:
    """Fit one job's whole-job model from its raw ``runs`` rows; return the artifact document.

    This is the one fitting function of both paths: :func:`sparkpredict.features.runs.runs_table`
    then :func:`sparkpredict.models.persist.fit_job`, on rows normalised by :func:`_normalize`.

    Parameters
    ----------
    raw_runs : DataFrame
        The store's ``runs`` rows of one job (latest row per run), in any order.
    random_state : int
        Passed to the fit; fits are deterministic for a given value.
    kind : str
        Model kind for :class:`sparkpredict.models.hybrid.JobRuntimeModel` (default ``auto``).

    Returns
    -------
    dict
        JSON-safe artifact document (:func:`sparkpredict.registry.make_artifact`) with a
        ``meta`` entry: model name, cv_mape, n_runs, training_range.
    """
    from .features.runs import runs_table
    from .models.persist import fit_job

    raw = _normalize(raw_runs)
    jobs = raw["job"].dropna().unique()
    if len(jobs) != 1:
        raise InputError(f"fit_group needs the runs of exactly one job, got {len(jobs)}")
    job = str(jobs[0])
    model = fit_job(runs_table(raw), random_state=random_state, kind=kind)
    doc = R.make_artifact(job, R.KIND_RUNTIME, model.to_dict(),
                          trained_on=R.fingerprint(raw["run_id"], raw["updated_ms"]),
                          trained_on_rows=len(raw))
    doc["meta"] = {
        "model_name": str(model.name_),
        "fit_kind": kind,
        "cv_mape": _float_or_none(model.cv_mape_),
        "n_runs": int(model.n_runs_),
        "training_range": _jsonable(model.training_range_),
    }
    return doc


def fit_group_safe(raw_runs: "pd.DataFrame", **kw: Any) -> tuple[str, str | None, str | None]:
    """(job, artifact JSON or None, error or None): a job that cannot be fitted does not stop the others."""
    job = str(raw_runs["job"].iloc[0]) if len(raw_runs) else ""
    try:
        doc = fit_group(raw_runs, **kw)
    except (SparkPredictError, ValueError) as exc:
        return job, None, f"{type(exc).__name__}: {exc}"
    return job, json.dumps(doc, sort_keys=True), None


def _float_or_none(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def _jsonable(v: Any) -> Any:
    if v is None:
        return None
    return json.loads(json.dumps(v, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


# ---- planning: which jobs need a refit ----------------------------------------------------------
def _prev_state(prev: "pd.DataFrame") -> dict[str, tuple]:
    """job -> what decides staleness, small enough to ship to Spark's Python workers."""
    cur = prev[prev.model_kind == R.KIND_RUNTIME]
    return {r.job: (r.trained_on, _int(r.artifact_version), _int(r.model_format_version),
                    _int(r.store_schema_version), r.fit_kind) for r in cur.itertuples(index=False)}


def _is_stale(state: tuple | None, fp: str, force: bool, kind: str, model_format: int) -> bool:
    """Runs changed, no model yet, or a model of another artifact/model/store format or kind."""
    return force or state is None or state != (fp, R.ARTIFACT_VERSION, model_format, S.SCHEMA_VERSION, kind)


def _plan(prev: "pd.DataFrame", fingerprints: dict[str, tuple[str, int]], force: bool,
          kind: str = "auto") -> list[str]:
    """The jobs of ``fingerprints`` that need a refit, sorted."""
    state, model_format = _prev_state(prev), R.runtime_model_format()
    return [job for job, (fp, _n) in sorted(fingerprints.items())
            if _is_stale(state.get(job), fp, force, kind, model_format)]


def _check_kind(kind: str) -> None:
    from .models.hybrid import KINDS

    if kind not in KINDS:
        raise InputError(f"unknown model kind {kind!r}", f"use one of {', '.join(KINDS)}")


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _only(fps: dict[str, tuple[str, int]], jobs: Iterable[str] | None) -> dict[str, tuple[str, int]]:
    if jobs is None:
        return fps
    keep = set(jobs)
    return {j: v for j, v in fps.items() if j in keep}


def _local_fingerprints(raw: "pd.DataFrame") -> dict[str, tuple[str, int]]:
    raw = raw[raw.job.notna() & raw.run_id.notna()]
    return {str(j): (R.fingerprint(g.run_id, g.updated_ms), len(g)) for j, g in raw.groupby("job", sort=True)}


# ---- commit: artifacts, then the registry in one rename -----------------------------------------
def _commit(st: store_io.Store, prev: "pd.DataFrame", results: Iterable[tuple[str, str | None, str | None]],
            result: RetrainResult, on_artifact: Callable[[int], None] | None) -> RetrainResult:
    import pandas as pd

    rows = {tuple(r[k] for k in R.KEY): r for r in prev.to_dict("records")}
    now_ms = int(time.time() * 1000)
    written = 0
    for job, doc_json, err in results:
        if err is not None or doc_json is None:
            result.failed[job] = err or "no model"
            log.warning("retrain: job %r not refit: %s", job, err)
            continue
        doc = json.loads(doc_json)
        meta = doc.pop("meta")
        key = (job, R.KIND_RUNTIME, "")
        version = int(rows[key]["version"]) + 1 if key in rows else 1
        rel = R.artifact_relpath(job, R.KIND_RUNTIME, version, result.retrain_id)
        R.write_artifact(st, rel, doc)
        written += 1
        result.refit.append(job)
        if on_artifact is not None:
            on_artifact(written)  # test hook: raising here must leave the previous registry current
        rows[key] = {
            "job": job, "model_kind": R.KIND_RUNTIME, "signature": "", "version": version,
            "trained_at_ms": now_ms, "n_runs": meta["n_runs"], "cv_mape": meta["cv_mape"],
            "model_name": meta["model_name"], "fit_kind": meta["fit_kind"], "training_range_json": json.dumps(meta["training_range"]),
            "trained_on": doc["trained_on"], "trained_on_rows": doc["trained_on_rows"], "artifact": rel,
            "artifact_version": R.ARTIFACT_VERSION, "model_format_version": doc["model_format_version"],
            "store_schema_version": S.SCHEMA_VERSION,
            "sparkpredict_version": doc["sparkpredict_version"], "retrain_id": result.retrain_id,
            "fit_path": result.fit_path, "registry_version": R.REGISTRY_VERSION,
        }
    result.refit.sort()
    if written:
        result.snapshot = R.commit_registry(st, pd.DataFrame(list(rows.values())), result.retrain_id)
    else:
        result.snapshot = R.current_snapshot(st)
    return result


# ---- the local path -----------------------------------------------------------------------------
def retrain_local(store: Any = None, *, force: bool = False, random_state: int = 0, jobs: Iterable[str] | None = None,
                  kind: str = "auto",
                  on_artifact: Callable[[int], None] | None = None) -> RetrainResult:
    """Refit stale jobs in this process (no JVM). See :func:`retrain` for the parameters."""
    _check_kind(kind)
    t0 = time.perf_counter()
    st = store_io.open(store)
    result = RetrainResult(retrain_id=R.new_retrain_id(), fit_path="local", n_jobs=0)
    raw = st.runs()
    fps = _only(_local_fingerprints(raw), jobs)
    prev = R.read_registry(st)
    stale = _plan(prev, fps, force, kind)
    result.n_jobs = len(fps)
    result.unchanged = sorted(set(fps) - set(stale))
    groups = {str(j): g for j, g in raw[raw.job.notna() & raw.run_id.notna()].groupby("job", sort=True)}

    def fits() -> Iterator[tuple[str, str | None, str | None]]:
        for job in stale:
            yield fit_group_safe(groups[job], random_state=random_state, kind=kind)

    _commit(st, prev, fits(), result, on_artifact)
    result.seconds = time.perf_counter() - t0
    return result


# ---- the Spark path -----------------------------------------------------------------------------
def spark_path(st: store_io.Store) -> str:
    """The store's path as Spark's Hadoop layer reads it (local folders as file://)."""
    return st.path if "://" in st.path else "file://" + st.path


def _spark_schema(table: str):
    from pyspark.sql import types as T

    m = {pa.string(): T.StringType(), pa.int64(): T.LongType(), pa.int32(): T.IntegerType(),
         pa.float64(): T.DoubleType(), pa.bool_(): T.BooleanType()}
    return T.StructType([T.StructField(f.name, m[f.type], True) for f in S.TABLES[table]])


def read_runs_spark(spark: Any, st: store_io.Store):
    """The committed runs of the store as a Spark DataFrame, latest row per run_id.

    Every visible ``runs/part-*.parquet`` is a commit mark, so all of them are read; ties on
    ``updated_ms`` go to the later batch (file name), as in :meth:`Store.read`.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = (spark.read.schema(_spark_schema("runs")).option("pathGlobFilter", "part-*.parquet")
          .parquet(f"{spark_path(st)}/runs").withColumn("_file", F.col("_metadata.file_name")))
    w = Window.partitionBy("run_id").orderBy(F.col("updated_ms").desc_nulls_last(), F.col("_file").desc())
    # Deduplicate first, then drop job-less runs: the same order as Store.read + the local path.
    return (df.where(F.col("run_id").isNotNull())
            .withColumn("_rn", F.row_number().over(w)).where("_rn = 1").drop("_rn", "_file")
            .where(F.col("job").isNotNull()))


def read_committed_spark(spark: Any, st: store_io.Store, table: str):
    """Rows of ``stages``/``tasks``/``executors`` whose batch has a runs file (the commit protocol)."""
    from pyspark.sql import functions as F

    def batch(col):
        return F.regexp_extract(col, r"^part-(.*)\.parquet$", 1)

    base = spark_path(st)
    marks = (spark.read.schema(_spark_schema("runs")).option("pathGlobFilter", "part-*.parquet")
             .parquet(f"{base}/runs").select(batch(F.col("_metadata.file_name")).alias("_batch")).distinct())
    rows = (spark.read.schema(_spark_schema(table)).option("pathGlobFilter", "part-*.parquet")
            .parquet(f"{base}/{table}").withColumn("_batch", batch(F.col("_metadata.file_name"))))
    return rows.join(F.broadcast(marks), "_batch", "left_semi").drop("_batch")


def retrain_spark(store: Any = None, *, spark: Any = None, master: str | None = None, force: bool = False,
                  random_state: int = 0, jobs: Iterable[str] | None = None, kind: str = "auto",
                  partitions: int | None = None, method: str = "map",
                  on_artifact: Callable[[int], None] | None = None) -> RetrainResult:
    """Refit stale jobs inside Spark (see :func:`retrain`).

    One Spark job: read the committed runs, keep each run's latest row, group by job; each
    group is fingerprinted on the executor and fitted only when stale (the previous registry's
    state travels with the function). ``spark``: an active SparkSession to use (left running);
    otherwise one is started on ``master`` (default ``local[*]``) and stopped at the end.
    ``partitions``: fit tasks (default 4 x default parallelism). ``method``: ``"map"``
    (default; ``repartition(job)`` + ``mapInPandas``, one Python call per partition) or
    ``"apply"`` (``groupBy(job).applyInPandas``, one call per job: same results, 3-4x the
    per-job overhead measured here, see docs/retrain.md).
    """
    _check_kind(kind)
    if method not in ("map", "apply"):
        raise InputError(f"unknown Spark method {method!r}", "use 'map' or 'apply'")
    t0 = time.perf_counter()
    st = store_io.open(store)
    own = spark is None
    if own:
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", _python())
        spark = (SparkSession.builder.master(master or "local[*]").appName("sparkpredict-retrain")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    result = RetrainResult(retrain_id=R.new_retrain_id(), fit_path="spark", n_jobs=0,
                           master=spark.sparkContext.master)
    saved = {k: spark.conf.get(k, None) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    # A few tasks per core for every shuffle: the runs table is small, and Spark's default of
    # 200 partitions costs more in task overhead than the work. Adaptive execution would
    # coalesce the fit step's tiny partitions into one task and serialise the fits.
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions or spark.sparkContext.defaultParallelism * 4))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        prev = R.read_registry(st)
        rows: list = []
        if st.fs.get_file_info(f"{st.root.rstrip('/')}/runs").type == pafs.FileType.Directory:
            from pyspark.sql import functions as F

            latest = read_runs_spark(spark, st)
            if jobs is not None:
                latest = latest.where(F.col("job").isin(sorted(set(jobs))))
            udf = _make_udf(random_state, kind, force, _prev_state(prev))
            if method == "apply":
                rows = latest.groupBy("job").applyInPandas(udf, _UDF_SCHEMA).collect()
            else:
                # Same function per job, but one Python call per partition instead of per job:
                # hash-partition by job, sort, and cut the Arrow batches at job boundaries.
                n = int(spark.conf.get("spark.sql.shuffle.partitions"))
                rows = (latest.repartition(n, "job").sortWithinPartitions("job")
                        .mapInPandas(_per_partition(udf), _UDF_SCHEMA).collect())
        rows.sort(key=lambda r: r["job"])
        result.n_jobs = len(rows)
        result.unchanged = [r["job"] for r in rows if r["status"] == "unchanged"]
        _commit(st, prev, ((r["job"], r["doc"], r["error"]) for r in rows if r["status"] != "unchanged"),
                result, on_artifact)
    finally:
        for k, v in saved.items():
            if v is not None:
                spark.conf.set(k, v)
        if own:
            spark.stop()
    result.seconds = time.perf_counter() - t0
    return result


def _make_udf(random_state: int, kind: str, force: bool, state: dict[str, tuple]):
    def fit_pdf(pdf):  # runs on the executors' Python workers
        import pandas as pd

        from sparkpredict import registry as R
        from sparkpredict.retrain import _is_stale, fit_group_safe

        job = str(pdf["job"].iloc[0])
        fp = R.fingerprint(pdf["run_id"], pdf["updated_ms"])
        if not _is_stale(state.get(job), fp, force, kind, R.runtime_model_format()):
            return pd.DataFrame({"job": [job], "status": ["unchanged"], "doc": [None], "error": [None]})
        job, doc, err = fit_group_safe(pdf, random_state=random_state, kind=kind)
        return pd.DataFrame({"job": [job], "status": ["fit" if err is None else "failed"],
                             "doc": [doc], "error": [err]})

    return fit_pdf


def _per_partition(per_job: Callable[["pd.DataFrame"], "pd.DataFrame"]):
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


def _python() -> str:
    import sys

    return sys.executable


# ---- choosing the path --------------------------------------------------------------------------
def crossover_jobs(kind: str = "auto") -> int:
    """Jobs to refit from which the Spark path is faster than the local loop, for ``kind``.

    ``$SPARKPREDICT_RETRAIN_CROSSOVER`` overrides the measured values (any kind).
    """
    env = os.environ.get(CROSSOVER_ENV)
    if env:
        try:
            return max(0, int(env))
        except ValueError as exc:
            raise InputError(f"${CROSSOVER_ENV}={env!r} is not a number of jobs",
                             f"set {CROSSOVER_ENV} to an integer, or unset it") from exc
    from .models.hybrid import EQUATION_KINDS

    return CROSSOVER_JOBS_EQUATION if kind in EQUATION_KINDS else CROSSOVER_JOBS


def spark_available() -> bool:
    """pyspark importable and a java on PATH (or JAVA_HOME): the Spark path can start."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("pyspark") is None:
        return False
    return bool(os.environ.get("JAVA_HOME") or shutil.which("java"))


def plan(store: Any = None, *, force: bool = False, kind: str = "auto") -> tuple[list[str], int]:
    """(jobs a retrain would refit, jobs in the store), read without Spark."""
    st = store_io.open(store)
    fps = _local_fingerprints(st.runs())
    return _plan(R.read_registry(st), fps, force, kind), len(fps)


def choose_path(n_stale: int, kind: str = "auto") -> str:
    """"spark" when at least :func:`crossover_jobs` jobs need fitting and Spark can start."""
    return "spark" if n_stale >= max(1, crossover_jobs(kind)) and spark_available() else "local"


def retrain(store: Any = None, *, use_spark: bool | None = None, master: str | None = None,
            force: bool = False, kind: str = "auto", random_state: int = 0, spark: Any = None,
            on_artifact: Callable[[int], None] | None = None) -> RetrainResult:
    """Refit the models of every job with new runs and commit them to the store's registry.

    Parameters
    ----------
    store : str, path or Store, optional
        The history store (default: the configured store). Spark reads it from any Hadoop path.
    use_spark : bool, optional
        True: the Spark path; False: the local loop; None (default): Spark when at least
        :func:`crossover_jobs` jobs need a refit, else the local loop.
    master : str, optional
        Spark master for the Spark path (default ``local[*]``); implies ``use_spark`` if given.
    force : bool
        Refit every job, changed or not.
    kind : str
        Model kind of every fit (``auto`` by default; see docs/models.md). Jobs registered with
        another kind are refit.
    random_state : int
        Seed passed to every fit (fits are deterministic).
    spark : SparkSession, optional
        Use this session for the Spark path instead of starting one.
    on_artifact : callable, optional
        Test hook, called with the number of artifacts written after each one; an exception it
        raises aborts the retrain before the registry commit (the previous registry stays current).

    Returns
    -------
    RetrainResult

    Examples
    --------
    >>> from sparkpredict.retrain import retrain
    >>> res = retrain("/data/sparkpredict-store")          # doctest: +SKIP
    >>> res.fit_path, len(res.refit), res.snapshot           # doctest: +SKIP
    ('local', 12, 'part-1795969908242-retrain-85da47e39eb6.parquet')
    """
    if use_spark is None:
        if master is not None or spark is not None:
            use_spark = True
        else:
            stale, _n = plan(store, force=force, kind=kind)
            use_spark = choose_path(len(stale), kind) == "spark"
            log.info("retrain: %d job(s) to refit, crossover %d -> %s path", len(stale), crossover_jobs(kind),
                     "spark" if use_spark else "local")
    if use_spark:
        return retrain_spark(store, spark=spark, master=master, force=force, kind=kind,
                             random_state=random_state, on_artifact=on_artifact)
    return retrain_local(store, force=force, kind=kind, random_state=random_state, on_artifact=on_artifact)


__all__ = ["retrain", "retrain_local", "retrain_spark", "fit_group", "RetrainResult", "plan", "choose_path",
           "crossover_jobs", "read_runs_spark", "read_committed_spark", "CROSSOVER_JOBS"]
