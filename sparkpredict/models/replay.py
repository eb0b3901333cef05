"""The scheduler replay (:mod:`sparkpredict.models.simulate`) as a whole-job runtime model.

A job with a single recorded run still gets a prediction: each query replays the nearest
recorded run on the query's executors, its stages resized for the query's input size.
"""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, UnknownJobError
from .columns import REQUIRED, check_confidence, supported_level
from .estimator import RuntimeEstimator, positive_query_column
from .simulate import Timeline, check_cores_fit_a_task, replay, simulate_timeline
from .stage_data import load_tables, optional_float, query_frame

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)
#: Relative widening of an interval per doubling of the executor count and of the input size
#: away from the runs, where too few runs measure the error there (a heuristic, not a measurement).
WIDEN_PER_EXECUTOR_DOUBLING = 0.05
WIDEN_PER_SIZE_DOUBLING = 0.10


def head_trends(runs: pd.DataFrame, head_ms: dict, executors: pd.Series) -> dict:
    """Per job: slope (ms per executor) of the time from application start to the first stage,
    by least squares over its runs; jobs with a single executor count get none."""
    out = {}
    for job, g in runs.groupby("job"):
        ids = [r for r in g.index if r in head_ms]
        e = executors.loc[ids].to_numpy(float)
        h = np.array([head_ms[r] for r in ids], dtype=float)
        ok = np.isfinite(e) & np.isfinite(h)
        if ok.sum() >= 2 and np.ptp(e[ok]) > 0:
            out[job] = float(np.polyfit(e[ok], h[ok], 1)[0])
    return out


def head_ranges(runs: pd.DataFrame, executors: pd.Series) -> dict:
    """Per job: (fewest, most) executors of its runs, the span :func:`head_trends` measured."""
    e = executors.reindex(runs.index).astype(float)
    return {job: (float(np.nanmin(v)), float(np.nanmax(v)))
            for job, v in e.groupby(runs["job"]) if np.isfinite(v).any()}


def head_shift_s(slope_ms: float, executors: float, reference: float, span: tuple[float, float] | None) -> float:
    """Seconds the driver's time to the first stage moves from the reference run's count to
    ``executors``, along the fitted line but only within the counts the runs had: a line
    beyond them grew without bound (13 ms per executor measured over 1-3 executors added 13 s
    at 1000), where no run says the driver keeps slowing."""
    if not slope_ms:
        return 0.0
    lo, hi = span if span is not None else (reference, reference)
    return slope_ms / 1000 * (min(max(executors, lo), hi) - min(max(reference, lo), hi))


