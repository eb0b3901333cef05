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
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..units import format_number, plural
from .timeline import Timeline, load_timeline

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimResult:
    """One replay. Times in seconds; ``predicted_runtime_s`` is named as ``predict`` and
    ``suggest`` name a predicted run's wall time."""

    executors: int
    cores: int
    slots: int
    predicted_runtime_s: float
    lower_bound_s: float  # no schedule beats it; not an interval's lower_s
    busy_fraction: float  # task time / (running slots x predicted runtime): how full they were
    #: the slots that ran at once: ``slots``, or fewer on a host of fewer cores (``host_cores``)
    running_slots: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def replay(tl: Timeline, executors: int, cores: int | None = None, *, task_cpus: int | None = None,
           host_cores: int | None = None, stage_times_out: np.ndarray | None = None) -> SimResult:
    """Replay ``tl`` on ``executors x cores`` task slots (list scheduling, FIFO).

    Parameters
    ----------
    tl : Timeline
        The recorded run (durations possibly scaled by a model).
    executors, cores : int
        The cluster to simulate; ``cores`` defaults to the recording's cores per executor.
    task_cpus : int, optional
        ``spark.task.cpus``: slots per executor are ``cores // task_cpus`` (default: the
        recording's, ``tl.task_cpus``).
    host_cores : int, optional
        Physical cores that *all* executors share (``local-cluster`` on one machine). Slots
        beyond them only time-share the CPUs: the replay then runs ``min(slots, host_cores //
        task_cpus)`` slots (at least 1) and first divides recorded durations by the recording's
        own oversubscription ``max(1, recorded slots x task_cpus / host_cores)``. A model of
        CPU-bound tasks; off by default.
    stage_times_out : ndarray, optional
        If given (shape ``(n_stages, 2)``), receives each stage's simulated start and end (ms).

    Returns
    -------
    SimResult
    """
    if int(executors) < 1:
        raise InputError(f"executors must be at least 1, got {executors}", "give e.g. --executors 1,2,4")
    cores = tl.cores if cores is None else int(cores)  # 0 is a mistake, not "as recorded"
    task_cpus = tl.task_cpus if task_cpus is None else int(task_cpus)
    if cores < 1 or task_cpus < 1:
        raise InputError(f"cores must be at least 1, got {cores}", "give e.g. --cores 4")
    if host_cores is not None and int(host_cores) < 1:
        raise InputError(f"host cores must be at least 1, got {host_cores}", "give e.g. --host-cores 2")
    slots = int(executors) * max(cores // task_cpus, 1)
    n = tl.n_stages
    dur, off = tl.task_duration_ms, tl.task_offsets
    run_slots = slots
    if host_cores:
        # in cores, not slots: a slot of spark.task.cpus=4 takes 4 of the host's cores (4 cores
        # ran 4 such tasks at once, 16 cores' worth)
        # the recording's own slots and task size, whatever the replay asks
        rec_slots = tl.executors * max(tl.cores // tl.task_cpus, 1)
        dur = dur / max(1.0, rec_slots * tl.task_cpus / host_cores)
        run_slots = min(slots, max(1, int(host_cores) // task_cpus))
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
    return SimResult(executors=int(executors), cores=cores, slots=slots, predicted_runtime_s=wall_ms / 1000,
                     lower_bound_s=min(lb, wall_ms) / 1000,
                     busy_fraction=total / (run_slots * wall_ms) if wall_ms > 0 else 0.0,
                     running_slots=run_slots)


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
    runtime_s: float           # recorded wall time: the runs table's runtime_s of the run
    self_check: SimResult
    self_error: float          # (replayed - recorded) / recorded at the actual executor count
    predictions: list[SimResult]
    n_tasks: int
    n_stages: int
    task_cpus: int = 1         # spark.task.cpus of the run: slots = executors x floor(cores / it)
    status: str | None = None  # the run's recorded status
    #: executors alive on average (dynamic allocation): ``actual_executors`` is the most it held
    executors_mean: float | None = None

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k not in ("self_check", "predictions")}
        d["self_check"] = self.self_check.to_dict()
        d["predictions"] = [p.to_dict() for p in self.predictions]
        return d


def check_cores_fit_a_task(cores: float, task_cpus: float, whose: str,
                           option: str = "executor_cores (--executor-cores)") -> None:
    """Refuse executors of fewer cores than one task of ``whose`` takes (``spark.task.cpus``):
    Spark never schedules a task there, and the models read them as one slot each."""
    if 1 <= cores < task_cpus:
        raise InputError(f"{plural(int(cores), 'core')} per executor cannot run a task of {whose}: each "
                         f"takes spark.task.cpus={format_number(task_cpus)} cores",
                         f"give {option} {format_number(task_cpus)} or more "
                         f"(a multiple of {format_number(task_cpus)} wastes none)")


def simulate_timeline(tl: Timeline, executors: Sequence[int], cores: int | None = None,
                      *, task_cpus: int | None = None, host_cores: int | None = None) -> SimulationReport:
    """Self-check at the recorded executor count, then replay each count in ``executors``.

    ``task_cpus`` defaults to the run's ``spark.task.cpus`` (``tl.task_cpus``)."""
    task_cpus = tl.task_cpus if task_cpus is None else int(task_cpus)
    if cores is not None:
        check_cores_fit_a_task(cores, task_cpus, f"run {tl.run_id}", "--cores")
    actual = replay(tl, tl.executors, tl.cores, task_cpus=task_cpus, host_cores=host_cores)
    rec_s = tl.recorded_wall_ms / 1000
    preds = [replay(tl, int(e), cores, task_cpus=task_cpus, host_cores=host_cores) for e in executors]
    return SimulationReport(run_id=tl.run_id, job=tl.job, actual_executors=tl.executors,
                            actual_cores=tl.cores, runtime_s=rec_s, self_check=actual,
                            self_error=(actual.predicted_runtime_s - rec_s) / rec_s if rec_s > 0 else float("nan"),
                            predictions=preds, n_tasks=tl.n_tasks, n_stages=tl.n_stages,
                            task_cpus=task_cpus, status=tl.status,
                            executors_mean=tl.executors_mean if tl.executors_mean is not None
                            and math.isfinite(tl.executors_mean) else None)


def _counts(executors: Any) -> list[int]:
    """Executor counts as positive ints (none: the self-check only), or one error naming the fix."""
    vals = [executors] if isinstance(executors, (int, np.integer, str)) else list(executors)
    try:
        counts = [int(e) for e in vals if not isinstance(e, bool) and int(e) == float(e) >= 1]
        ok = len(counts) == len(vals)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"executor counts must be whole numbers of at least 1, got {executors!r}",
                         "give e.g. --executors 1,2,4,8 (executors=[1, 2, 4, 8] in Python)")
    return counts


def simulate_run(run_id: str, executors: Sequence[int], store: Any = None, *, cores: int | None = None,
                 host_cores: int | None = None) -> SimulationReport:
    """Replay ``run_id`` from ``store`` on each executor count (its own count first, as a check).

    ``store`` is a :class:`~sparkpredict.store.io.Store` or path, default the embedded store; the
    argument order is :func:`sparkpredict.explain_run`'s.

    Examples
    --------
    >>> rep = simulate_run("app-2024...", [1, 2, 4, 8])                  # doctest: +SKIP
    >>> rep.self_error, [p.predicted_runtime_s for p in rep.predictions]   # doctest: +SKIP
    """
    counts = _counts(executors)  # before the store is read: a typo costs nothing
    return simulate_timeline(load_timeline(store, run_id), counts, cores, host_cores=host_cores)


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
