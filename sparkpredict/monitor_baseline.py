"""Which of its job's runs a run is compared with, for the slowdown monitor (:mod:`.monitor`).

A job whose runs carry ``spark.sparkpredict.interference=none`` labels compares a run with the
runs so labelled. A job without labels has no declared clean runs, and any of its runs may
serve; but a run on another executor count or input size differs from this one by its setup as
well as by any interference (in tests/data/history a 1-executor sort run read +32 % against the
job's runs on 1, 2 and 3 executors of four input sizes, +3 % against the other run of its own
setup). So such a run is compared with the job's runs of its **setup**: the same executor
count, the same cores per executor, an input size within :data:`SIZE_TOLERANCE`, the same kind
of master (:func:`master_kind`: local threads, ``local-cluster`` executor JVMs, a cluster
manager) and a task count within :data:`TASKS_RATIO` (the same work cut alike: a wordcount of
4 MB ran 18 tasks with a sweep's settings, 604 (56 s) with Spark's defaults, and a local[1]
run of 3 s read -82 % against two such runs). Only where fewer than
:data:`MIN_SAME_SETUP` ran that setup are all the job's other runs its baseline, and the
explanation says so, with what differs.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .config import master_kind
from .features.interference import with_baseline
from .units import format_bytes, plural

if TYPE_CHECKING:
    import pandas as pd

#: Input sizes this close (a fraction of the run's own) count as the same. A job's time grows at
#: most about in proportion to its input over such a step, so a baseline run this much larger or
#: smaller moves the expected time by at most about 5 %: the smallest QoS threshold the monitor
#: reports, and half the noise floor of clean runs against each other (mean |D| 0.099 on the
#: bundled dataset). Sizes of one input recorded twice differ by bytes, the steps of a size
#: sweep by 2x, so any tolerance from 0.1 % to 50 % splits such histories alike.
SIZE_TOLERANCE = 0.05
#: Task counts this close (the larger at most this many times the smaller) count as the same.
#: Runs of one setup and settings ran the same count in every store the monitor was measured on
#: (tests/data/history, the bundled dataset); what may move it between them is a few tasks (AQE
#: coalescing, an input split more within :data:`SIZE_TOLERANCE`, iterations that converge
#: sooner), while other settings move it by multiples (Spark's 200 shuffle partitions against
#: a sweep's 4: 604 tasks against 18).
TASKS_RATIO = 1.5
#: Fewest other runs of the same setup a baseline is made of, else the wider one of every setup.
#: One suffices: on the bundled dataset (one setup) a baseline of a single clean run measures
#: clean runs at mean |D| 0.135 against 0.099 with all 7 others, an added error of about 4
#: points, where a baseline of other setups carries their whole difference (an executor count
#: 1 against 3 is up to 3x the run time).
MIN_SAME_SETUP = 1
#: Below this many runs the median cannot set an odd one aside, and the explanation says so.
FIRM_BASELINE = 3

LABELLED, SAME_SETUP, ANY_SETUP = "labelled", "same setup", "any setup"


@dataclass(frozen=True)
class Baseline:
    """The runs one run is compared with (never itself), and how they were chosen."""

    run_ids: frozenset[str]
    #: :data:`LABELLED` (the job's runs labelled ``none``), :data:`SAME_SETUP`, or
    #: :data:`ANY_SETUP` (too few of the run's setup: every other run of the job)
    kind: str
    #: the run's setup in words, e.g. "1 executor of 2 cores, input 8 MB ± 5%" ("" when labelled);
    #: its master kind and task count are part of the setup too (:func:`same_setup`)
    setup: str = ""
    #: other runs of the job with the run's setup (fewer than :data:`MIN_SAME_SETUP` for ANY_SETUP)
    same_setup_runs: int = 0
    #: the job's runs with an interference label, when no other run of it is labelled ``none``
    #: and the run was compared, as in a job without labels, with its runs not labelled as
    #: interfered with (:func:`sparkpredict.monitor_training.labelled_stages`); 0 otherwise
    labelled_runs: int = 0


def setups(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run_id: ``executors`` (the count asked for, a ``local[E]`` sweep's E task threads
    too, else the count that ran), ``cores``, ``input_bytes``, ``master`` (:func:`master_kind`)
    and ``tasks``, the tasks that succeeded in a succeeded run, or in one excluded from
    training without an error (NaN, None: not recorded; a run that did not succeed has no
    whole count: NaN)."""
    import pandas as pd

    from .features.runs import executors_and_cores

    def col(name: str) -> pd.Series:
        return pd.to_numeric(runs[name], errors="coerce") if name in runs else pd.Series(float("nan"), runs.index)

    # as the runs table reads them: local[N] is N one-core executors (its requested count is
    # 1, which made local[1] and local[2] runs one setup), a local[N] sweep's run of E executors
    # N/E threads each; the count asked for under dynamic allocation, not the mean held
    n, cores = executors_and_cores(runs, dynamic_mean=False)
    size = col("input_bytes").where(lambda s: s > 0)
    masters = runs["master"].map(master_kind) if "master" in runs else pd.Series(None, runs.index, dtype=object)
    # retried and killed speculative attempts are counted in num_tasks: not the job's own work
    tasks = col("num_tasks") - col("num_failed_tasks").fillna(0)
    if "status" in runs:
        # an excluded run (store edit --exclude) that ended without an error finished its work:
        # its count still tells its setup apart (a failed or killed one has an error message)
        whole = runs["status"].eq("succeeded")
        if "error_message" in runs:
            whole |= runs["status"].eq("excluded") & runs["error_message"].isna()
        tasks = tasks.where(whole)
    return pd.DataFrame({"executors": n.to_numpy(), "cores": cores.to_numpy(),
                         "input_bytes": size.to_numpy(), "master": masters.to_numpy(object),
                         "tasks": tasks.to_numpy(float)}, index=runs["run_id"].to_numpy())