def nearest_run(runs: pd.DataFrame, executors_of_runs: np.ndarray, input_bytes: float, executors: float) -> str:
    """The run to replay for a query: nearest in size (log scale), then in executors; among
    repeats tied on both, the one of median wall time (the lower of two middles). The first
    stored had stood for them all: sqljoin's 47 s repeat at 64 MB on 1 executor, not its 18 s
    one, and a prediction of 85 s."""
    ib = runs["input_bytes"].astype(float).to_numpy()
    ds = np.round(np.abs(np.log(np.maximum(ib, 1)) - math.log(max(input_bytes, 1))), 6) \
        if math.isfinite(input_bytes) else np.zeros(len(runs))
    de = np.abs(executors_of_runs - executors)
    order = np.lexsort((de, ds))
    best = order[0]
    tied = order[(ds[order] == ds[best]) & (de[order] == de[best])]
    if len(tied) > 1 and "wall_ms" in runs:
        walls = runs["wall_ms"].astype(float).to_numpy()[tied]
        if np.isfinite(walls).all():
            best = tied[np.argsort(walls, kind="stable")[(len(tied) - 1) // 2]]
    return str(runs.index[best])


def size_doublings_outside(training_range: dict, X) -> np.ndarray:
    """Per query row, how many doublings its input size lies outside the recorded ones (0
    inside, or for a row asked at the reference run's size, without ``input_bytes``)."""
    lo, hi = training_range["input_bytes"]
    q = query_frame(X)
    if "input_bytes" not in q:
        return np.zeros(len(q))
    ib = q["input_bytes"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(ib > hi, np.log2(ib / hi), np.where(ib < lo, np.log2(lo / ib), 0.0))
    return np.where(np.isfinite(out), out, 0.0)


def checked_query(X) -> pd.DataFrame:
    """Query rows as a DataFrame, refused as the whole-job model refuses them when a size or
    executor count is not positive (a row without an ``input_bytes`` column is asked at the
    recorded run's size). The replay and the stage model schedule tasks on whole executors: a
    mean count (a dynamic-allocation run's 2.9) is asked at the nearest whole one, everywhere
    (2.9 had picked its reference run as 2.9 and then run on 2)."""
    X = query_frame(X)
    for c in REQUIRED:
        if c in X:
            v = positive_query_column(X, c, len(X))
            if c == "executors" and np.any(v != np.round(v)):
                whole = np.round(v)
                if np.any(whole < 1):
                    raise InputError(f"executors must be at least 1 for a model that replays tasks on "
                                     f"executors, got {float(v[whole < 1][0]):g}",
                                     "ask about 1 executor or more")
                X = X.assign(executors=whole)
    for c, (ok, what) in _SETTINGS.items():
        if c in X:
            _check_setting(X[c], c, ok, what)
    return X


def _whole_positive(v: float) -> bool:
    return v >= 1 and v == math.floor(v)


#: The settings a query may give a replay or stage model, beside its size and executor count,
#: with what each must be; an empty cell (None, NaN) is not given: the reference run's is used.
#: An infinite count overflowed int(), and 0 cores or partitions were taken as not given.
_SETTINGS = {
    "executor_cores": (_whole_positive, "a whole number of cores, 1 or more"),
    "executor_memory_mb": (lambda v: v > 0, "a positive number of MiB"),
    "shuffle_partitions": (_whole_positive, "a whole number of partitions, 1 or more"),
    "default_parallelism": (_whole_positive, "a whole number of partitions, 1 or more"),
    "max_partition_bytes": (lambda v: v >= 1, "a positive number of bytes"),
    "memory_fraction": (lambda v: 0 < v <= 1, "a fraction above 0, at most 1"),
    "aqe": (lambda v: v in (0, 1), "0 or 1"),
    "kryo": (lambda v: v in (0, 1), "0 or 1"),
    "shuffle_compress": (lambda v: v in (0, 1), "0 or 1"),
}


def _check_setting(col, name: str, ok, what: str) -> None:
    import pandas as pd

    for v in col:
        try:
            if v is None or bool(pd.isna(v)):
                continue
        except (TypeError, ValueError):  # a list in a cell: refused below
            pass
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = math.nan
        if isinstance(v, bool) and name not in ("aqe", "kryo", "shuffle_compress"):
            f = math.nan
        if not math.isfinite(f) or not ok(f):
            raise InputError(f"query column {name!r} has {v!r}; it must be {what}",
                             f"give {name} as {what}, or leave it empty for the recorded run's")


class ReplayRuntimeModel(RuntimeEstimator):
    """The replay behind the whole-job contract (``fit(runs_df)``, ``predict(X)``,
    ``predict_interval(X, confidence)``), so the advisor and ``evaluate`` can use it and a job
    with a single recorded run still gets a prediction.

    Each query replays the training run nearest in input size (then in executors) on the
    query's ``executors x executor_cores``. When the size differs, stages are resized first:
    input stages get the task count of their split size, shuffle stages keep their
    partitions, and every task's duration scales with the bytes it processes
    (``(MiB per task + 1)`` ratio, as the stage model's rate).

    Parameters
    ----------
    store : str or Store, optional
        History store with the task rows of the runs given to :meth:`fit`.
    tables : dict, optional
        ``{"runs", "stages", "tasks"}`` DataFrames instead of a store.
    scale_size : bool
        Resize stages for another input size (else replay the recorded tasks as they are).
    host_cores : int, optional
        Physical cores all executors share (``local-cluster``): see :func:`replay`.
    driver_trend : bool
        With runs of a job at several executor counts, let the time from application start to
        the first stage (executor start-up, the wait for executors) follow its least-squares
        line in the executor count (``head_slope_ms_`` per job), instead of the replayed run's.
    """

    def __init__(self, *, store=None, tables: dict | None = None, scale_size: bool = True,
                 host_cores: int | None = None, driver_trend: bool = True) -> None:
        self.store = store
        self.tables = tables
        self.scale_size = scale_size
        self.host_cores = host_cores
        self.driver_trend = driver_trend

    def fit(self, runs_df: pd.DataFrame, y=None) -> ReplayRuntimeModel:
        """Remember the runs of ``runs_df`` (by ``run_id``) that can be replayed."""
        from ..errors import DegenerateDataError
        from ..features import stages as F
        from .join_switch import join_history

        if runs_df is None or "run_id" not in runs_df or len(runs_df) == 0:
            raise DegenerateDataError("the replay model needs runs with a run_id column",
                                      "export runs with `sparkpredict runs`, which keeps run_id")
        runs, stages, tasks = load_tables(self.store, self.tables, [str(r) for r in runs_df["run_id"]])
        if tasks is None or tasks.empty:
            raise DegenerateDataError("none of these runs has task rows to replay",
                                      "record with spark.sparkpredict.tasks=true or ingest event logs")
        with_tasks = set(tasks["run_id"].unique())
        self.runs_ = runs[runs["run_id"].isin(with_tasks)].drop_duplicates("run_id", keep="last") \
            .set_index("run_id", drop=False)
        self._stages, self._tasks = stages, tasks
        self.stage_table_ = F.stage_table(self.runs_, stages, tasks)
        self.join_history_ = join_history(self.runs_, self.stage_table_)
        self._timelines: dict[str, Timeline] = {}
        self.n_runs_ = len(self.runs_)
        ex = self._executors(self.runs_)
        ib = self.runs_["input_bytes"].astype(float)
        self.training_range_ = {"input_bytes": (float(ib.min()), float(ib.max())),
                                "executors": (float(ex.min()), float(ex.max()))}
        self.name_ = "replay"
        self.self_errors_ = {r: simulate_timeline(self._timeline(r), [], host_cores=self.host_cores).self_error
                             for r in list(self.runs_.index)[:50]}
        heads = {r: self._timeline(r).head_ms for r in list(self.runs_.index)[:200]}
        self.head_slope_ms_ = head_trends(self.runs_, heads, self._executors(self.runs_)) if self.driver_trend else {}
        # the span of the runs the line was fitted on, not of every run
        measured = self.runs_.loc[list(heads)]
        self.head_range_ = head_ranges(measured, self._executors(measured))
        self.cv_mape_, self._abs_rel = self._loo_errors()
        return self

    @staticmethod
    def _executors(runs: pd.DataFrame) -> pd.Series:
        """Each run's executor count as the runs table reads it
        (:func:`~sparkpredict.features.runs.executors_and_cores`, the one reading of it): the count
        the whole-job models and the advice know the run by, so the reference run, the driver-time
        line and the interval's distance are measured in the counts a query is asked in. A run on
        ``local[N]`` without spark.executor.instances is N one-core executors there; read here as
        requested-else-held it had been 1 (the driver-executor), and a query at 1 executor replayed
        a ``local[2]`` run on one thread."""
        from ..features.runs import executors_and_cores

        return executors_and_cores(runs)[0]

    def _timeline(self, run_id: str) -> Timeline:
        if run_id not in self._timelines:
            self._timelines[run_id] = Timeline.from_tables(
                self.runs_.loc[[run_id]], self._stages[self._stages["run_id"] == run_id],
                self._tasks[self._tasks["run_id"] == run_id], run_id, refuse_backwards=False)
        return self._timelines[run_id]

    def _reference(self, job, input_bytes: float, executors: float, exclude: str | None = None) -> str:
        runs = self.runs_ if exclude is None else self.runs_.drop(index=exclude)
        if job is not None and "job" in runs:
            runs = runs[runs["job"] == job]
        elif runs["job"].nunique() > 1:
            raise InputError("the query has no job column and the model knows several jobs",
                             "add a job column to the query rows")
        if runs.empty:
            raise UnknownJobError(f"no replayable runs of job {job!r}",
                                  "fit on runs of that job recorded with task rows")
        from .join_switch import nearest_of, plan_at

        execs = self._executors(runs).to_numpy(float)
        near = nearest_run(runs, execs, input_bytes, executors)
        # the runs of the join plan adaptive execution would run at this size, where the
        # history holds both (as the stage model picks its reference run)
        plan_runs, _ = plan_at(self.join_history_, near, input_bytes)
        return nearest_of(plan_runs, runs, execs, input_bytes, executors) if plan_runs else near

    def plan_warnings(self, X) -> list[list[str]]:
        """Per query row, a join that adaptive execution will likely plan otherwise at the
        row's size than every recorded run did, which the replayed run's stages do not foresee."""
        from .join_switch import query_plan_warnings

        if not hasattr(self, "runs_"):
            from ..errors import NotFittedError
            raise NotFittedError("the replay model is not fitted", "call fit(runs_df) first")
        return query_plan_warnings(self, X)

    def _sized(self, run_id: str, input_bytes: float, executors: float, cores: float) -> Timeline:
        from ..features import stages as F

        tl = self._timeline(run_id)
        ref_bytes = float(self.runs_.loc[run_id, "input_bytes"])
        if not self.scale_size or not (ref_bytes > 0 and math.isfinite(input_bytes)):
            return tl
        if input_bytes == ref_bytes and executors == tl.executors and cores == tl.cores:
            return tl  # the recording itself: its own task counts (the self-check replays it so)
        # the same size on another cluster still splits its input by that cluster's cores: at a
        # recorded 4 GiB on 64 executors the recorded 4 x 4 cores' splits read 3.37 s, 2.17 s a
        # byte away (truth 2.25 s)
        ratio = input_bytes / ref_bytes
        t = self.stage_table_
        rows = t[t["run_id"] == run_id].set_index(["stage_id", "stage_attempt_id"])
        n_new = (tl.task_offsets[1:] - tl.task_offsets[:-1]).astype(float)
        scale = np.ones(tl.n_stages)
        slots = F.query_slots(executors, cores, tl.task_cpus)
        for i, key in enumerate(zip(tl.stage_ids.tolist(), tl.stage_attempts.tolist())):
            if key not in rows.index:
                continue
            row = rows.loc[key]
            conf = {"executors": executors, "executor_cores": cores, "task_slots": slots}
            if row["parallelism_explicit"] != 1:  # the default follows the cores
                conf["default_parallelism"] = executors * cores  # Spark's default: the total cores
            hist = t[t["signature"] == row["signature"]]
            n = F.predict_num_tasks(hist, row, row["bytes_in"] * ratio, conf)
            old_bpt = row["bytes_in"] / max(row["num_tasks"], 1) / 2**20
            new_bpt = row["bytes_in"] * ratio / max(n, 1) / 2**20
            n_new[i] = n if n_new[i] else 0
            scale[i] = (new_bpt + 1) / (old_bpt + 1)
        return tl.resized(n_new.astype(np.int64), scale)

    def _predict_one(self, job, input_bytes: float, executors: float, cores: float | None,
                     exclude: str | None = None) -> float:
        ref = self._reference(job, input_bytes, executors, exclude)
        tl = self._timeline(ref)
        c = int(cores) if cores and math.isfinite(cores) else tl.cores
        check_cores_fit_a_task(c, tl.task_cpus, f"job {self.runs_.loc[ref, 'job']!r}")
        wall = replay(self._sized(ref, input_bytes, executors, c), int(executors), c,
                      host_cores=self.host_cores).predicted_runtime_s
        job = self.runs_.loc[ref, "job"]
        e_ref = float(self._executors(self.runs_.loc[[ref]]).iloc[0])
        shift = head_shift_s(self.head_slope_ms_.get(job, 0.0), float(executors), e_ref,
                             getattr(self, "head_range_", {}).get(job))
        return max(wall + shift, wall * 0.05)

    def predict(self, X) -> np.ndarray:
        """Predicted runtime in seconds per query row (``input_bytes``, ``executors``, ...)."""

        if not hasattr(self, "runs_"):
            from ..errors import NotFittedError
            raise NotFittedError("the replay model is not fitted", "call fit(runs_df) first")
        X = checked_query(X)
        return np.array([self._predict_one(q.get("job"), float(q.get("input_bytes", np.nan)),
                                           float(q["executors"]), optional_float(q.get("executor_cores")))
                         for _, q in X.iterrows()])

    def interval_errors(self) -> int:
        """How many leave-one-run-out errors the interval stands on (none from one run)."""
        if not hasattr(self, "runs_"):
            from ..errors import NotFittedError
            raise NotFittedError("the replay model is not fitted", "call fit(runs_df) first")
        return len(self._abs_rel) if self.n_runs_ > 1 else 0

    def max_confidence(self) -> float:
        """The highest confidence its intervals honour, as for the whole-job models: ``n``
        errors support at most ``(n - 1) / (n + 1)`` (2 runs: 33 %). Without it, 2 runs' "90 %
        interval" certified deadlines, and such intervals covered 68-76 % of the job's other runs."""
        return supported_level(self.interval_errors())

    def predict_interval(self, X, confidence: float = 0.9) -> dict:
        """Point prediction and an interval from leave-one-run-out relative errors.

        A job with a single run gets ``lower_s`` 0 and ``upper_s`` infinity, the only interval
        one run supports: the replay reproduces that run (its self-check), but one run says
        nothing about how far the next one lands from it (repeats of one application on one
        cluster can differ several-fold), so no finite bound can claim ``confidence``, and none
        certifies a deadline. The same holds for every query when no run could be predicted
        from the others (no leave-one-out error at all)."""
        confidence = check_confidence(confidence)

        X = query_frame(X)
        p = self.predict(X)
        q = np.full(len(X), float(np.quantile(self._abs_rel, confidence))
                    if len(self._abs_rel) and self.n_runs_ > 1 else np.inf)
        per_job = self.runs_["job"].value_counts() if "job" in self.runs_ else None
        single = per_job is not None and bool((per_job < 2).any())
        if self.n_runs_ < 5 or single:
            ex = self._executors(self.runs_)
            for i, (_, r) in enumerate(X.iterrows()):
                ib, e = float(r.get("input_bytes", np.nan)), float(r["executors"])
                ref = self.runs_.loc[self._reference(r.get("job"), ib, e)]
                if per_job is not None and per_job.get(ref.get("job"), 0) < 2:
                    # the other jobs' errors say nothing about this job's spread
                    q[i] = np.inf
                    continue
                if self.n_runs_ >= 5:
                    continue
                # Too few runs to measure errors away from the recording: widen with the distance
                # to the replayed run (a heuristic: +5 % per doubling of executors, +10 % of size).
                de = abs(math.log2(e / max(float(ex.loc[ref.name]), 1)))
                ds = abs(math.log2(ib / float(ref["input_bytes"]))) if ib > 0 and ref["input_bytes"] > 0 else 0.0
                q[i] += WIDEN_PER_EXECUTOR_DOUBLING * de + WIDEN_PER_SIZE_DOUBLING * ds
        if self.n_runs_ >= 5:
            # the leave-one-out errors are those inside the recorded sizes: beyond them nothing
            # measured the error (at 100x the largest size a 90 % interval 3 % wide missed the truth)
            q = q + WIDEN_PER_SIZE_DOUBLING * size_doublings_outside(self.training_range_, X)
        bounded = np.isfinite(q)
        q0 = np.where(bounded, q, 0.0)  # inf * 0 would be NaN
        return {"predicted_runtime_s": p, "lower_s": np.where(bounded, p * (1 - np.minimum(q0, 0.95)), 0.0),
                "upper_s": np.where(bounded, p * (1 + q0), np.inf)}

    def _loo_errors(self) -> tuple[float, np.ndarray]:
        """Predict each training run from the others (the latest 40); one run: its self-check.
        Keeps the runs' runtime / leave-one-out prediction, most above first, in ``slow_runs_``
        (as the whole-job model keeps its out-of-fold ones): in sample, a run of several of one
        size and count is predicted by the replay of one of them, itself or another, so its ratio
        said nothing either way, and the report and ``explain --job`` read it differently."""
        from ..features.runs import executors_and_cores

        errs = []
        ratios: list[tuple[str, float]] = []
        runs = self.runs_
        self.slow_runs_ = []
        if len(runs) == 1:
            e = np.array([abs(v) for v in self.self_errors_.values()])
            return float(e.mean()), e
        # each run at its own executors and cores, read as a query would ask for it: a local[2]
        # run is 2 executors of 1 core, not of the 2 cores its one driver-executor recorded
        ex, cores = executors_and_cores(runs)
        for run_id in list(runs.index)[-40:]:  # the latest: what explain --job and the report rank
            r = runs.loc[run_id]
            others = runs.drop(index=run_id)
            if "job" in runs and not (others["job"] == r.get("job")).any():
                continue
            real = float(r["wall_ms"]) / 1000
            try:
                # on whole executors, as a query is asked (checked_query): a mean of 1.8 is 2, not 1
                pred = self._predict_one(r.get("job"), float(r["input_bytes"]), float(max(round(ex[run_id]), 1)),
                                         float(cores[run_id]), exclude=run_id)
            except Exception as exc:  # an error estimate must never break a fit  # noqa: BLE001
                log.debug("leave-one-out for %s skipped: %s", run_id, exc)
                continue
            if real > 0:
                errs.append(abs(pred - real) / real)
                if pred > 0 and float(r["input_bytes"]) > 0:  # NaN: no size to set it against
                    ratios.append((str(run_id), real / pred))
        self.slow_runs_ = sorted(ratios, key=lambda t: -t[1])
        e = np.asarray(errs)
        return (float(e.mean()) if len(e) else float("nan")), e
