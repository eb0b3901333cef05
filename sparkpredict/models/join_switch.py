"""Which join plan adaptive execution will run at a query's size, from the plans recorded runs had.

Spark's adaptive execution re-plans a sort-merge join as a broadcast join once a side's shuffle
has run and its runtime size (the shuffle's data size) is at most
``spark.sql.adaptive.autoBroadcastJoinThreshold`` (default: ``spark.sql.autoBroadcastJoinThreshold``,
10 MiB; negative: never), ``JoinSelectionHelper.canBroadcastBySize`` on runtime statistics. The
broadcast plan has a stage more (the small side's shuffle read back and collected), and its
join stage reads one shuffle where the sort-merge join zips two. A stage plan copied from the
run nearest in size keeps that run's join: runs at 63-254 MB broadcast the dimension, and at
508 MB, where Spark kept the sort-merge join, the plan still had a broadcast and a broadcast join.

A run's build side is the smaller of the join's two map stages, by the shuffle bytes it wrote;
at another size it scales with the input, as the stage models scale bytes. The recorded bytes
are compressed, the threshold is compared with the rows' size before compression: where a job's
runs hold both plans, the runs that broadcast and those that did not bound the switch (at most
the largest broadcast side broadcasts, at least the smallest sort-merge side does not), and the
threshold decides only between them. Where they hold one plan, nothing measured the switch:
the plan is kept and a warning says Spark will likely change the join.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..features import stages as F

if TYPE_CHECKING:
    import pandas as pd

BROADCAST, SORT_MERGE = "broadcast", "sort-merge"
_DEFAULT_THRESHOLD = 10.0 * 2**20


def broadcast_threshold(run) -> float:
    """The run's adaptive broadcast threshold in bytes (negative: broadcasting is off)."""
    props = F.run_properties(run)
    for key in ("spark.sql.adaptive.autoBroadcastJoinThreshold", "spark.sql.autoBroadcastJoinThreshold"):
        v = props.get(key)
        if v is None or not str(v).strip():
            continue
        if str(v).strip().startswith("-"):
            return -1.0
        return F.spark_bytes(v, _DEFAULT_THRESHOLD)
    return _DEFAULT_THRESHOLD


def run_join(rows: pd.DataFrame) -> tuple[str, float] | None:
    """``(plan, build-side shuffle bytes)`` of one run's stage rows (a stage table's), where the
    run holds exactly one join of two shuffles: a sort-merge join (a stage that zips the shuffles
    of two map stages) or one adaptive execution made a broadcast (a stage that reads one map
    stage's whole shuffle and writes none, before a stage that reads the other map stage's)."""
    g = rows.sort_values("submission_ms", kind="stable")
    ids = [int(s) for s in g["stage_id"]]
    parents = F._computed_parents(g, ids)
    write = dict(zip(ids, g["shuffle_write_bytes"].fillna(0).astype(float)))
    read = dict(zip(ids, g["shuffle_read_bytes"].fillna(0).astype(float)))
    sub = dict(zip(ids, g["submission_ms"].astype(float)))
    comp = dict(zip(ids, g["completion_ms"].astype(float)))
    kinds = {s: F.rdd_kinds(r) for s, r in zip(ids, g["rdd_names_json"])}
    found: list[tuple[str, float]] = []
    for s in ids:
        maps = [p for p in parents[s] if write.get(p, 0) > 0]
        if read[s] <= 0:
            continue
        if any(k.startswith("ZippedPartitionsRDD") for k in kinds[s]) and len(maps) == 2:
            found.append((SORT_MERGE, min(write[p] for p in maps)))
        elif write[s] == 0 and len(maps) == 1 and "ShuffledRowRDD" in kinds[s] \
                and not any(k.startswith("Zipped") for k in kinds[s]) and read[s] == write[maps[0]]:
            p = maps[0]
            # the join after it reads the other side, whose map stage ran before the broadcast
            later = any(sub[j] >= comp[s] and any(q != p and write.get(q, 0) > 0 and sub[q] < sub[s]
                                                  for q in parents[j]) for j in ids)
            if later:
                found.append((BROADCAST, write[p]))
    return found[0] if len(found) == 1 else None


