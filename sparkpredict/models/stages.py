"""Stage-level random forests with task waves (RFMS, adapted from Hadoop phases to Spark stages).

A random forest predicts each stage's **per-task time** from the bytes a task processes and
the configuration; the stage then takes ``waves x per-task time`` with
``waves = ceil(tasks / slots)``, and the job takes the longest path through the stage DAG of
those stage times plus the driver time between stages (replayed from the recorded run of the
job closest in size; that arithmetic is :mod:`sparkpredict.models.stage_plan`). Tasks of an
input stage follow the split size, so a model learnt on small inputs predicts larger ones by
counting waves.

Forests: one per stage signature (:func:`sparkpredict.features.stages.stage_signatures`) with
at least ``min_rows_per_signature`` recorded rows, else one shared forest in which the signature
is a feature. The target of a signature's forest is a **rate** by default, per-task ms per (MiB
processed + 1 MiB): a forest cannot extrapolate beyond the values it saw, and a rate keeps the
time growing with the bytes of shuffle tasks whose count is fixed by
``spark.sql.shuffle.partitions``. The shared forest of ``auto`` mode learns per-task ms: it
pools stages whose bytes per task differ by orders of magnitude, whose rates do not compare.

The model follows the whole-job contract (``fit(runs_df)``, ``predict(X)``,
``predict_interval(X, confidence)``), reading stages and tasks of the runs in ``runs_df``
(by ``run_id``) from its store.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from ..errors import (
    DegenerateDataError,
    InputError,
    ModelError,
    NotFittedError,
    UnknownJobError,
)
from ..features import stages as F
from . import simulate as sim
from .columns import check_confidence, json_float, supported_level
from .estimator import RuntimeEstimator, checked_seed, kept_on_failure
from .join_switch import join_history, nearest_of, plan_at, query_plan_warnings
from .replay import (
    WIDEN_PER_SIZE_DOUBLING,
    ReplayRuntimeModel,
    checked_query,
    head_ranges,
    head_shift_s,
    head_trends,
    nearest_run,
    size_doublings_outside,
)
from .stage_data import (
    load_tables,
    optional_float,
    sorted_rows,
)
from .stage_forest import importances, quiet_forest
from .stage_plan import QUERY_CONFIG, critical_path_ms, plan_stages, replay_plan_s

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)
_MB = 2.0**20
FEATURES = F.DATA_FEATURES + F.CONFIG_FEATURES
STAGE_FORMAT = "sparkpredict.stage_model"
#: Bumped whenever a stage model's document, or what its numbers mean, changes. 2: the shared
#: forest learns ms per task where version 1 learnt a rate (read as ms, a model of version 1
#: predicted about 2.4x too low).
STAGE_FORMAT_VERSION = 2


class StageRuntimeModel(RuntimeEstimator):
    """Per-stage random forests + task waves; predicts a job's runtime at new sizes and executors.

    Parameters
    ----------
    store : str or Store, optional
        History store holding the stages (and tasks) of the runs passed to :meth:`fit`.
    tables : dict, optional
        ``{"runs", "stages", "tasks"}`` DataFrames instead of a store (tests, event logs), and
        optionally ``"stage_scans"`` (the files each scan stage read; without it the files are
        inferred from the task counts).
    mode : {"auto", "per_signature", "shared"}
        ``auto``: a forest per signature with enough rows, the shared forest for the rest.
    target : {"rate", "time"}
        Learn per-task ms per (MiB + 1), or per-task ms directly (``rate``: the shared forest
        of ``auto`` mode learns per-task ms all the same).
    combine : {"waves", "simulate"}
        Job time from stage times: ``waves`` = critical path of ``waves x per-task time`` plus
        driver time (RFMS); ``simulate`` = replay the reference run's tasks with the predicted
        counts and per-task times (stages that overlap share the slots).
    driver_trend : bool
        Let the time from application start to the first stage follow its trend in the executor
        count over the training runs (see :class:`~sparkpredict.models.replay.ReplayRuntimeModel`).
    n_estimators, min_rows_per_signature, random_state
        Forest size, rows a signature needs for its own forest, seed (fits are deterministic).

    Attributes (after fit)
    ----------------------
    name_, n_runs_, training_range_, cv_mape_ (out-of-bag whole-job MAPE on the training runs),
    stage_table_ (training rows), feature_importances_ (shared forest, a Series),
    signature_importances_ (dict signature -> Series).
    """

    def __init__(self, *, store=None, tables: dict | None = None, mode: str = "auto",
                 target: str = "rate", combine: str = "waves", n_estimators: int = 100,
                 min_rows_per_signature: int = 8, driver_trend: bool = True, random_state: int = 0) -> None:
        self.store = store
        self.tables = tables
        self.mode = mode
        self.target = target
        self.combine = combine
        self.n_estimators = n_estimators
        self.min_rows_per_signature = min_rows_per_signature
        self.driver_trend = driver_trend
        self.random_state = random_state

    # ---- fitting ------------------------------------------------------------------------
    def fit(self, runs_df: pd.DataFrame, y=None) -> StageRuntimeModel:
        """Fit on the runs of ``runs_df`` (needs ``run_id``; stages come from the store). A fit
        that raises leaves the model as it was."""
        checked_seed(self.random_state)
        with kept_on_failure(self):
            return self._fit(runs_df)

    def _check_params(self) -> None:
        if self.mode not in ("auto", "per_signature", "shared") or self.target not in ("rate", "time") \
                or self.combine not in ("waves", "simulate"):
            raise InputError(f"unknown mode {self.mode!r}, target {self.target!r} or combine {self.combine!r}",
                             "mode: auto, per_signature or shared; target: rate or time; combine: waves or simulate")

    def _fit(self, runs_df: pd.DataFrame) -> StageRuntimeModel:
        self._check_params()
        if runs_df is None or "run_id" not in runs_df or len(runs_df) == 0:
            raise DegenerateDataError("the stage model needs runs with a run_id column",
                                      "export runs with `sparkpredict runs`, which keeps run_id")
        table = self._prepare([str(r) for r in runs_df["run_id"]])
        yv = self._target(table)
        self.shared_ = self._forest().fit(self._X(table, shared=True), self._target(table, shared=True))
        self.forests_: dict = {}
        if self.mode != "shared":
            for sig, g in table.groupby("signature"):
                if len(g) >= self.min_rows_per_signature or self.mode == "per_signature":
                    self.forests_[sig] = self._forest().fit(self._X(g), yv[g.index])
        self.feature_importances_ = importances(self.shared_, FEATURES + ["signature_code"])
        self.signature_importances_ = {s: importances(f, FEATURES) for s, f in self.forests_.items()}
        self.cv_mape_, self._oob_abs_rel = self._oob_job_errors()
        return self

    def _prepare(self, run_ids: list[str]) -> pd.DataFrame:
        """Read the runs' stages and tasks and set everything that follows from the data alone
        (training table, signatures, reference runs, driver trends); returns the training table."""
        runs, stages, tasks = load_tables(self.store, self.tables, run_ids)
        if stages is None or stages.empty:
            raise DegenerateDataError("no stage rows for these runs in the store",
                                      "record runs with the sparkpredict listener or ingest their event logs")
        # One row order whatever read the rows (a store, Spark, event logs): the forests'
        # bootstrap samples pick rows by position.
        stages = sorted_rows(stages, ["run_id", "stage_id", "stage_attempt_id"])
        tasks = None if tasks is None else sorted_rows(tasks, ["run_id", "stage_id", "stage_attempt_id",
                                                           "task_id", "attempt"])
        for cache in ("_base_cache", "_hist_cache", "_most_bpt_cache"):
            self.__dict__.pop(cache, None)
        table = F.stage_table(runs, stages, tasks)
        table = table[np.isfinite(table["task_ms"]) & (table["task_ms"] > 0)].reset_index(drop=True)
        if table.empty:
            raise DegenerateDataError("the runs' stages have no task times", "record runs with task metrics")
        runs = runs[runs["run_id"].isin(table["run_id"])]  # a reference run needs modelled stages
        self.runs_ = runs.drop_duplicates("run_id", keep="last").set_index("run_id", drop=False)
        self.stages_ = stages
        self.tasks_ = tasks
        self.signatures_ = sorted(table["signature"].unique())
        self._sig_code = {s: i for i, s in enumerate(self.signatures_)}
        table["signature_code"] = table["signature"].map(self._sig_code).astype(float)
        self.stage_table_ = table
        self._timelines: dict = {}
        self.n_runs_ = int(table["run_id"].nunique())
        ib = self.runs_["input_bytes"].astype(float)
        ex = table.groupby("run_id")["executors"].first()
        self.training_range_ = {"input_bytes": (float(ib.min()), float(ib.max())),
                                "executors": (float(ex.min()), float(ex.max()))}
        self.name_ = f"stage-forest[{self.mode},{self.target},{self.combine}]"
        self._exec = ReplayRuntimeModel._executors(self.runs_)
        first = stages.groupby("run_id")["submission_ms"].min()
        heads = {r: float(first[r] - self.runs_.loc[r, "start_ms"]) for r in self.runs_.index if r in first.index}
        self.head_slope_ms_ = head_trends(self.runs_, heads, self._exec) if self.driver_trend else {}
        measured = self.runs_.loc[list(heads)]  # the span of the runs the line was fitted on
        self.head_range_ = head_ranges(measured, self._exec)
        self.join_history_ = join_history(self.runs_, table)
        return table

    # ---- persistence --------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-safe state: parameters, training run ids and the forests' arrays (no pickle).

        The runs' stages and tasks are not copied: :meth:`from_dict` reads them again from the
        store, which holds them already (a registry artifact lives in that store)."""
        from .forest_json import forest_to_dict

        self._check()
        return {"format": STAGE_FORMAT, "version": STAGE_FORMAT_VERSION, "params": self._params(),
                "run_ids": [str(r) for r in self.runs_.index], "name": self.name_,
                "n_runs": self.n_runs_, "cv_mape": json_float(self.cv_mape_),
                "oob_abs_rel": [float(v) for v in self._oob_abs_rel],
                "shared": forest_to_dict(self.shared_),
                "forests": {sig: forest_to_dict(f) for sig, f in sorted(self.forests_.items())}}

    @classmethod
    def from_dict(cls, d: dict, *, store=None, tables: dict | None = None) -> StageRuntimeModel:
        """The model of :meth:`to_dict`, predicting with numpy only, its runs read from ``store``."""
        from .forest_json import forest_from_dict

        if d.get("format") != STAGE_FORMAT or d.get("version") != STAGE_FORMAT_VERSION:
            raise InputError(f"not a stage model of format v{STAGE_FORMAT_VERSION} (got {d.get('format')!r} "
                             f"v{d.get('version')!r})", "refit it with `sparkpredict retrain --force`")
        try:  # the document first: a damaged one is refused before the store is read
            self = cls(store=store, tables=tables, **d["params"])
            self._check_params()
            trees = self.n_estimators
            if isinstance(trees, bool) or not isinstance(trees, int) or trees < 1:
                raise ValueError(f"n_estimators is {trees!r}, not a count of trees")
            run_ids, n_runs = [str(r) for r in d["run_ids"]], int(d["n_runs"])
            shared = forest_from_dict(d["shared"], len(FEATURES) + 1, trees)
            forests = {str(sig): forest_from_dict(f, len(FEATURES), trees) for sig, f in d["forests"].items()}
            cv_mape = float("nan") if d["cv_mape"] is None else float(d["cv_mape"])
            oob_abs_rel = np.asarray(d["oob_abs_rel"], dtype=float)
            if oob_abs_rel.ndim != 1 or not np.isfinite(oob_abs_rel).all():
                raise ValueError("oob_abs_rel is not a list of finite errors")
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, InputError) as exc:
            # the right format with fields missing or mangled, as a damaged whole-job model file
            # (a node index of 1e308: numpy's int64 cast overflows)
            why = exc.message if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            raise ModelError(f"stage model is corrupt: {why}", "refit it with `sparkpredict retrain --force`") from exc
        try:
            self._prepare(run_ids)
            held = self.n_runs_
        except DegenerateDataError:
            held = 0
        if held != n_runs:
            raise DegenerateDataError(
                f"the store holds {held} of the {n_runs} runs this stage model was fitted on",
                "refit it with `sparkpredict retrain --force`")
        self.shared_, self.forests_ = shared, forests
        self.cv_mape_, self._oob_abs_rel = cv_mape, oob_abs_rel
        self._self_check()
        return self

    def _self_check(self) -> None:
        """One prediction per training job, at its first training run, must be a finite runtime:
        the forests' arrays pass their checks one by one, but a tree that routes a real row to
        a leaf nobody meant would only show here."""
        # a run that read nothing has no size to ask for (a query refuses 0 bytes): a job's
        # first run with a size, as the advice would ask
        runs = self.runs_[self.runs_["input_bytes"].astype(float) > 0]
        runs = runs if len(runs) else self.runs_
        first = runs.drop_duplicates("job") if "job" in runs else runs.iloc[:1]
        q = {"job": first["job"].to_numpy() if "job" in first else np.full(len(first), None),
             "input_bytes": first["input_bytes"].astype(float).to_numpy(),
             "executors": np.maximum(np.round(self._exec.loc[first.index].fillna(1).to_numpy(float)), 1)}
        import pandas as pd

        try:
            with np.errstate(all="ignore"):
                iv = self.predict_interval(pd.DataFrame(q), 0.9)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ModelError(f"stage model is corrupt: it cannot predict its own training runs "
                             f"({type(exc).__name__}: {exc})", "refit it with `sparkpredict retrain --force`") from exc
        point = np.asarray(iv["predicted_runtime_s"], float)
        # an upper bound of infinity is a model of too few runs to bound (predict_interval)
        if not (np.isfinite(point).all() and (point >= 0).all() and not np.isnan(iv["upper_s"]).any()):
            raise ModelError(f"stage model is corrupt: it predicts {point.tolist()} s for its own training runs",
                             "refit it with `sparkpredict retrain --force`")

    def _params(self) -> dict:
        return {k: getattr(self, k) for k in ("mode", "target", "combine", "n_estimators",
                                              "min_rows_per_signature", "driver_trend")} \
            | {"random_state": checked_seed(self.random_state)}

    def _forest(self):
        return quiet_forest(n_estimators=self.n_estimators, random_state=self.random_state,
                            oob_score=True, n_jobs=1)

    def _X(self, t: pd.DataFrame, shared: bool = False) -> np.ndarray:
        cols = FEATURES + (["signature_code"] if shared else [])
        return t[cols].to_numpy(dtype=float)

    def _denominator(self, t: pd.DataFrame, shared: bool = False) -> np.ndarray:
        """What the per-task ms are divided by to give a forest's target. In ``auto`` mode the
        shared forest, which pools the stages of few rows, learns the time itself: a rate is
        comparable within one stage only, and a tree that routed a stage of 57 MiB per task to
        a leaf of stages reading nothing gave it their ms per MiB, 67x its recorded time."""
        if self.target != "rate" or (shared and self.mode == "auto"):
            return np.ones(len(t))
        return t["bytes_in_per_task"].to_numpy(float) / _MB + 1.0

    def _target(self, t: pd.DataFrame, shared: bool = False) -> np.ndarray:
        return t["task_ms"].to_numpy(float) / self._denominator(t, shared)

    # ---- per-task time ------------------------------------------------------------------
    def _task_ms_trees(self, rows: pd.DataFrame) -> np.ndarray:
        """(n_trees, n_rows) per-task ms: each row from its signature's forest or the shared one."""
        out = np.empty((self.n_estimators, len(rows)))
        codes = rows["signature"].map(self._sig_code).astype(float).fillna(-1.0)
        rows = rows.assign(signature_code=codes.to_numpy())
        own = rows["signature"].isin(self.forests_).to_numpy()
        if (~own).any():
            pooled, grow = self._within_bytes(rows[~own])
            Xs = self._X(pooled, shared=True)
            out[:, ~own] = np.stack([t.predict(Xs) for t in self.shared_.estimators_]) * grow
        for sig, idx in rows[own].groupby("signature").groups.items():
            pos = rows.index.get_indexer(idx)
            X = self._X(rows.loc[idx])
            out[:, pos] = np.stack([t.predict(X) for t in self.forests_[sig].estimators_])
        return np.maximum(out, 0.0) * self._denominators(rows, own)

    def _within_bytes(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
        """For the shared forest of ``auto`` mode, which learns per-task ms: ``rows`` with a task
        that reads more than its signature's tasks ever did asked at the most they read (its
        bytes scaled down alike), and the factor its time grows by beyond it, at the rate of
        those tasks (ms per MiB + 1, as a signature's own forest learns). A tree predicts no
        more than the most it saw: a job of fewer runs than a signature's forest needs
        predicted 12.2 s for 40 GiB where the truth was 58.8 s (1 run of 4 GiB), as a shuffle
        stage's 200 tasks each read 10x more. Asked at its own bytes, the pooled trees sent such
        a task to the leaves of other stages that read as much."""
        ones = np.ones(len(rows))
        if self.target != "rate" or self.mode != "auto":
            return rows, ones  # the shared forest learns a rate, or the user asked for ms
        if "_most_bpt_cache" not in self.__dict__:  # once per fit, not per query
            self._most_bpt_cache = self.stage_table_.groupby("signature")["bytes_in_per_task"].max()
        hi = rows["signature"].map(self._most_bpt_cache).to_numpy(float)
        bpt = rows["bytes_in_per_task"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            beyond = np.isfinite(hi) & (bpt > hi)
            if not beyond.any():
                return rows, ones
            shrink = np.where(beyond, hi / bpt, 1.0)
            grow = np.where(beyond, (bpt / _MB + 1.0) / (hi / _MB + 1.0), 1.0)
        cols = [c for c in ("bytes_in_per_task", "bytes_out_per_task", "records_in_per_task", "bytes_in")
                if c in rows]
        return rows.assign(**{c: rows[c].to_numpy(float) * shrink for c in cols}), grow

    def _denominators(self, rows: pd.DataFrame, own: np.ndarray) -> np.ndarray:
        """Each row's :meth:`_denominator`: its signature's forest's (``own``), else the shared one's."""
        return np.where(own, self._denominator(rows), self._denominator(rows, shared=True))

    # ---- structure of a reference run ---------------------------------------------------
    def _timeline(self, run_id: str) -> sim.Timeline:
        if run_id not in self._timelines:
            tasks = self.tasks_[self.tasks_["run_id"] == run_id] if self.tasks_ is not None else None
            if tasks is None:
                import pandas as pd
                tasks = pd.DataFrame(columns=["run_id", "stage_id", "stage_attempt_id", "launch_ms",
                                              "finish_ms", "duration_ms", "executor_id"])
            self._timelines[run_id] = sim.Timeline.from_tables(
                self.runs_.loc[[run_id]], self.stages_[self.stages_["run_id"] == run_id], tasks,
                run_id, require_tasks=False, refuse_backwards=False)
        return self._timelines[run_id]

    def _reference(self, job, input_bytes: float, executors: float) -> str:
        runs = self.runs_
        if job is not None and "job" in runs:
            runs = runs[runs["job"] == job]
        elif "job" in runs and runs["job"].nunique() > 1:
            # it had answered with the nearest run of any job: sort's time for a wordcount query
            raise InputError("the query has no job column and the model knows several jobs",
                             "add a job column to the query rows")
        if runs.empty:
            raise UnknownJobError(f"no training runs of job {job!r} for the stage model",
                                  f"fit on runs of that job; known: {sorted(self.runs_['job'].dropna().unique())[:5]}")
        execs = ReplayRuntimeModel._executors(runs).fillna(1).to_numpy(float)
        near = nearest_run(runs, execs, input_bytes, executors)
        # adaptive execution switches a join's plan with the size of its smaller side: the runs
        # of the plan Spark would run at this size, where the history holds both
        plan_runs, _ = plan_at(self.join_history_, near, input_bytes)
        return nearest_of(plan_runs, runs, execs, input_bytes, executors) if plan_runs else near

    def plan_warnings(self, X: pd.DataFrame) -> list[list[str]]:
        """Per query row, what its stage plan cannot foresee: a join that adaptive execution
        will likely plan otherwise at the row's size than every recorded run did."""
        self._check()
        return query_plan_warnings(self, X)

    def stage_plan(self, job, input_bytes: float, executors: int, executor_cores: int | None = None,
                   executor_memory_mb: float | None = None, _ref: str | None = None,
                   config: dict | None = None) -> pd.DataFrame:
        """Per-stage plan for one query: the reference run's stages with the query's task counts,
        bytes per task, configuration and waves (``attrs["reference_run"]`` names the run).

        ``config`` may set configuration features of the new run (``shuffle_partitions``,
        ``max_partition_bytes``, ``default_parallelism``, ``aqe``, ``kryo``, ``memory_fraction``,
        ``shuffle_compress``); the others are the reference run's."""
        ref = _ref or self._reference(job, input_bytes, executors)
        return plan_stages(self._base_rows(ref), self._history(), ref, input_bytes, executors,
                           executor_cores, executor_memory_mb, config)

    def _base_rows(self, run_id: str) -> pd.DataFrame:
        cache = self.__dict__.setdefault("_base_cache", {})
        if run_id not in cache:
            t = self.stage_table_
            cache[run_id] = t[t["run_id"] == run_id]
        return cache[run_id]

    def _history(self) -> dict:
        if "_hist_cache" not in self.__dict__:
            self._hist_cache = {s: g for s, g in self.stage_table_.groupby("signature")}
        return self._hist_cache

    def _job_ms(self, plan: pd.DataFrame, stage_ms: np.ndarray):
        """Critical path through the reference run's stage DAG, with driver time, in ms.
        ``stage_ms`` is (stages,) or (k, stages)."""
        return critical_path_ms(self._timeline(plan.attrs["reference_run"]), plan, stage_ms)

    def _evaluate(self, X, trees: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """Point seconds per row, and (rows, trees) seconds when ``trees``."""
        import pandas as pd

        self._check()
        X = checked_query(X)
        if len(X) == 0:
            return np.zeros(0), (np.zeros((0, self.n_estimators)) if trees else None)
        plans = [self.stage_plan(q.get("job"), float(q.get("input_bytes", np.nan)), int(q["executors"]),
                                 optional_float(q.get("executor_cores")), optional_float(q.get("executor_memory_mb")),
                                 config={k: q[k] for k in QUERY_CONFIG if optional_float(q.get(k)) is not None})
                 for q in X.to_dict("records")]
        sizes = np.cumsum([0] + [len(p) for p in plans])
        allrows = pd.concat(plans, ignore_index=True)
        per_tree = self._task_ms_trees(allrows) * allrows["waves"].to_numpy(float)  # (trees, all stages)
        point = np.empty(len(plans))
        tree_s = np.empty((len(plans), self.n_estimators)) if trees else None
        waves = allrows["waves"].to_numpy(float)
        for i, plan in enumerate(plans):
            ref = plan.attrs["reference_run"]
            st = per_tree[:, sizes[i]:sizes[i + 1]]
            point[i] = self._job_ms(plan, st.mean(axis=0)) / 1000
            if tree_s is not None:
                tree_s[i] = self._job_ms(plan, st) / 1000
            if self.combine == "simulate":
                task_ms = st.mean(axis=0) / np.maximum(waves[sizes[i]:sizes[i + 1]], 1)
                sim_s = replay_plan_s(self._timeline(ref), plan, task_ms)
                if tree_s is not None:  # the trees' spread, around the simulated point
                    tree_s[i] *= sim_s / point[i] if point[i] > 0 else 1.0
                point[i] = sim_s
            job = self.runs_.loc[ref, "job"]
            shift = head_shift_s(self.head_slope_ms_.get(job, 0.0), float(plan["executors"].iloc[0]),
                                 float(self._exec.loc[ref]), self.head_range_.get(job))
            if shift:
                point[i] = max(point[i] + shift, 0.05 * point[i])
                if tree_s is not None:
                    tree_s[i] = np.maximum(tree_s[i] + shift, 0.05 * tree_s[i])
        return point, tree_s

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted runtime in seconds for each row (``job``, ``input_bytes``, ``executors``, ...)."""
        return self._evaluate(X, trees=False)[0]

    def interval_errors(self) -> int:
        """How many out-of-bag whole-job errors the interval stands on (none below 3 runs)."""
        self._check()
        return len(self._oob_abs_rel)

    def max_confidence(self) -> float:
        """The highest confidence its intervals honour, as for the other models: ``n`` errors
        support at most ``(n - 1) / (n + 1)``; none, no interval (see :meth:`predict_interval`)."""
        return supported_level(self.interval_errors())

    def predict_interval(self, X: pd.DataFrame, confidence: float = 0.9) -> dict:
        """Point prediction and an interval from the spread of the trees, widened to the
        out-of-bag relative errors of the training runs at ``confidence``, and beyond the
        recorded sizes by :data:`~.replay.WIDEN_PER_SIZE_DOUBLING` per doubling of the distance.

        Below 3 runs there is no out-of-bag error: ``lower_s`` 0 and ``upper_s`` infinity, as
        the replay gives one run. The trees' spread alone had made one run's interval no wider
        than its prediction, and 100x the recorded size's 2 % wide (the truth outside it)."""
        confidence = check_confidence(confidence)
        point, trees = self._evaluate(X, trees=True)
        assert trees is not None  # trees=True always returns the per-tree seconds
        if not len(self._oob_abs_rel):
            return {"predicted_runtime_s": point, "lower_s": np.zeros(len(point)),
                    "upper_s": np.full(len(point), np.inf)}
        a = (1 - confidence) / 2
        lo_t, hi_t = np.quantile(trees, a, axis=1), np.quantile(trees, 1 - a, axis=1)
        q = (float(np.quantile(self._oob_abs_rel, confidence))
             + WIDEN_PER_SIZE_DOUBLING * size_doublings_outside(self.training_range_, X))
        return {"predicted_runtime_s": point,
                "lower_s": np.minimum(lo_t, point * (1 - np.minimum(q, 0.95))),
                "upper_s": np.maximum(hi_t, point * (1 + q))}

    # ---- errors -------------------------------------------------------------------------
    def _oob_job_errors(self) -> tuple[float, np.ndarray]:
        """Whole-job relative errors on the training runs using out-of-bag tree predictions."""
        t = self.stage_table_
        if self.n_runs_ < 3:
            return float("nan"), np.zeros(0)
        errs = []
        oob = self._oob_task_ms()
        for run_id, g in t.groupby("run_id"):
            try:
                plan = g.copy()
                plan.attrs["reference_run"] = run_id
                pred = self._job_ms(plan, oob[g.index] * g["waves"].to_numpy(float)) / 1000
                real = float(self.runs_.loc[run_id, "wall_ms"]) / 1000
                if real > 0 and np.isfinite(pred):
                    errs.append(abs(pred - real) / real)
            except Exception as exc:  # an OOB estimate must never break a fit  # noqa: BLE001
                log.debug("oob error for %s skipped: %s", run_id, exc)
        e = np.asarray(errs)
        return (float(e.mean()) if len(e) else float("nan")), e

    def _oob_task_ms(self) -> np.ndarray:
        """Per-task ms of every training row from the trees whose bootstrap sample left it out
        (rows that were in every bag fall back to the in-sample prediction)."""
        t = self.stage_table_

        def oob(forest, pool, shared: bool) -> np.ndarray:
            full = forest.predict(self._X(pool, shared=shared))
            o = getattr(forest, "oob_prediction_", None)
            o = np.asarray(o, dtype=float).reshape(-1) if o is not None else full
            return np.where(np.isfinite(o) & (o != 0), o, full)

        rate = np.full(len(t), np.nan)
        own = t["signature"].isin(self.forests_).to_numpy()
        if (~own).any():
            rate[~own] = oob(self.shared_, t, True)[~own]
        for sig, idx in t[own].groupby("signature").groups.items():
            rate[t.index.get_indexer(idx)] = oob(self.forests_[sig], t.loc[idx], False)
        return np.maximum(rate, 0.0) * self._denominators(t, own)

    def stage_errors(self, runs_df: pd.DataFrame, use_config: bool = True) -> pd.DataFrame:
        """Per-signature Er = mean(|pred - real| / real) of stage time and of per-task time on
        the runs of ``runs_df`` (typically held out), predicting each from its size, executors
        and (``use_config``) the configuration it was submitted with, known before a run."""
        import pandas as pd

        self._check()
        runs, stages, tasks = load_tables(self.store, self.tables, [str(r) for r in runs_df["run_id"]])
        real = F.stage_table(runs, stages, tasks)
        rows = []
        for run_id, g in real.groupby("run_id"):
            r = runs[runs["run_id"] == run_id].iloc[-1]
            g0 = g.iloc[0]
            conf = {k: g0[k] for k in QUERY_CONFIG if use_config and
                    (k != "default_parallelism" or g0["parallelism_explicit"] == 1)}
            # a dynamic-allocation run's mean count: the nearest whole one, not the count below
            plan = self.stage_plan(r.get("job"), float(r["input_bytes"]), max(1, round(float(g0["executors"]))),
                                   int(g0["executor_cores"]), float(g0["executor_memory_mb"]), config=conf)
            task_ms = self._task_ms_trees(plan).mean(axis=0)
            p = plan.assign(pred_task_ms=task_ms, pred_stage_ms=task_ms * plan["waves"].to_numpy(float))
            m = g.merge(p[["signature", "pred_task_ms", "pred_stage_ms", "num_tasks"]], on="signature",
                        suffixes=("", "_pred"))
            m["run_id"] = run_id
            rows.append(m)
        if not rows:
            return pd.DataFrame(columns=["signature", "n", "er_stage", "er_task", "tasks_exact"])
        m = pd.concat(rows)
        # an error relative to a recorded 0 ms is undefined: NaN, left out of that mean alone (a
        # collect of one sub-ms task, recorded 0 ms, keeps the error of its 200 ms stage time)
        m = m[(m["stage_ms"] > 0) | (m["task_ms"] > 0)]
        real_stage, real_task = m["stage_ms"].where(m["stage_ms"] > 0), m["task_ms"].where(m["task_ms"] > 0)
        m["e_stage"] = (m["pred_stage_ms"] - real_stage).abs() / real_stage
        m["e_task"] = (m["pred_task_ms"] - real_task).abs() / real_task
        m["tasks_ok"] = m["num_tasks"] == m["num_tasks_pred"]
        return (m.groupby("signature").agg(n=("e_stage", "size"), real_stage_ms=("stage_ms", "mean"),
                                           er_stage=("e_stage", "mean"), er_task=("e_task", "mean"),
                                           tasks_exact=("tasks_ok", "mean"))
                 .reset_index().sort_values("real_stage_ms", ascending=False))

    def _check(self) -> None:
        if not hasattr(self, "shared_"):
            raise NotFittedError("the stage model is not fitted", "call fit(runs_df) first")


__all__ = ["FEATURES", "StageRuntimeModel"]
