"""A recorded run reduced to what the scheduler replay (:mod:`sparkpredict.models.simulate`) needs.

:class:`Timeline` holds, per stage, its tasks' durations, its parents, the stages it waited
for and the driver time before it; :meth:`Timeline.from_tables` builds it from store-schema
tables (the listener's or an ingested event log's), :func:`load_timeline` from a store. What a
replay keeps from the recording, and why, is in :mod:`sparkpredict.models.simulate`.
"""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

import numpy as np

from ..errors import InputError, ModelError, UnknownJobError
from ..features.runs import local_run_executors
from ..features.stages import run_task_cpus

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Timeline:
    """A recorded run reduced to what the scheduler replays. Times are ms from app start.

    Build with :meth:`from_tables` (store or event-log tables) or :func:`load_timeline`.
    Stage arrays are indexed by stage position ``0..n_stages-1``; tasks are grouped by stage
    (``task_offsets`` is a CSR index: stage ``s`` owns ``task_duration_ms[o[s]:o[s+1]]``).
    """

    run_id: str
    stage_ids: np.ndarray            # int, Spark stage id per position
    stage_attempts: np.ndarray       # int
    priority: np.ndarray             # int rank: FIFO order (job id, stage id)
    parents: tuple[np.ndarray, ...]  # positions of parent stages
    gate_prefix: np.ndarray          # stages (in recorded completion order) done before submission
    completion_order: np.ndarray     # positions sorted by recorded completion
    delay_ms: np.ndarray             # driver time: gates done -> stage submitted
    task_offsets: np.ndarray         # CSR offsets, len n_stages + 1
    task_duration_ms: np.ndarray     # float
    head_ms: float                   # app start -> ... (folded into delays of gate-less stages)
    tail_ms: float                   # last stage completion -> app end
    recorded_wall_ms: float
    executors: int                   # executors actually used (max alive)
    cores: int                       # cores per executor
    job: str | None = None
    task_cpus: int = 1               # spark.task.cpus: a task slot is this many cores
    status: str | None = None        # the run's status (an incomplete one ended early)
    input_bytes: float | None = None
    #: the executors alive on average over the run (dynamic allocation: fewer than ``executors``)
    executors_mean: float | None = None
    stage_meta: pd.DataFrame | None = field(default=None, compare=False, repr=False)

    @property
    def n_stages(self) -> int:
        return len(self.stage_ids)

    @property
    def n_tasks(self) -> int:
        return len(self.task_duration_ms)

    # ------------------------------------------------------------------------------------
    @classmethod
    def from_tables(cls, runs: pd.DataFrame, stages: pd.DataFrame, tasks: pd.DataFrame,
                    run_id: str | None = None, executors: pd.DataFrame | None = None,
                    *, require_tasks: bool = True, refuse_backwards: bool = True) -> Timeline:
        """Build the timeline of ``run_id`` from store-schema tables (pandas or pyarrow).

        Raises :class:`ModelError` when the run has no task rows (the listener ran with
        ``spark.sparkpredict.tasks=false``): there is nothing to replay. A run that ran no
        stage (``num_tasks`` 0) is its driver time alone, the same at every count. Task rows
        that end before they start are a :class:`ModelError` too, or with ``refuse_backwards``
        False (a model's reference run, which one clock step must not make unusable for every
        prediction of its job) a logged warning, those tasks taking no time.
        """
        runs, stages, tasks = (as_pandas(t) for t in (runs, stages, tasks))
        if run_id is None:
            if runs["run_id"].nunique() != 1:
                raise InputError("several runs in these tables; say which to replay",
                                 f"pass run_id, one of {sorted(runs['run_id'].unique())[:5]}")
            run_id = str(runs["run_id"].iloc[0])
        matches = runs[runs["run_id"] == run_id]
        if matches.empty:
            raise UnknownJobError(f"no run {run_id!r} in the store",
                                  "pass one of the store's run ids (`sparkpredict store summary` lists the latest)")
        run = matches.iloc[-1]
        st = stages[stages["run_id"] == run_id]
        tk = tasks[tasks["run_id"] == run_id]
        # a run that ran no stage at all (its num_tasks 0: the listener and ingest count every
        # task) replays as its driver time alone; "record its tasks" was no fix for it
        ran_nothing = st.empty and _ms(run.get("num_tasks"), math.nan) == 0
        if tk.empty and require_tasks and not ran_nothing:
            raise ModelError(f"run {run_id!r} has no task rows, so it cannot be replayed",
                             "record with spark.sparkpredict.tasks=true (the default) or ingest its event log")
        _refuse_negative_durations(run, tk, refuse_backwards)
        return _build(run, st, tk, executors)

    def with_durations(self, durations_ms: np.ndarray) -> Timeline:
        """Same schedule structure, other task durations (a model's scaled tasks)."""
        d = np.asarray(durations_ms, dtype=float)
        if d.shape != self.task_duration_ms.shape:
            raise InputError("durations must have one value per task",
                             f"give {self.n_tasks} durations")
        return replace(self, task_duration_ms=d)

    def resized(self, num_tasks: Sequence[int] | np.ndarray,
                scale: Sequence[float] | np.ndarray) -> Timeline:
        """Another input size: stage ``s`` gets ``num_tasks[s]`` tasks, each ``scale[s]`` times as
        long; new tasks reuse the recorded durations cyclically, so the stage's skew is kept."""
        n_new = np.maximum(np.asarray(num_tasks, dtype=np.int64), 0)
        sc = np.asarray(scale, dtype=float)
        durs, offs = [], [0]
        for s in range(self.n_stages):
            rec = self.task_duration_ms[self.task_offsets[s]:self.task_offsets[s + 1]]
            if len(rec) == 0 or n_new[s] == 0:
                d = np.zeros(0)
            else:
                d = np.resize(rec, int(n_new[s])) * sc[s]
            durs.append(d)
            offs.append(offs[-1] + len(d))
        return replace(self, task_duration_ms=np.concatenate(durs) if durs else np.zeros(0),
                       task_offsets=np.asarray(offs, dtype=np.int64))


