"""What-if scheduler simulation: replay one recorded run on another number of executors.

The idea is Sparklens': a run's recorded task durations, replayed through a list scheduler
with ``E' x C`` task slots, predict the wall time on ``E'`` executors from a single run.

What the replay keeps from the recording
----------------------------------------
* **Tasks** keep their recorded durations (launch to finish, so deserialization, fetch waits
  and result sending are in), unless a model scales them (``Timeline.resized``).
* **Stage dependencies.** A stage may start only when its parents (``parent_stage_ids_json``)
  have finished *and* every stage that had finished before it was submitted in the recording
  has finished: the driver waited for those (an action's result, an AQE re-plan, a broadcast)
  before submitting it. Stages that overlapped in the recording may overlap in the replay.
* **Driver time.** The gap between a stage's gates finishing and its submission, the time
  from application start to the first stage and from the last stage to application end are
  replayed unchanged: no executor count shortens driver work.
* **Scheduling** is FIFO by (job id, stage id), the order Spark's default FIFO pool uses,
  tasks in recorded launch order, no locality or executor identity (any free slot).

Outputs: the predicted wall time and a lower bound that no schedule beats: the critical path
with one slot per task (each stage as long as its longest task), or head + total task time /
slots + tail, whichever is larger. :func:`simulate_run` always replays the executor count that
was actually used first and reports its own error there (the self-check).
"""
from __future__ import annotations

import heapq
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

import numpy as np

from ..errors import InputError, ModelError, UnknownJobError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


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
    input_bytes: float | None = None
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
                    *, require_tasks: bool = True) -> Timeline:
        """Build the timeline of ``run_id`` from store-schema tables (pandas or pyarrow).

        Raises :class:`ModelError` when the run has no task rows (the listener ran with
        ``spark.sparkpredict.tasks=false``): there is nothing to replay.
        """
        runs, stages, tasks = (_pandas(t) for t in (runs, stages, tasks))
        if run_id is None:
            if runs["run_id"].nunique() != 1:
                raise InputError("several runs in these tables; say which to replay",
                                 f"pass run_id, one of {sorted(runs['run_id'].unique())[:5]}")
            run_id = str(runs["run_id"].iloc[0])
        matches = runs[runs["run_id"] == run_id]
        if matches.empty:
            raise UnknownJobError(f"no run {run_id!r} in the store",
                                  "list runs with `sparkpredict runs` and pass one of their run_id")
        run = matches.iloc[-1]
        st = stages[stages["run_id"] == run_id]
        tk = tasks[tasks["run_id"] == run_id]
        if tk.empty and require_tasks:
            raise ModelError(f"run {run_id!r} has no task rows, so it cannot be replayed",
                             "record with spark.sparkpredict.tasks=true (the default) or ingest its event log")
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


def _pandas(t):
    return t.to_pandas() if hasattr(t, "to_pandas") and not hasattr(t, "iloc") else t


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
        _first_launch=("_launch", "min"), _last_finish=("_finish", "max"))
    st = st.merge(agg, left_on=["stage_id", "stage_attempt_id"], right_index=True, how="outer")
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
    # When the recording had free slots at submission, the lag to the first task launch was
    # not contention but overhead (scheduler, executors still starting): replay it as driver time.
    launch_sorted, finish_sorted = np.sort(launch.to_numpy()), np.sort(finish.to_numpy())
    running = (np.searchsorted(launch_sorted, sub_a, side="left")
               - np.searchsorted(finish_sorted, sub_a, side="right"))
    first = st["_first_launch"].to_numpy(float)
    rec_slots = _recorded_slots(run, tk)
    lagged = np.isfinite(first) & (running < rec_slots) & (first > sub_a)
    ready_a = np.where(lagged, first, sub_a)
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
    if not cores:
        slots = int(_ms(run.get("task_slots"), 0))
        cores = max(1, slots // max(execs, 1)) if slots else max(1, _max_concurrency(tk) // max(execs, 1))
    meta_cols = [c for c in ("stage_id", "stage_attempt_id", "name", "num_tasks", "input_bytes",
                             "shuffle_read_bytes", "parent_stage_ids_json") if c in st]
    return Timeline(
        run_id=str(run["run_id"]), stage_ids=st["stage_id"].to_numpy(np.int64),
        stage_attempts=st["stage_attempt_id"].to_numpy(np.int64), priority=rank,
        parents=tuple(parents), gate_prefix=gate_prefix, completion_order=order.astype(np.int64),
        delay_ms=delay, task_offsets=offsets, task_duration_ms=tk["_dur"].to_numpy(float),
        head_ms=float(sub_a.min() - start_ms) if n else 0.0, tail_ms=float(end_ms - last),
        recorded_wall_ms=float(end_ms - start_ms), executors=max(execs, 1), cores=cores,
        job=run.get("job"), input_bytes=_ms(run.get("input_bytes"), np.nan),
        stage_meta=st[meta_cols].reset_index(drop=True))


def _recorded_slots(run, tk: pd.DataFrame) -> int:
    slots = int(_ms(run.get("task_slots"), 0))
    if not slots:
        e, c = int(_ms(run.get("executors_max"), 0)), int(_ms(run.get("executor_cores"), 0))
        slots = e * c if e and c else _max_concurrency(tk)
    return max(slots, 1)


def _max_concurrency(tk: pd.DataFrame) -> int:
    """Most tasks running at once in the recording (a slot count when the run row lacks one)."""
    ev = np.concatenate([np.stack([tk["_launch"].to_numpy(), np.ones(len(tk))], 1),
                         np.stack([tk["_finish"].to_numpy(), -np.ones(len(tk))], 1)])
    ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]  # finishes before launches at the same ms
    return int(np.cumsum(ev[:, 1]).max()) if len(ev) else 1


