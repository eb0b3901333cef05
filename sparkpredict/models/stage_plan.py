"""A query planned on a recorded run: its stages at the query's size and cluster, and the job
time their stage times add up to (the wave/slot arithmetic of :mod:`sparkpredict.models.stages`).

Each stage of the reference run gets the query's task count (split size, shuffle partitions,
parallelism), bytes per task, configuration and ``waves = ceil(tasks / slots)``. Stage times
then add up along the reference run's stage DAG (critical path plus driver time), or are
replayed on the query's executors x cores, where stages that overlap share the slots.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..features import stages as F
from . import simulate as sim

if TYPE_CHECKING:
    import pandas as pd

#: Configuration a query row may give (columns of X); the rest comes from the reference run.
QUERY_CONFIG = ("shuffle_partitions", "max_partition_bytes", "default_parallelism", "aqe", "kryo",
                "memory_fraction", "shuffle_compress")


def plan_stages(base: pd.DataFrame, history: dict, ref: str, input_bytes: float, executors: int,
                executor_cores: int | None = None, executor_memory_mb: float | None = None,
                config: dict | None = None) -> pd.DataFrame:
    """The reference run's stage rows ``base`` with the query's task counts, bytes per task,
    configuration and waves (``attrs["reference_run"]`` is ``ref``). ``history`` maps each
    signature to its training rows (what its task count followed)."""
    rows = base.copy()
    r0 = base.iloc[0]
    ratio = input_bytes / r0["run_input_bytes"] if r0["run_input_bytes"] > 0 and np.isfinite(input_bytes) else 1.0
    cores = float(executor_cores or r0["executor_cores"])
    # the reference run's spark.task.cpus holds for the new run: its slots as training read them
    per_task = float(r0["task_cpus"]) if "task_cpus" in r0 and np.isfinite(r0["task_cpus"]) else 1.0
    sim.check_cores_fit_a_task(cores, per_task, f"job {base.iloc[0].get('job')!r} (its run {ref})")
    conf = {"executors": float(executors), "executor_cores": cores,
            "task_slots": F.query_slots(executors, cores, per_task),
            "executor_memory_mb": float(executor_memory_mb or r0["executor_memory_mb"])}
    conf.update({k: float(v) for k, v in (config or {}).items() if k in QUERY_CONFIG})
    # spark.default.parallelism defaults to the total cores: follow the new cluster then.
    explicit_par = (base["parallelism_explicit"] == 1).to_numpy() | ("default_parallelism" in conf)
    if "default_parallelism" in conf:
        base = base.assign(default_parallelism=conf["default_parallelism"])
    par = np.where(explicit_par, base["default_parallelism"].to_numpy(float), float(executors) * cores)
    rows["num_tasks"] = np.asarray(
        [F.predict_num_tasks(history[rec["signature"]], rec, rec["bytes_in"] * ratio,
                             conf if ex else dict(conf, default_parallelism=pp))
         for rec, pp, ex in zip(base.to_dict("records"), par, explicit_par)], dtype=float)
    for col in ("bytes_in", "bytes_out", "records_in"):
        rows[col] = base[col] * ratio
    nt = rows["num_tasks"].clip(lower=1)
    rows["bytes_in_per_task"] = rows["bytes_in"] / nt
    rows["bytes_out_per_task"] = rows["bytes_out"] / nt
    rows["records_in_per_task"] = rows["records_in"] / nt
    for k, v in conf.items():
        rows[k] = v
    rows["default_parallelism"] = par
    rows["waves"] = F.waves(rows["num_tasks"], rows["task_slots"])
    rows.attrs["reference_run"] = ref
    return rows


def _positions(tl: sim.Timeline, plan: pd.DataFrame) -> np.ndarray:
    """Timeline position of each plan row (stages without a row, e.g. failed attempts, get none)."""
    pos = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(tl.stage_ids, tl.stage_attempts))}
    return np.array([pos.get((int(a), int(b)), -1) for a, b in zip(plan["stage_id"], plan["stage_attempt_id"])])


def critical_path_ms(tl: sim.Timeline, plan: pd.DataFrame, stage_ms: np.ndarray):
    """Critical path through the stage DAG of ``tl`` (the plan's reference run), with driver
    time, in ms. ``stage_ms`` is (stages,) or (k, stages)."""
    pos = _positions(tl, plan)
    ms = np.atleast_2d(stage_ms)
    rec = np.zeros((ms.shape[0], tl.n_stages))
    ok = pos >= 0
    rec[:, pos[ok]] = ms[:, ok]
    out = sim._critical_path(tl, rec)
    return float(out[0]) if np.ndim(stage_ms) == 1 else out


def replay_plan_s(tl: sim.Timeline, plan: pd.DataFrame, task_ms: np.ndarray) -> float:
    """Seconds from replaying ``tl`` (the plan's reference run) with the plan's task counts and
    per-task times (each stage keeps its recorded skew), on the plan's executors x cores."""
    pos = _positions(tl, plan)
    n_new = np.zeros(tl.n_stages, dtype=np.int64)
    want = np.zeros(tl.n_stages)
    ok = pos >= 0
    n_new[pos[ok]] = plan["num_tasks"].to_numpy(np.int64)[ok]
    want[pos[ok]] = task_ms[ok]
    durs = []
    for s in range(tl.n_stages):
        rec = tl.task_duration_ms[tl.task_offsets[s]:tl.task_offsets[s + 1]]
        shape = rec / rec.mean() if len(rec) and rec.mean() > 0 else np.ones(1)
        durs.append(np.resize(shape, int(n_new[s])) * want[s])
    offs = np.concatenate([[0], np.cumsum([len(d) for d in durs])]).astype(np.int64)
    new = replace(tl, task_duration_ms=np.concatenate(durs) if durs else np.zeros(0), task_offsets=offs)
    p0 = plan.iloc[0]
    return sim.replay(new, int(p0["executors"]), int(p0["executor_cores"])).predicted_runtime_s


__all__ = ["QUERY_CONFIG", "critical_path_ms", "plan_stages", "replay_plan_s"]