def as_pandas(t):
    """A pandas frame of a store table read either way (pyarrow Table or pandas)."""
    return t.to_pandas() if hasattr(t, "to_pandas") and not hasattr(t, "iloc") else t


def _refuse_negative_durations(run, tk: pd.DataFrame, refuse: bool = True) -> None:
    """Refuse (or, without ``refuse``, warn of) a run whose task rows end before they start. The
    listener and ingest write finish - launch of the driver's clock: only a clock stepped back
    (ingest warns of it) or rows altered since give one; read as taking no time, they had
    replayed a run of 5.2 s in 2.2 s, with no word."""
    import pandas as pd

    def col(name: str) -> pd.Series:
        return pd.to_numeric(tk[name], errors="coerce") if name in tk else pd.Series(np.nan, index=tk.index)

    dur, launch, finish = col("duration_ms"), col("launch_ms"), col("finish_ms")
    # a finish of 0 is a task that never finished (its duration 0), not one that ended at 1970
    span = finish.where(finish > 0) - launch
    bad = (dur < 0) | (span < 0)
    n = int(bad.sum())
    if not n:
        return
    worst = float(np.fmin(dur[bad], span[bad]).min())
    run_id = str(run["run_id"])
    path = run.get("source_path")
    again = (f"its event log ({path}), intact, into a fresh store (sparkpredict ingest LOG --store "
             "NEW_FOLDER: ingest skips a run the store holds)" if isinstance(path, str) and path else
             "its event log, if Spark kept one, into a fresh store (sparkpredict ingest LOG --store NEW_FOLDER)")
    said = (f"run {run_id!r} has {n} of {len(tk)} task rows that end before they start (as low as "
            f"{worst:g} ms): the driver's clock stepped back, or its task rows were altered")
    if not refuse:
        log.warning("%s; replayed with those tasks taking no time", said)
        return
    raise ModelError(f"{said}, and a replay would count those tasks as taking no time",
                     f"replay another run of its job; if its rows were altered, restore the store's tasks "
                     f"files from a backup, or ingest {again}. `sparkpredict store edit {run_id} --exclude` "
                     "leaves the run out of training")


