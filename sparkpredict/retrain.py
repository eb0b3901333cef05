"""Retraining every job's models into the store's registry, locally or as a Spark job.

Both paths call :func:`~sparkpredict.fitting.fit_group` and
:func:`~sparkpredict.fitting.fit_stage_group` (in :mod:`sparkpredict.fitting`, re-exported here),
the one fitting function of each model kind, on the same rows of each job:

* **local** (:func:`retrain_local`): read the store with pyarrow, loop over the jobs.
* **Spark** (``retrain_spark``, in :mod:`sparkpredict.retrain_spark` and re-exported here): read
  the committed ``runs`` files from any Hadoop path with Spark, keep each run's latest row
  (``updated_ms``, as :meth:`Store.read` does), group by job (cogrouped with the job's stage and
  task rows when there are some): on the executors each job is fingerprinted and, when stale,
  fitted; its models' JSON comes back to the driver. One Spark job.

Both then go through :func:`_commit`: artifacts are written one by one, and the registry
snapshot is committed with one rename at the very end, on top of the registry as it is then
(see :mod:`sparkpredict.registry`), so a retrain that dies halfway leaves the previous registry
current and loadable, and an overlapping retrain's models are kept.

Incremental, per model kind: which models are stale, current or still failing (their fit failed
on the runs they have now), and the records of failed fits, are judged in
:mod:`sparkpredict.retrain_plan`.
:func:`retrain` picks the path: Spark when the jobs to refit number at least
:data:`CROSSOVER_JOBS` (measured by ``benchmarks/retrain_scaling.py``) and Spark can start.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import registry as R
from . import registry_commit as RC
from .errors import InputError
from .fitting import Outcome, fit_group, fit_group_safe, fit_stage_group
from .retrain_plan import (
    Failures,
    _failure_row,
    _fit_error,
    _label,
    _local_fingerprints,
    _not_refit,
    _only,
    _plan,
    _prev_state,
    _skipped_error,
    _stale,
    _still_failing,
    check_jobs,
    refit_reasons,
)
from .store import io as store_io
from .store import schema as S

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: Jobs to refit at or above which Spark (``local[*]``) beats the local loop on a 2-core
#: machine, JVM start-up included, for the default ``auto`` models (and the ML kinds): measured
#: 221 by benchmarks/retrain_scaling.py on 1,000 jobs (quiet machine; see docs/retrain.md), then
#: 167 (Intel Xeon, 2026-11-30), 269 (AMD EPYC, 2026-12-02) and 260 (AMD EPYC, 2026-12-07).
CROSSOVER_JOBS = 220
#: The same for a single equation (``kind="amdahl"``, ...): each fit is ~10x cheaper, so Spark's
#: start-up takes more jobs to pay back: measured 1,279 and 1,806 (Intel Xeon, 2026-11-29/30) and
#: 3,691 and 2,237 (AMD EPYC, 2026-12-02/07, whose local loop is relatively faster); 2,600 lies within a
#: factor 2 of each, where the Spark path loses or wins by seconds either way.
CROSSOVER_JOBS_EQUATION = 2600
CROSSOVER_ENV = "SPARKPREDICT_RETRAIN_CROSSOVER"
#: Spark start-up the crossovers above pay back (new JVM, session, an empty retrain; measured 13.2 s).
SPARK_STARTUP_S = 13.2
#: Seconds a job's stage-level model costs more on the local loop than on Spark ``local[2]``:
#: ``benchmarks/stage_retrain_scaling.py`` measured 1.64 vs 0.99 s a job of 24 recorded runs for
#: both models, less the whole-job model's 0.06 s (13.2 s / 220 jobs). So with stage models Spark
#: pays back from about 22 jobs (Intel Xeon, 2026-11-29). A faster AMD EPYC saved 0.30-0.32 s a
#: job (two runs, 2026-12-02), a crossover of 39-46. 0.40 s puts the crossover at 29, within a
#: factor 2 of both machines', as the whole-job crossovers are.
STAGE_FIT_SAVING_S = 0.40

@dataclass
class RetrainResult:
    """What one retrain did. ``snapshot`` is the committed registry file (None: nothing to commit)."""

    retrain_id: str
    fit_path: str                      # "local" or "spark"
    n_jobs: int                        # jobs with runs in the store
    refit: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: every model the retrain could not fit, skipped or failed: label (the job, or "JOB (stage
    #: model)") -> why, the error's message and fix; :attr:`skipped` and :attr:`errors` split it
    failed: dict[str, str] = field(default_factory=dict)
    stage_refit: list[str] = field(default_factory=list)    # jobs whose stage model was refit
    stage_skipped: list[str] = field(default_factory=list)  # refit jobs without stage rows
    snapshot: str | None = None
    seconds: float = 0.0
    #: the master of the Spark session that ran the fits; None where none was started
    master: str | None = None
    #: the keys of ``failed`` not tried again: their fit failed before on the very runs they have now
    still_failing: list[str] = field(default_factory=list)
    #: a Spark session ran the fits; False on the Spark path when the store's registry answered
    #: (nothing to refit) and no session was started
    spark_started: bool = False
    #: the keys of ``failed`` whose runs cannot support the model yet (too few usable runs, none
    #: that succeeded, all at one executor count: :data:`~sparkpredict.retrain_plan.SKIPPED_ERRORS`)
    not_enough_runs: list[str] = field(default_factory=list)
    #: job -> why its whole-job model was refit (:func:`~sparkpredict.retrain_plan.refit_reason`)
    refit_reasons: dict[str, str] = field(default_factory=dict)
    #: why the fits ran on another path than the one chosen by the number of jobs (None: they did not)
    path_note: str | None = None

    @property
    def jobs_per_s(self) -> float:
        return len(self.refit) / self.seconds if self.seconds > 0 else float("nan")

    @property
    def skipped(self) -> dict[str, str]:
        """The models of ``failed`` skipped for their runs (a job too young to fit): no error."""
        keep = set(self.not_enough_runs)
        return {k: v for k, v in self.failed.items() if k in keep}

    @property
    def errors(self) -> dict[str, str]:
        """The models of ``failed`` whose fit raised an error: what fails the retrain."""
        skip = set(self.not_enough_runs)
        return {k: v for k, v in self.failed.items() if k not in skip}

    @property
    def exit_code(self) -> int:
        """1 when a model's fit failed with an error (:attr:`errors`), else 0: the exit status of
        ``sparkpredict retrain`` and ``jobs/retrain.py`` alike. A model skipped for its runs
        (:attr:`skipped`: a job too young to fit) is no error: a store whose jobs are all too
        young exits 0. The errors include the models still failing (not tried again on the same
        runs), so the status follows the registry's state, not whether the fit was repeated: a
        retrain that finds nothing to do exits as the one that recorded the error did. The
        models that were fitted are committed either way."""
        return 1 if self.errors else 0

    def to_dict(self) -> dict[str, Any]:
        """The result as ``sparkpredict retrain --json`` and ``jobs/retrain.py`` print it:
        ``skipped`` and ``failed`` map each model not refit to why (:attr:`skipped`,
        :attr:`errors`), ``still_failing`` names those of them not tried again."""
        return {
            "retrain_id": self.retrain_id, "path": self.fit_path, "master": self.master, "jobs": self.n_jobs,
            "refit": self.refit, "stage_refit": self.stage_refit, "stage_skipped": self.stage_skipped,
            "unchanged": len(self.unchanged), "skipped": self.skipped, "failed": self.errors,
            "still_failing": self.still_failing, "spark_started": self.spark_started,
            "snapshot": self.snapshot, "seconds": round(self.seconds, 3), "exit_code": self.exit_code,
            "refit_reasons": self.refit_reasons, "path_note": self.path_note,
        }


def check_kind(kind: str) -> None:
    """Refuse a model kind no fit knows (:data:`sparkpredict.models.hybrid.KINDS`): the check both
    paths make before reading the store, and ``--dry-run`` with them."""
    from .models.hybrid import KINDS

    if kind not in KINDS:
        raise InputError(f"unknown model kind {kind!r}", f"use one of {', '.join(KINDS)}")


# ---- commit: artifacts, then the registry in one rename -----------------------------------------
def _commit(st: store_io.Store, prev: pd.DataFrame, results: Iterable[Outcome],
            result: RetrainResult, on_artifact: Callable[[int], None] | None, *,
            failures: Failures | None = None, fingerprints: dict[str, tuple[str, int]] | None = None,
            kind: str = "auto") -> RetrainResult:
    """Write each fitted model's artifact, then commit their rows, and the records of the fits
    that failed, on top of the registry as it is at the end
    (:func:`sparkpredict.registry_commit.commit_update`), not as ``prev`` had it.

    ``results``: the outcomes of both paths, fits and :func:`_not_refit` alike. ``failures``: the
    failed-fit records read with ``prev`` (what a "still_failing" model failed with);
    ``fingerprints``: job -> (fingerprint, rows) of the runs judged, which a new failure records;
    ``kind``: the model kind asked of the fits."""
    failures = failures or {}
    versions = {(r["job"], r["model_kind"], r["signature"] or ""): int(r["version"])
                for r in prev.to_dict("records")}
    now_ms = int(time.time() * 1000)
    updates: list[dict] = []
    marked = False  # the running mark, from before the first artifact's write: unmarked however that ends
    failed_rows: list[dict] = []
    try:
        for job, model_kind, status, doc_json, err in results:
            if status == "unchanged":
                result.unchanged.append(job)
                continue
            if status == "still_failing":
                label = _label(job, model_kind)
                rec = failures.get((job, model_kind), {})
                error_type, why = _fit_error(rec.get("error"), rec.get("error_type"))
                _not_fitted(result, label, error_type, why or "its fit failed on these runs before")
                result.still_failing.append(label)
                continue
            if status == "skipped":
                result.stage_skipped.append(job)
                fp = (fingerprints or {}).get(job)
                if fp is not None and (job, R.KIND_STAGE, "") in versions:
                    # an earlier sparkpredict fitted one (a shell's runs that read nothing): the
                    # record keeps it from reading "its stage model is behind" at every retrain
                    failed_rows.append(_failure_row(
                        job, model_kind, fp, kind, "its runs give a stage model nothing to learn (no "
                        "stage rows with task times, or no input size)", now_ms, result.retrain_id,
                        result.fit_path, failures, "DegenerateDataError"))
                continue
            if status != "fit" or doc_json is None:
                error_type, why = _fit_error(err)
                _not_fitted(result, _label(job, model_kind), error_type, why or "no model")
                log.log(logging.INFO if _skipped_error(error_type) else logging.WARNING,
                        "retrain: %s model of job %r not refit: %s", model_kind, job, why)
                fp = (fingerprints or {}).get(job)
                if fp is not None:  # not tried again until its runs change
                    failed_rows.append(_failure_row(job, model_kind, fp, kind, why or "no model", now_ms,
                                                    result.retrain_id, result.fit_path, failures, error_type))
                continue
            doc = json.loads(doc_json)
            meta = doc.pop("meta")
            # the number this retrain expects; the commit renumbers it if another retrain took it
            version = versions.get((job, model_kind, ""), 0) + 1
            rel = R.artifact_relpath(job, model_kind, version, result.retrain_id)
            if not marked:  # from the first artifact on, `store clean` must leave them alone
                RC.mark_running(st, result.retrain_id)
                marked = True
            # this process's code, not the worker's: a worker given the package zipped reads no file to hash
            doc["sparkpredict_version"] = R.fitted_by()
            R.write_artifact(st, rel, doc)
            (result.refit if model_kind == R.KIND_RUNTIME else result.stage_refit).append(job)
            updates.append({
                "job": job, "model_kind": model_kind, "signature": "", "version": version,
                "trained_at_ms": now_ms, "n_runs": meta["n_runs"], "cv_mape": meta["cv_mape"],
                "model_name": meta["model_name"], "fit_kind": meta["fit_kind"],
                "training_range_json": json.dumps(meta["training_range"]),
                "trained_on": doc["trained_on"], "trained_on_rows": doc["trained_on_rows"], "artifact": rel,
                "artifact_version": R.ARTIFACT_VERSION, "model_format_version": doc["model_format_version"],
                "store_schema_version": S.SCHEMA_VERSION,
                "sparkpredict_version": doc["sparkpredict_version"], "retrain_id": result.retrain_id,
                "fit_path": result.fit_path, "registry_version": R.REGISTRY_VERSION,
            })
            if on_artifact is not None:
                on_artifact(len(updates))  # test hook: raising here must leave the previous registry current
        for names in (result.refit, result.stage_refit, result.stage_skipped, result.unchanged,
                      result.still_failing, result.not_enough_runs):
            names.sort()
        if fingerprints:
            state = _prev_state(prev, failures)
            result.refit_reasons = refit_reasons(state, fingerprints, result.refit, kind,
                                                 _prev_state(prev, failures, R.present_artifacts(st)))
        result.snapshot = RC.commit_update(st, updates + failed_rows, result.retrain_id)
    finally:
        # a first artifact's write that failed left the mark too, and `store clean` kept that
        # retrain's leftovers for a day
        if marked:
            RC.unmark_running(st, result.retrain_id)
    return result


def _not_fitted(result: RetrainResult, label: str, error_type: str | None, why: str) -> None:
    """Record a model not refit: in ``failed``, and as skipped when its runs were the reason."""
    result.failed[label] = why
    if _skipped_error(error_type):
        result.not_enough_runs.append(label)


# ---- the local path -----------------------------------------------------------------------------
def retrain_local(store: Any = None, *, force: bool = False, random_state: int = 0, jobs: Iterable[str] | None = None,
                  kind: str = "auto", stage_models: bool = True,
                  on_artifact: Callable[[int], None] | None = None) -> RetrainResult:
    """Refit stale jobs in this process (no JVM). See :func:`retrain` for the parameters."""
    check_kind(kind)
    t0 = time.perf_counter()
    st = store_io.open(store)
    RC.check_writable(st)  # before the fits, not after them all
    result = RetrainResult(retrain_id=R.new_retrain_id(), fit_path="local", n_jobs=0)
    raw = st.runs()
    jobs = check_jobs(jobs, raw["job"], f"store {st.path!r}")
    fps = _only(_local_fingerprints(raw), jobs)
    prev, failures = R.read_registry_state(st)
    judged = _plan(_prev_state(prev, failures, R.present_artifacts(st)), fps, force, kind, stage_models)
    stale = _stale(judged)
    result.n_jobs = len(fps)
    raw = raw[raw.job.notna() & raw.run_id.notna()]
    groups = {str(j): g for j, g in raw.groupby("job", sort=True)}
    detail: dict[str, dict] = {"stages": {}, "tasks": {}}
    if any(R.KIND_STAGE in kinds for kinds in stale.values()):
        job_of = dict(zip(raw["run_id"], raw["job"].astype(str)))
        for table in detail:
            rows = st.read(table)
            detail[table] = {j: g for j, g in rows.groupby(rows["run_id"].map(job_of), sort=False)}

    def fits() -> Iterator[Outcome]:
        for job, (kinds, failing) in judged.items():
            yield from _not_refit(job, kinds, failing)
            if kinds:
                yield from fit_group_safe(groups[job], detail["stages"].get(job), detail["tasks"].get(job),
                                          runtime_model=R.KIND_RUNTIME in kinds, stage_models=R.KIND_STAGE in kinds,
                                          random_state=random_state, kind=kind)

    _commit(st, prev, fits(), result, on_artifact, failures=failures, fingerprints=fps, kind=kind)
    result.seconds = time.perf_counter() - t0
    return result


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


def check_master(master: str) -> None:
    """Refuse a master URL Spark would refuse only after its JVM started (``local[x]``): the
    check ``sparkpredict submit`` makes; and ``yarn`` where spark-submit would find no Hadoop
    configuration (HADOOP_CONF_DIR, YARN_CONF_DIR)."""
    from .capture.submit_args import check_master as check_submit_master

    check_submit_master(["--master", master])
    if master == "yarn" and not _hadoop_conf_known():
        # spark-submit refuses it only from inside the JVM start: 20 lines of Java trace, then
        # JAVA_GATEWAY_EXITED, which named neither variable
        raise InputError("--master yarn needs the cluster's Hadoop configuration: neither HADOOP_CONF_DIR "
                         "nor YARN_CONF_DIR is set",
                         "export HADOOP_CONF_DIR (or YARN_CONF_DIR) as the folder of the cluster's "
                         "core-site.xml and yarn-site.xml (often /etc/hadoop/conf), or retrain with --local")


# a line of spark-env.sh that sets one of them: ``[export ]NAME=value`` at the line's start or
# after a shell separator (``[ -d x ] && export NAME=x``, ``then NAME=x``); what follows `=` is
# read up to the next blank or separator
_HADOOP_CONF_SET = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?(?:HADOOP_CONF_DIR|YARN_CONF_DIR)=([^\s;&|)]*)")


def _sets_hadoop_conf(line: str) -> bool:
    """Whether one line of spark-env.sh sets HADOOP_CONF_DIR or YARN_CONF_DIR to something: a
    comment (a `#` at the start or after a blank onward, as Spark's spark-env.sh.template ships
    ``# - HADOOP_CONF_DIR, to point Spark towards Hadoop configuration files``) and an empty
    assignment (``HADOOP_CONF_DIR=``, ``=""``) do not count. A shell form beyond this
    (``: ${HADOOP_CONF_DIR:=...}``) is not recognised: export the variable instead."""
    code = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
    return any(m.group(1).strip("\"'") for m in _HADOOP_CONF_SET.finditer(code))


def _hadoop_conf_known() -> bool:
    """HADOOP_CONF_DIR or YARN_CONF_DIR set here, or in the spark-env.sh that spark-submit sources
    (``$SPARK_CONF_DIR``, else its Spark home's ``conf/``, a pip pyspark's folder without
    ``$SPARK_HOME``): where Spark on YARN finds the cluster. spark-env.sh counts only where a line
    sets one (:func:`_sets_hadoop_conf`; spark-submit sources it with ``set -a``, so an
    assignment without ``export`` is exported too), not where its text merely names one."""
    from .capture.submit_args import spark_conf_dir

    if os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR"):
        return True
    # never the working folder's conf/, which spark-submit does not read: one there that set
    # HADOOP_CONF_DIR let yarn through to the JVM's trace
    conf = spark_conf_dir()
    if conf is None:
        return False
    try:
        with open(os.path.join(conf, "spark-env.sh"), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    return any(_sets_hadoop_conf(line) for line in lines)


def spark_available() -> bool:
    """pyspark importable and a java on PATH (or JAVA_HOME): the Spark path can start."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("pyspark") is None:
        return False
    return bool(os.environ.get("JAVA_HOME") or shutil.which("java"))


def plan(store: Any = None, *, force: bool = False, kind: str = "auto",
         stage_models: bool = True) -> tuple[list[str], int]:
    """(jobs a retrain would refit, jobs in the store), read without Spark."""
    check_kind(kind)
    st = store_io.open(store)
    judged = _plan_store(st, st.runs(), force, kind, stage_models)
    return sorted(_stale(judged)), len(judged)


def _plan_store(st: Any, runs: pd.DataFrame, force: bool, kind: str,
                stage_models: bool = True) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    prev, failures = R.read_registry_state(st)
    return _plan(_prev_state(prev, failures, R.present_artifacts(st)), _local_fingerprints(runs), force, kind, stage_models)


def choose_path(n_stale: int, kind: str = "auto", n_stage: int = 0) -> str:
    """"spark" when at least :func:`crossover_jobs` jobs need fitting and Spark can start.

    ``n_stage`` of the ``n_stale`` jobs also get a stage-level model; each saves
    :data:`STAGE_FIT_SAVING_S` more on Spark, so it counts as that many seconds' worth of extra
    whole-job fits (unless ``$SPARKPREDICT_RETRAIN_CROSSOVER`` fixes the count).
    """
    n = crossover_jobs(kind)
    weighted = float(n_stale)
    if n_stage and CROSSOVER_ENV not in os.environ and n > 0:
        weighted += n_stage * STAGE_FIT_SAVING_S / (SPARK_STARTUP_S / n)
    return "spark" if weighted >= max(1, n) and spark_available() else "local"


def plan_path(store: Any = None, *, force: bool = False, kind: str = "auto",
              stage_models: bool = True, jobs: Iterable[str] | None = None) -> dict[str, Any]:
    """What :func:`retrain` would do without ``use_spark``: ``{"to_refit", "jobs", "stage_jobs",
    "path", "still_failing", "still_skipped", "refit_reasons"}`` (jobs to refit, jobs in the
    store, those of them with stage models, local or spark, the models not tried again because
    their fit failed on the runs they have now, named as :attr:`RetrainResult.failed` names them,
    those of them skipped for their runs, as :attr:`RetrainResult.not_enough_runs`, and why each
    whole-job model is refit). ``jobs``: only these jobs, as :func:`retrain` limits them."""
    check_kind(kind)
    st = store_io.open(store)
    RC.check_writable(st)  # a --dry-run says what the retrain would refuse
    runs = st.runs()  # read once for both questions
    jobs = check_jobs(jobs, runs["job"], f"store {st.path!r}")
    prev, failures = R.read_registry_state(st)
    state = _prev_state(prev, failures, R.present_artifacts(st))
    fps = _only(_local_fingerprints(runs), jobs)
    judged = _plan(state, fps, force, kind, stage_models)
    stale = _stale(judged)
    stage_todo = [j for j, kinds in stale.items() if R.KIND_STAGE in kinds]
    staged = _staged(st, runs, stage_todo) if stage_todo else []
    skipped = sorted(_label(job, k) for job, (_refit, failing) in judged.items() for k in failing
                     if _skipped_error(_fit_error(failures[(job, k)].get("error"),
                                                  failures[(job, k)].get("error_type"))[0]))
    whole = [j for j, kinds in stale.items() if R.KIND_RUNTIME in kinds]
    reasons = refit_reasons(_prev_state(prev, failures), fps, whole, kind, state)
    return {"to_refit": sorted(stale), "jobs": len(judged), "stage_jobs": staged,
            "path": choose_path(len(stale), kind, len(staged)), "still_failing": _still_failing(judged),
            "still_skipped": skipped, "refit_reasons": reasons}


def result_if_current(store: Any = None, *, force: bool = False, kind: str = "auto", stage_models: bool = True,
                      jobs: Iterable[str] | None = None, fit_path: str = "spark",
                      master: str | None = None) -> RetrainResult | None:
    """The result of a retrain that finds nothing to refit (0 refit, every job unchanged or still
    failing on the runs its fit failed on, the current snapshot), from the pyarrow plan
    ``--dry-run`` makes; None when some job needs a refit. The Spark path asks first: starting a
    JVM and shipping every job to a worker only to find each unchanged took 57 s on 3 jobs
    (``local[2]``), where this read takes under a second. ``spark_started`` is False."""
    t0 = time.perf_counter()
    check_kind(kind)
    st = R._open(store)  # the Spark path passes the Store it opened
    RC.check_writable(st)  # jobs/retrain.py asks this first: before its session starts
    runs = st.runs()
    # here too: jobs/retrain.py asks this first, of a remote store as well, and a job without
    # runs would otherwise be "0 of 0 jobs, nothing to refit", exit 0
    jobs = check_jobs(jobs, runs["job"], f"store {st.path!r}")
    fps = _only(_local_fingerprints(runs), jobs)
    prev, failures = R.read_registry_state(st)
    judged = _plan(_prev_state(prev, failures, R.present_artifacts(st)), fps, force, kind, stage_models)
    if _stale(judged):
        return None
    result = RetrainResult(retrain_id=R.new_retrain_id(), fit_path=fit_path, n_jobs=len(fps), master=master)
    # commits nothing: names the current snapshot, as a retrain does
    _commit(st, prev, (o for job, (refit, failing) in judged.items() for o in _not_refit(job, refit, failing)),
            result, None, failures=failures)
    result.seconds = time.perf_counter() - t0
    return result


def crossover_stage_jobs(kind: str = "auto") -> int:
    """The crossover in jobs when every job also gets a stage-level model (see :func:`choose_path`)."""
    n = crossover_jobs(kind)
    if CROSSOVER_ENV in os.environ or n <= 0:
        return n
    return math.ceil(n * SPARK_STARTUP_S / (SPARK_STARTUP_S + STAGE_FIT_SAVING_S * n))


def jobs_with_stages(store: Any, jobs: Iterable[str]) -> list[str]:
    """The ``jobs`` whose committed runs have stage rows (they get stage-level models)."""
    st = store_io.open(store)
    return _staged(st, st.runs(), jobs)


def _staged(st: Any, runs: pd.DataFrame, jobs: Iterable[str]) -> list[str]:
    """The ``jobs`` whose stage model a retrain would fit, as :func:`~sparkpredict.fitting.fit_stage_group`
    judges: stage rows of a run the fit uses (finished, with a wall time: ``runs_table``), and an
    input size among those runs. A job whose only runs with stages failed was counted, and the
    count chooses the path."""
    from .features.runs import runs_table

    want = set(jobs)
    mine = runs[runs["job"].isin(want) & runs["run_id"].notna()]
    if mine.empty:
        return []
    valid = runs_table(mine)
    with_stages = set(st.read("stages", columns=["run_id"])["run_id"])
    sized = set(valid.loc[valid["input_bytes"].astype(float) > 0, "job"].astype(str))
    return sorted({str(j) for j, r in zip(valid["job"], valid["run_id"]) if r in with_stages and str(j) in sized})


def retrain(store: Any = None, *, use_spark: bool | None = None, master: str | None = None,
            force: bool = False, kind: str = "auto", random_state: int = 0, spark: Any = None,
            stage_models: bool = True, on_artifact: Callable[[int], None] | None = None,
            spark_logs: bool = False, jobs: Iterable[str] | None = None) -> RetrainResult:
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
        Refit every job (every one of ``jobs``), changed or not.
    kind : str
        Model kind of every fit (``auto`` by default; see docs/models.md). Jobs registered with
        another kind are refit.
    random_state : int
        Seed passed to every fit (fits are deterministic).
    spark : SparkSession, optional
        Use this session for the Spark path instead of starting one.
    stage_models : bool
        Also fit each refit job's stage-level model (a random forest per stage signature,
        :class:`sparkpredict.models.stages.StageRuntimeModel`) when its runs have stage rows.
    on_artifact : callable, optional
        Test hook, called with the number of artifacts written after each one; an exception it
        raises aborts the retrain before the registry commit (the previous registry stays current).
    spark_logs : bool
        Keep Spark's own INFO/WARN lines on stderr when the Spark path starts its session
        (default: Spark's errors only, unless a log4j configuration of your own is set).
    jobs : list of str, optional
        Judge and refit only these jobs (a bare name is one job); the registry keeps every
        other job's models as they are. With ``force``, refits just them: the fix for one
        job's damaged model artifact. A name without runs in the store raises
        :class:`~sparkpredict.errors.UnknownJobError`.

    Returns
    -------
    RetrainResult

    Examples
    --------
    >>> from sparkpredict.retrain import retrain
    >>> res = retrain("/data/sparkpredict-store")          # doctest: +SKIP
    >>> res.fit_path, len(res.refit), res.snapshot           # doctest: +SKIP
    ('local', 12, 'part-1795969911337-1795969908242-retrain-85da47e39eb6.parquet')
    """
    if master is not None and spark is None:
        check_master(master)
    chosen = use_spark is None and master is None and spark is None
    if use_spark is None:
        if master is not None or spark is not None:
            use_spark = True
        else:
            p = plan_path(store, force=force, kind=kind, stage_models=stage_models, jobs=jobs)
            use_spark = p["path"] == "spark"
            log.info("retrain: %d job(s) to refit (%d with stage models), crossover %d -> %s path",
                     len(p["to_refit"]), len(p["stage_jobs"]), crossover_jobs(kind), p["path"])
    if use_spark:
        from .retrain_spark import NoSparkFileSystem, retrain_spark

        try:
            return retrain_spark(store, spark=spark, master=master, force=force, kind=kind,
                                 random_state=random_state, stage_models=stage_models, on_artifact=on_artifact,
                                 spark_logs=spark_logs, jobs=jobs)
        except NoSparkFileSystem as exc:
            if not chosen:  # the user asked for Spark: say what it lacks
                raise
            # the faster path was ours to pick; the only one that reads this store is local
            res = retrain_local(store, force=force, kind=kind, random_state=random_state,
                                stage_models=stage_models, on_artifact=on_artifact, jobs=jobs)
            res.path_note = f"{exc.message}: the local path ran instead"
            return res
    return retrain_local(store, force=force, kind=kind, random_state=random_state, stage_models=stage_models,
                         on_artifact=on_artifact, jobs=jobs)


#: The Spark path lives in :mod:`sparkpredict.retrain_spark`; its public names stay reachable here.
_SPARK_NAMES = ("retrain_spark", "read_runs_spark", "read_committed_spark", "spark_path")


def __getattr__(name: str) -> Any:
    if name in _SPARK_NAMES:
        from . import retrain_spark as _spark

        return getattr(_spark, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CROSSOVER_JOBS",
    "RetrainResult",
    "check_kind",
    "check_master",
    "choose_path",
    "crossover_jobs",
    "crossover_stage_jobs",
    "fit_group",
    "fit_stage_group",
    "jobs_with_stages",
    "plan",
    "plan_path",
    "result_if_current",
    "retrain",
    "retrain_local",
]