def join_history(runs: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Per run of ``runs`` (indexed by run id) whose one join :func:`run_join` recognises:
    ``plan``, ``build_bytes``, ``input_bytes``, ``threshold_bytes`` (its broadcast threshold)
    and ``aqe``; runs of adaptive execution only (without it the plan does not change at run time)."""
    import pandas as pd

    out = []
    for rid, g in table.groupby("run_id", sort=False):
        if rid not in runs.index or float(g["aqe"].iloc[0]) != 1.0:
            continue
        j = run_join(g)
        if j is None:
            continue
        r = runs.loc[rid].to_dict()
        out.append({"run_id": rid, "job": r.get("job"), "plan": j[0], "build_bytes": j[1],
                    "input_bytes": F._num(r.get("input_bytes"), np.nan), "threshold_bytes": broadcast_threshold(r)})
    cols = ["run_id", "job", "plan", "build_bytes", "input_bytes", "threshold_bytes"]
    return pd.DataFrame(out, columns=cols).set_index("run_id", drop=False)


def plan_at(history: pd.DataFrame, nearest: str, input_bytes: float) -> tuple[list[str] | None, str | None]:
    """For a query at ``input_bytes`` whose nearest run is ``nearest``: the runs of the join
    plan Spark would pick (None: keep the nearest run), and a warning where the history holds
    one plan and the query's build side crosses the threshold (None: none)."""
    if nearest not in history.index or not (math.isfinite(input_bytes) and input_bytes > 0):
        return None, None
    ref = history.loc[nearest].to_dict()
    if not ref["input_bytes"] > 0:
        return None, None
    est = ref["build_bytes"] * input_bytes / ref["input_bytes"]
    t = ref["threshold_bytes"]
    same = history[(history["job"] == ref["job"]) & (history["threshold_bytes"] == t)
                   & (history["input_bytes"] > 0)]
    bc = same[same["plan"] == BROADCAST]["build_bytes"]
    sm = same[same["plan"] == SORT_MERGE]["build_bytes"]
    if len(bc) and len(sm):
        most_bc, least_sm = float(bc.max()), float(sm.min())
        if most_bc >= least_sm:
            return None, None  # the recorded decisions disagree with one switch point
        plan = BROADCAST if est <= most_bc or (est < least_sm and est <= t) else SORT_MERGE
        return list(same[same["plan"] == plan].index), None
    if t < 0:
        return None, None
    from ..units import format_bytes

    size = f"about {format_bytes(est)} of shuffle"
    where = f"the broadcast threshold {format_bytes(t)} (spark.sql.adaptive.autoBroadcastJoinThreshold)"
    if len(bc) and est > t and est > float(bc.max()):
        return None, (f"at this size the join's smaller side writes {size}, over {where}: Spark will "
                      f"likely keep the sort-merge join, while every recorded run of {ref['job']} broadcast "
                      f"it; the stage plan follows run {nearest}'s broadcast join and does not foresee it")
    if len(sm) and est <= t and est < float(sm.min()):
        return None, (f"at this size the join's smaller side writes {size}, under {where}: Spark will "
                      f"likely broadcast it, while every recorded run of {ref['job']} kept the sort-merge "
                      f"join; the stage plan follows run {nearest}'s sort-merge join and does not foresee it")
    return None, None


def nearest_of(candidates: list[str], runs: pd.DataFrame, executors: np.ndarray,
               input_bytes: float, query_executors: float) -> str:
    """:func:`~.replay.nearest_run` among ``candidates`` (ids in ``runs``' index); among all of
    ``runs`` where none is there (a leave-one-out that left out the plan's only run)."""
    from .replay import nearest_run

    keep = runs.index.isin(candidates)
    if not keep.any():
        return nearest_run(runs, executors, input_bytes, query_executors)
    return nearest_run(runs[keep], executors[keep], input_bytes, query_executors)


def query_plan_warnings(model, X) -> list[list[str]]:
    """Per query row of ``X``, what ``model``'s recorded plan cannot foresee: a join adaptive
    execution will likely plan otherwise at the row's size than every recorded run did. For the
    models that copy a recorded run's stages (the stage forests, the replay), each having
    ``join_history_`` and ``_reference(job, input_bytes, executors)``."""
    from .replay import checked_query

    out = []
    for q in checked_query(X).to_dict("records"):
        ib = float(q.get("input_bytes", np.nan))
        ref = model._reference(q.get("job"), ib, float(q["executors"]))
        out.append([w] if (w := plan_at(model.join_history_, ref, ib)[1]) else [])
    return out