def _ms(v, default: float) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(f) else f


def _build(run, st: pd.DataFrame, tk: pd.DataFrame, executors_df) -> Timeline:
    import pandas as pd

    tk = tk[[c for c in ("stage_id", "stage_attempt_id", "launch_ms", "finish_ms", "duration_ms",
                         "executor_id") if c in tk]].copy()
    tk["stage_attempt_id"] = tk["stage_attempt_id"].fillna(0).astype(int)
    launch = tk["launch_ms"].astype(float)
    finish = tk["finish_ms"].astype(float)
    dur = tk["duration_ms"].astype(float).where(tk["duration_ms"].notna(), finish - launch)
    tk["_dur"] = dur.clip(lower=0).fillna(0.0)
    tk["_launch"] = launch
    tk["_finish"] = finish
    # Stage rows; task rows of attempts that have no stage row still get a node.
    st = st.copy()
    st["stage_attempt_id"] = st["stage_attempt_id"].fillna(0).astype(int)
    st = st.drop_duplicates(["stage_id", "stage_attempt_id"], keep="last")
    agg = tk.groupby(["stage_id", "stage_attempt_id"]).agg(
        _first_launch=("_launch", "min"), _last_finish=("_finish", "max")).reset_index()
    # on columns, not the index: with no stage row yet (a log cut while its first stage ran) a
    # merge on the index left stage_id both an index level and a column, and sorting failed
    st = st.merge(agg, on=["stage_id", "stage_attempt_id"], how="outer")
    st["stage_id"] = st["stage_id"].astype(int)
    sub = st["submission_ms"].astype(float).fillna(st["_first_launch"])
    comp = st["completion_ms"].astype(float).fillna(st["_last_finish"])
    # never before its own tasks; a ufunc of a Series is a Series (numpy's stubs say ndarray)
    comp = cast("pd.Series", np.fmax(comp, st["_last_finish"].astype(float)))
    start_ms = _ms(run.get("start_ms"), float(np.nanmin(np.concatenate([sub.values, launch.values, [np.inf]]))))
    sub = sub.fillna(start_ms).clip(lower=start_ms)
    comp = comp.fillna(sub)
    st["_sub"], st["_comp"] = sub.values, comp.values
    st = st.sort_values(["_sub", "stage_id", "stage_attempt_id"], kind="stable").reset_index(drop=True)
    n = len(st)
    sub_a, comp_a = st["_sub"].to_numpy(float), st["_comp"].to_numpy(float)

    # FIFO priority: Spark's FIFO pool orders task sets by job id, then stage id.
    job_ids = st["job_id"].astype(float).fillna(np.inf).to_numpy() if "job_id" in st else np.zeros(n)
    priority = np.lexsort((st["stage_attempt_id"].to_numpy(), st["stage_id"].to_numpy(), job_ids))
    rank = np.empty(n, dtype=np.int64)
    rank[priority] = np.arange(n)

    # Parents -> the latest attempt of that stage id submitted before the child.
    by_id: dict[int, list[int]] = {}
    for i, sid in enumerate(st["stage_id"].to_numpy()):
        by_id.setdefault(int(sid), []).append(i)
    parents = []
    pj = st["parent_stage_ids_json"] if "parent_stage_ids_json" in st else pd.Series([None] * n)
    for i in range(n):
        ps: list[int] = []
        raw = pj.iloc[i]
        ids = json.loads(raw) if isinstance(raw, str) and raw else []
        for pid in ids:
            cands = [j for j in by_id.get(int(pid), []) if sub_a[j] <= sub_a[i] and j != i
                     and comp_a[j] <= sub_a[i]]
            if cands:
                ps.append(cands[-1])
        # Attempt k > 0 of a stage waits for attempt k-1 (a retry follows a failure).
        same = [j for j in by_id[int(st["stage_id"].iloc[i])] if j < i]
        if same:
            ps.append(same[-1])
        parents.append(np.asarray(sorted(set(ps)), dtype=np.int64))

    # Gate: every stage that finished strictly before this one was submitted.
    order = np.lexsort((np.arange(n), comp_a))
    sorted_comp = comp_a[order]
    gate_prefix = np.searchsorted(sorted_comp, sub_a, side="left").astype(np.int64)
    gate_time = np.where(gate_prefix > 0, sorted_comp[np.maximum(gate_prefix - 1, 0)], start_ms)
    for i in range(n):
        if len(parents[i]):
            gate_time[i] = max(gate_time[i], comp_a[parents[i]].max())
    # The lag from submission to the first task launch, for as long as the recording had a
    # slot free, was not contention but overhead (scheduler, executors still starting): replay
    # it as driver time. Only that long: a stage submitted beside another (a join's two scans)
    # found slots free at its submission, then waited for the other's tasks, and the whole wait
    # read as driver time kept NDS q88's replay at 371 s on 16 executors (184 s without it).
    first = st["_first_launch"].to_numpy(float)
    rec_slots = _recorded_slots(run, tk)
    lagged = np.isfinite(first) & (first > sub_a)
    free = np.zeros(n)
    if lagged.any():
        free[lagged] = _free_slot_ms(launch.to_numpy(float), finish.to_numpy(float), rec_slots,
                                     sub_a[lagged], first[lagged])
    ready_a = sub_a + free
    delay = np.maximum(ready_a - gate_time, 0.0)

    # Tasks grouped by stage position, in recorded launch order.
    key_st = st["stage_id"].to_numpy(np.int64) * 100_000 + st["stage_attempt_id"].to_numpy(np.int64)
    key_tk = tk["stage_id"].to_numpy(np.int64) * 100_000 + tk["stage_attempt_id"].to_numpy(np.int64)
    tk["_pos"] = pd.Index(key_st).get_indexer(key_tk)
    tk = tk.sort_values(["_pos", "_launch"], kind="stable")
    counts = np.bincount(tk["_pos"].to_numpy(), minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    end_ms = _ms(run.get("end_ms"), np.nan)
    last = float(np.nanmax(np.concatenate([comp_a, finish.to_numpy(float), [start_ms]])))
    if math.isnan(end_ms):
        wall = _ms(run.get("wall_ms"), last - start_ms)
        end_ms = start_ms + wall
    end_ms = max(end_ms, last)
    execs = int(_ms(run.get("executors_max"), 0)) or int(tk["executor_id"].nunique())
    cores = int(_ms(run.get("executor_cores"), 0))
    task_cpus = run_task_cpus(run, execs, cores)
    if not cores:
        slots = int(_ms(run.get("task_slots"), 0))
        # slots, not cores: each stands for task_cpus cores
        cores = max(1, slots // max(execs, 1)) * task_cpus if slots else \
            max(1, _max_concurrency(tk) // max(execs, 1)) * task_cpus
    # one driver-executor of N threads: a sweep's E executors there were E threads, and a replay
    # at E' executors means E' of them (as the runs table and the stage model read it, from the
    # run's own settings where it has them)
    local = local_run_executors(run.get("master"), _ms(run.get("executors_requested"), execs),
                                _ms(run.get("task_slots"), execs * cores), run.get("properties_json"))
    if local is not None:
        # read from task_slots: its "cores" are already slots
        execs, cores, task_cpus = int(local[0]), int(local[1]), 1
    meta_cols = [c for c in ("stage_id", "stage_attempt_id", "name", "num_tasks", "input_bytes",
                             "shuffle_read_bytes", "parent_stage_ids_json") if c in st]
    return Timeline(
        run_id=str(run["run_id"]), stage_ids=st["stage_id"].to_numpy(np.int64),
        stage_attempts=st["stage_attempt_id"].to_numpy(np.int64), priority=rank,
        parents=tuple(parents), gate_prefix=gate_prefix, completion_order=order.astype(np.int64),
        delay_ms=delay, task_offsets=offsets, task_duration_ms=tk["_dur"].to_numpy(float),
        head_ms=float(sub_a.min() - start_ms) if n else 0.0, tail_ms=float(end_ms - last),
        recorded_wall_ms=float(end_ms - start_ms), executors=max(execs, 1), cores=cores,
        job=run.get("job"), task_cpus=task_cpus,
        status=str(run["status"]) if isinstance(run.get("status"), str) else None,
        input_bytes=_ms(run.get("input_bytes"), np.nan),
        executors_mean=None if local is not None else _ms(run.get("executors_mean"), np.nan),
        stage_meta=st[meta_cols].reset_index(drop=True))


def _recorded_slots(run, tk: pd.DataFrame) -> int:
    slots = int(_ms(run.get("task_slots"), 0))
    if not slots:
        e, c = int(_ms(run.get("executors_max"), 0)), int(_ms(run.get("executor_cores"), 0))
        slots = e * c if e and c else _max_concurrency(tk)
    return max(slots, 1)


def _free_slot_ms(launch: np.ndarray, finish: np.ndarray, slots: int, a: np.ndarray,
                  b: np.ndarray) -> np.ndarray:
    """Per interval [a, b), how long fewer than ``slots`` recorded tasks were running (ms)."""
    ok = np.isfinite(launch) & np.isfinite(finish)
    t, running = _running(launch[ok], finish[ok])
    if not len(t):
        return b - a
    # the running count from each event to the next (events at one ms: their last count)
    last = np.r_[t[1:] != t[:-1], True]
    t, running = t[last], running[last]
    span = np.diff(np.r_[t, t[-1]])
    # time with a free slot up to each event: before the first launch every slot was free
    free_until = np.r_[0.0, np.cumsum(np.where(running < slots, span, 0.0))[:-1]]

    def free_before(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(t, x, side="right") - 1
        j = np.maximum(i, 0)
        inside = free_until[j] + np.where(running[j] < slots, x - t[j], 0.0)
        return np.where(i >= 0, inside, x - t[0])  # before the first event: free, counted negative from t[0]

    return np.clip(free_before(b) - free_before(a), 0.0, b - a)


def _running(launch: np.ndarray, finish: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every task launch and finish in time order (finishes before launches at the same ms),
    and how many tasks were running after each."""
    times = np.concatenate([launch, finish])
    steps = np.concatenate([np.ones(len(launch)), -np.ones(len(finish))])
    order = np.lexsort((steps, times))
    return times[order], np.cumsum(steps[order])


def _max_concurrency(tk: pd.DataFrame) -> int:
    """Most tasks running at once in the recording (a slot count when the run row lacks one)."""
    _, running = _running(tk["_launch"].to_numpy(float), tk["_finish"].to_numpy(float))
    return int(running.max()) if len(running) else 1


def load_timeline(store, run_id: str) -> Timeline:
    """The timeline of ``run_id`` read from a store (a :class:`~sparkpredict.store.io.Store` or path)."""
    from ..store import io as store_io

    st = store if hasattr(store, "read") else store_io.open(store)
    runs = st.read("runs", run_ids=[run_id])
    if runs.empty:  # Spark's app id, as its UI shows it, for a run stored under app-...@start
        run_id = st.run_id_of(run_id)
        runs = st.read("runs", run_ids=[run_id])
    if runs.empty:
        known = list(st.read("runs", columns=["run_id"])["run_id"])[-5:]
        if not known:
            raise UnknownJobError(f"no run {run_id!r} in store {st.path}: the store holds no runs yet",
                                  "record runs first (sparkpredict submit, demo or ingest), or give the "
                                  "path of a Spark event log to replay it without a store")
        raise UnknownJobError(f"no run {run_id!r} in store {st.path}",
                              f"pass a run id from the store, e.g. {', '.join(known)}")
    return Timeline.from_tables(runs, st.read("stages", run_ids=[run_id]),
                                st.read("tasks", run_ids=[run_id]), run_id)


__all__ = ["Timeline", "load_timeline"]