_NUMERIC = ["executors", "cores", "input_bytes", "tasks"]


def _setup(table: pd.DataFrame, run_id: str) -> dict[str, float]:
    cols = [c for c in _NUMERIC if c in table]
    return dict(zip(cols, map(float, table.loc[run_id, cols].to_numpy(float))))


def _master(table: pd.DataFrame, run_id: str) -> str | None:
    kind = table.loc[run_id, "master"] if "master" in table else None
    return kind if isinstance(kind, str) else None


def _tasks_close(counts: pd.Series, tasks: float) -> pd.Series:
    """Whether each of ``counts`` is within :data:`TASKS_RATIO` of ``tasks``; an unknown count (a
    run that did not finish, a store without the column) is not told apart by it."""
    if math.isnan(tasks):
        import pandas as pd

        return pd.Series(True, index=counts.index)
    return counts.isna() | (counts.clip(lower=tasks) <= TASKS_RATIO * counts.clip(upper=tasks))


def same_setup(table: pd.DataFrame, run_id: str, candidates: Iterable[str]) -> list[str]:
    """The ``candidates`` (not ``run_id``) whose setup in ``table`` (:func:`setups`) is ``run_id``'s:
    executors, cores, master kind, an input size within :data:`SIZE_TOLERANCE` and a task count
    within :data:`TASKS_RATIO`.

    An unrecorded value counts as a value of its own: runs that both lack it differ in nothing
    known. The task count is the exception: a run that did not finish has none to compare.
    """
    me = _setup(table, run_id)
    cand = table.loc[table.index.isin([c for c in candidates if c != run_id])]

    def same(col: str) -> pd.Series:
        return cand[col].eq(me[col]) | (cand[col].isna() & math.isnan(me[col]))

    size = me["input_bytes"]
    close = same("input_bytes") | ((cand["input_bytes"] - size).abs() <= SIZE_TOLERANCE * size)
    ok = same("executors") & same("cores") & close
    if "master" in table:
        mine = _master(table, run_id)
        ok &= cand["master"].isna() if mine is None else cand["master"].eq(mine)
    if "tasks" in table:
        ok &= _tasks_close(cand["tasks"], me["tasks"])
    return cand.index[ok].tolist()


def describe(table: pd.DataFrame, run_id: str) -> str:
    """A run's setup in words, all it takes to be the same: "1 executor of 2 cores, input 8 MB ±
    5%, local, 34 tasks ± 1.5x"."""
    me = _setup(table, run_id)
    n, cores, size, tasks = me["executors"], me["cores"], me["input_bytes"], me["tasks"]
    text = "executor count unknown" if math.isnan(n) else plural(int(n), "executor")
    if not math.isnan(cores):
        text += f" of {plural(int(cores), 'core')}"
    text += (", input size unknown" if math.isnan(size)
             else f", input {format_bytes(size)} ± {SIZE_TOLERANCE:.0%}")
    master = _master(table, run_id)
    if master:
        text += f", {master}"
    if not math.isnan(tasks):
        text += f", {plural(int(tasks), 'task')} ± {TASKS_RATIO:g}x"
    return text


def choose(table: pd.DataFrame, run_id: str, clean: Iterable[str]) -> Baseline:
    """The baseline of ``run_id`` in a job without labels, whose usable runs are ``clean``."""
    others = frozenset(clean) - {run_id}
    same = same_setup(table, run_id, others) if run_id in table.index else []
    setup = describe(table, run_id) if run_id in table.index else ""
    if len(same) >= MIN_SAME_SETUP:
        return Baseline(frozenset(same), SAME_SETUP, setup, len(same))
    return Baseline(others, ANY_SETUP, setup, len(same))


def stages_against(feats: pd.DataFrame, baselines: dict[str, Baseline]) -> pd.DataFrame:
    """:func:`with_baseline` for the runs of ``baselines``, each against its own baseline runs.

    Runs whose baseline plus themselves make the same set share one call: ``with_baseline``
    leaves each run out of its own baseline, so the runs of one setup, each the others' baseline,
    are compared in one pass (a run per call would take a pass per run).
    """
    groups: dict[frozenset[str], list[str]] = {}
    for rid, b in baselines.items():
        groups.setdefault(b.run_ids | {rid} if b.run_ids else frozenset({rid}), []).append(rid)
    parts = []
    for members, rids in groups.items():
        if len(members) == 1:  # nothing to compare with: NaN, never the run against itself
            out = with_baseline(feats[feats["run_id"].isin(rids)], [])
        else:
            out = with_baseline(feats[feats["run_id"].isin(members)], list(members))
        parts.append(out[out["run_id"].isin(rids)])
    if not parts:
        return with_baseline(feats, [])
    return concat(parts)


def concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Parts of :func:`with_baseline` in one frame. A run without a baseline has its baseline
    columns as all-NaN objects (from an empty frame); as floats, so that they join the others'
    floats without pandas's FutureWarning about all-NA entries, which reached explain's users."""
    import pandas as pd

    def floats(part: pd.DataFrame) -> pd.DataFrame:
        empty = [c for c in part.columns if (c.startswith("base_") or c in ("expected_ms", "degradation"))
                 and part[c].dtype == object and part[c].isna().all()]
        return part.astype(dict.fromkeys(empty, float)) if empty else part

    return pd.concat([floats(p) for p in parts], ignore_index=True)


def other_setups(runs: pd.DataFrame, run_id: str, clean: Iterable[str]) -> str:
    """What differs between the run and ``clean``, the runs of its baseline (executor counts,
    cores, masters, input sizes beyond :data:`SIZE_TOLERANCE`, task counts beyond
    :data:`TASKS_RATIO`), in words; "" when they ran as it did."""
    table = setups(runs)
    if run_id not in table.index:
        return ""
    me, base = _setup(table, run_id), table.loc[table.index.isin(list(clean))]
    parts = []
    for col, what in (("executors", "executor counts"), ("cores", "cores per executor")):
        if not math.isnan(me[col]):  # not recorded: nothing to say
            other = sorted({int(x) for x in base[col].dropna()} - {int(me[col])})
            if other:
                parts.append(f"other {what} ({', '.join(map(str, other[:6]))}; this run: {int(me[col])})")
    mine = _master(table, run_id)
    if mine is not None:
        masters = sorted(set(base["master"].dropna()) - {mine})
        if masters:
            parts.append(f"other masters ({', '.join(masters[:6])}; this run: {mine})")
    size = me["input_bytes"]
    if not math.isnan(size) and ((base["input_bytes"].dropna() - size).abs() > SIZE_TOLERANCE * size).any():
        parts.append("other input sizes")
    tasks = me["tasks"]
    if not math.isnan(tasks):
        counts = base["tasks"].dropna()
        far = sorted({int(x) for x in counts[~_tasks_close(counts, tasks)]})
        if far:
            parts.append(f"other task counts ({', '.join(map(str, far[:6]))}; this run: {int(tasks)})")
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else ""


def notes(base: Baseline, runs: pd.DataFrame, run_id: str, job: str) -> list[str]:
    """What an explanation warns about its baseline: labels set aside for want of clean runs,
    a wider one of other setups, a thin one."""
    said = []
    if base.labelled_runs:
        n = base.labelled_runs
        said.append(f"{plural(n, 'run')} of job {job!r} {'is' if n == 1 else 'are'} labelled "
                    "spark.sparkpredict.interference, but no other run is labelled none: it is "
                    "compared with the job's runs not labelled as interfered with, as in a job "
                    "without labels. Label undisturbed runs (--conf spark.sparkpredict.interference=none) "
                    "for a baseline of runs known to be clean")
    return said + _setup_notes(base, runs, run_id, job)


def _setup_notes(base: Baseline, runs: pd.DataFrame, run_id: str, job: str) -> list[str]:
    others = base.run_ids
    mixed = other_setups(runs, run_id, others) if base.kind != SAME_SETUP else ""
    if base.kind == ANY_SETUP and others:
        few = f"only {plural(base.same_setup_runs, 'other run')}" if base.same_setup_runs else "no other run"
        return [(f"{few} of job {job!r} ran this one's setup ({base.setup}), so it is compared "
                 f"with all {len(others)} of its other runs" + (f", which ran {mixed}" if mixed else "")
                 + ": the measured degradation holds that difference as well as any interference. "
                 "Record runs of this setup, or label undisturbed ones (--conf "
                 "spark.sparkpredict.interference=none)")]
    if mixed:
        return [(f"the clean runs it is compared with ran {mixed}: the measured degradation holds "
                 "that difference as well as any interference. Label undisturbed runs of the same "
                 "setup (--conf spark.sparkpredict.interference=none) for a cleaner baseline")]
    if base.kind == SAME_SETUP and len(others) < FIRM_BASELINE:
        return [(f"its expected time comes from {plural(len(others), 'other run')} of its setup only "
                 f"({base.setup}): one odd run there moves it; more runs of this setup make it firmer")]
    return []


__all__ = ["ANY_SETUP", "FIRM_BASELINE", "LABELLED", "MIN_SAME_SETUP", "SAME_SETUP", "SIZE_TOLERANCE",
           "TASKS_RATIO", "Baseline", "choose", "concat", "describe", "master_kind", "notes", "other_setups",
           "same_setup", "setups", "stages_against"]