@dataclass(frozen=True)
class SimResult:
    """One replay. Times in seconds."""

    executors: int
    cores: int
    slots: int
    predicted_wall_s: float
    lower_bound_s: float
    busy_fraction: float  # task time / (slots x predicted wall): how full the slots were

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def replay(tl: Timeline, executors: int, cores: int | None = None, *, task_cpus: int = 1,
           host_cores: int | None = None, stage_times_out: np.ndarray | None = None) -> SimResult:
    """Replay ``tl`` on ``executors x cores`` task slots (list scheduling, FIFO).

    Parameters
    ----------
    tl : Timeline
        The recorded run (durations possibly scaled by a model).
    executors, cores : int
        The cluster to simulate; ``cores`` defaults to the recording's cores per executor.
    task_cpus : int
        ``spark.task.cpus``: slots per executor are ``cores // task_cpus``.
    host_cores : int, optional
        Physical cores that *all* executors share (``local-cluster`` on one machine). Slots
        beyond them only time-share the CPUs: the replay then runs ``min(slots, host_cores)``
        slots and first divides recorded durations by the recording's own oversubscription
        ``max(1, recorded slots / host_cores)``. A model of CPU-bound tasks; off by default.
    stage_times_out : ndarray, optional
        If given (shape ``(n_stages, 2)``), receives each stage's simulated start and end (ms).

    Returns
    -------
    SimResult
    """
    if int(executors) < 1:
        raise InputError(f"executors must be at least 1, got {executors}", "give e.g. --executors 1,2,4")
    cores = int(cores or tl.cores)
    if cores < 1 or task_cpus < 1:
        raise InputError(f"cores must be at least 1, got {cores}", "give e.g. --cores 4")
    slots = int(executors) * max(cores // task_cpus, 1)
    n = tl.n_stages
    dur, off = tl.task_duration_ms, tl.task_offsets
    run_slots = slots
    if host_cores:
        rec_slots = tl.executors * max(tl.cores // task_cpus, 1)
        dur = dur / max(1.0, rec_slots / host_cores)
        run_slots = min(slots, int(host_cores))
    prio, gate, order, delay = tl.priority, tl.gate_prefix, tl.completion_order, tl.delay_ms

    end = np.full(n, np.nan)
    start = np.full(n, np.nan)
    # Python lists in the per-task loop: indexing them is several times faster than numpy's.
    remaining = (off[1:] - off[:-1]).tolist()
    parents_left = np.array([len(p) for p in tl.parents], dtype=np.int64)
    children: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(tl.parents):
        for p in ps:
            children[int(p)].append(i)
    # Stages waiting on the gate prefix, sorted by how long a prefix they need.
    by_gate = np.argsort(gate, kind="stable")
    gate_ptr = 0
    prefix_done = 0          # completion_order[:prefix_done] all finished
    prefix_max = 0.0         # latest simulated end among them
    gate_ok = np.zeros(n, dtype=bool)
    gate_time = np.zeros(n)
    parent_time = np.zeros(n)
    done = np.zeros(n, dtype=bool)

    events: list[tuple[float, int, int]] = []  # (time, kind 0=task end 1=stage ready, stage)
    ready: list[tuple[int, int]] = []           # (priority, stage) with tasks left to launch
    next_task = off[:-1].tolist()
    durl, offl, priol = dur.tolist(), off.tolist(), prio.tolist()
    free = run_slots
    now = 0.0
    n_done = 0

    def release_gates() -> None:
        nonlocal gate_ptr
        while gate_ptr < n and gate[by_gate[gate_ptr]] <= prefix_done:
            s = int(by_gate[gate_ptr])
            gate_ok[s] = True
            gate_time[s] = prefix_max
            gate_ptr += 1
            maybe_ready(s)

    def maybe_ready(s: int) -> None:
        if gate_ok[s] and parents_left[s] == 0 and np.isnan(start[s]):
            t = max(gate_time[s], parent_time[s]) + delay[s]
            start[s] = t
            heapq.heappush(events, (t, 1, s))

    def finish_stage(s: int, t: float) -> None:
        nonlocal prefix_done, prefix_max, n_done
        end[s] = t
        done[s] = True
        n_done += 1
        for c in children[s]:
            parents_left[c] -= 1
            parent_time[c] = max(parent_time[c], t)
            maybe_ready(c)
        advanced = False
        while prefix_done < n and done[order[prefix_done]]:
            prefix_max = max(prefix_max, end[order[prefix_done]])
            prefix_done += 1
            advanced = True
        if advanced:
            release_gates()

    release_gates()
    push, pop = heapq.heappush, heapq.heappop
    while n_done < n:
        if not events:
            # Only reachable with inconsistent recordings (a gate cycle): release the rest.
            waiting = [s for s in range(n) if np.isnan(start[s])]
            log.warning("run %s: %d stages never became ready; starting them now", tl.run_id, len(waiting))
            for s in waiting:
                start[s] = now
                push(events, (now, 1, s))
            continue
        t, kind, s = pop(events)
        now = t
        if kind == 1:
            if remaining[s] == 0:
                finish_stage(s, t)
            else:
                push(ready, (priol[s], s))
        else:
            free += 1
            left = remaining[s] - 1
            remaining[s] = left
            if left == 0:
                finish_stage(s, t)
        # Hand free slots to the highest-priority stages with tasks left.
        while free and ready:
            r = ready[0][1]
            k = next_task[r]
            stop = min(offl[r + 1], k + free)
            for j in range(k, stop):
                push(events, (now + durl[j], 0, r))
            free -= stop - k
            next_task[r] = stop
            if stop == offl[r + 1]:
                pop(ready)

    wall_ms = (float(np.nanmax(end)) if n else 0.0) + tl.tail_ms
    if stage_times_out is not None:
        stage_times_out[:, 0], stage_times_out[:, 1] = start, end
    lb = lower_bound_ms(tl if dur is tl.task_duration_ms else tl.with_durations(dur), run_slots)
    total = float(dur.sum())
    return SimResult(executors=int(executors), cores=cores, slots=slots, predicted_wall_s=wall_ms / 1000,
                     lower_bound_s=min(lb, wall_ms) / 1000,
                     busy_fraction=total / (run_slots * wall_ms) if wall_ms > 0 else 0.0)


def lower_bound_ms(tl: Timeline, slots: int) -> float:
    """No schedule on ``slots`` slots beats this: max(critical path with unlimited slots,
    head + total task time / slots + tail)."""
    n = tl.n_stages
    if n == 0:
        return tl.tail_ms
    longest = np.zeros(n)
    cnt = tl.task_offsets[1:] - tl.task_offsets[:-1]
    nz = cnt > 0
    longest[nz] = np.maximum.reduceat(tl.task_duration_ms, tl.task_offsets[:-1][nz]) if nz.any() else 0
    cp = _critical_path(tl, longest)
    work = tl.head_ms + float(tl.task_duration_ms.sum()) / slots + tl.tail_ms
    return max(cp, work)


def _critical_path(tl: Timeline, stage_ms: np.ndarray):
    """Longest gated path when stage ``s`` takes ``stage_ms[..., s]`` (driver delays included).

    ``stage_ms`` may be 1-D (one answer, a float) or 2-D ``(k, n_stages)`` (``k`` answers at once,
    e.g. one per tree of a forest).
    """
    ms = np.atleast_2d(np.asarray(stage_ms, dtype=float))
    k, n = ms.shape[0], tl.n_stages
    if n == 0:
        out = np.full(k, tl.tail_ms)
        return float(out[0]) if np.ndim(stage_ms) == 1 else out
    end = np.zeros((k, n))
    ready = np.zeros(n, dtype=bool)
    order, gate = tl.completion_order, tl.gate_prefix
    pm = np.zeros((k, n + 1))  # pm[:, j] = max end over the first j stages in completion order
    # Gates point only to stages that finished before submission, so processing in recorded
    # submission order (the stages are stored that way) sees every gate already computed.
    j_done = 0
    for s in range(n):
        g = int(gate[s])
        while j_done < g:
            o = order[j_done]
            pm[:, j_done + 1] = np.maximum(pm[:, j_done], end[:, o]) if ready[o] else pm[:, j_done]
            j_done += 1
        t = pm[:, g]
        ps = [p for p in tl.parents[s] if ready[p]]
        if ps:
            t = np.maximum(t, end[:, ps].max(axis=1))
        end[:, s] = t + tl.delay_ms[s] + ms[:, s]
        ready[s] = True
    out = end.max(axis=1) + tl.tail_ms
    return float(out[0]) if np.ndim(stage_ms) == 1 else out


@dataclass(frozen=True)
class SimulationReport:
    """A run replayed at its own executor count (self-check) and at other counts."""

    run_id: str
    job: str | None
    actual_executors: int
    actual_cores: int
    recorded_wall_s: float
    self_check: SimResult
    self_error: float          # (replayed - recorded) / recorded at the actual executor count
    predictions: list[SimResult]
    n_tasks: int
    n_stages: int

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k not in ("self_check", "predictions")}
        d["self_check"] = self.self_check.to_dict()
        d["predictions"] = [p.to_dict() for p in self.predictions]
        return d


def simulate_timeline(tl: Timeline, executors: Sequence[int], cores: int | None = None,
                      *, task_cpus: int = 1, host_cores: int | None = None) -> SimulationReport:
    """Self-check at the recorded executor count, then replay each count in ``executors``."""
    actual = replay(tl, tl.executors, tl.cores, task_cpus=task_cpus, host_cores=host_cores)
    rec_s = tl.recorded_wall_ms / 1000
    preds = [replay(tl, int(e), cores, task_cpus=task_cpus, host_cores=host_cores) for e in executors]
    return SimulationReport(run_id=tl.run_id, job=tl.job, actual_executors=tl.executors,
                            actual_cores=tl.cores, recorded_wall_s=rec_s, self_check=actual,
                            self_error=(actual.predicted_wall_s - rec_s) / rec_s if rec_s > 0 else float("nan"),
                            predictions=preds, n_tasks=tl.n_tasks, n_stages=tl.n_stages)


def load_timeline(store, run_id: str) -> Timeline:
    """The timeline of ``run_id`` read from a store (a :class:`~sparkpredict.store.io.Store` or path)."""
    from ..store import io as store_io

    st = store if hasattr(store, "read") else store_io.open(store)
    runs = st.read("runs", run_ids=[run_id])
    if runs.empty:
        known = list(st.read("runs", columns=["run_id"])["run_id"])[-5:]
        raise UnknownJobError(f"no run {run_id!r} in store {st.path}",
                              f"pass a run id from the store, e.g. {', '.join(known) or '(store is empty)'}")
    return Timeline.from_tables(runs, st.read("stages", run_ids=[run_id]),
                                st.read("tasks", run_ids=[run_id]), run_id)


def simulate_run(store, run_id: str, executors: Sequence[int], cores: int | None = None) -> SimulationReport:
    """Replay ``run_id`` from ``store`` on each executor count (its own count first, as a check).

    Examples
    --------
    >>> rep = simulate_run("~/.sparkpredict/store", "app-2024...", [1, 2, 4, 8])  # doctest: +SKIP
    >>> rep.self_error, [p.predicted_wall_s for p in rep.predictions]           # doctest: +SKIP
    """
    return simulate_timeline(load_timeline(store, run_id), executors, cores)


__all__ = [
    "SimResult",
    "SimulationReport",
    "Timeline",
    "load_timeline",
    "lower_bound_ms",
    "replay",
    "simulate_run",
    "simulate_timeline",
]
